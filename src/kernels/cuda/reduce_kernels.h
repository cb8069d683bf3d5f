// CUDA reduction kernels for every (dtype, op), over the element math shared
// with the CPU kernels (kernels/element_math.h). Host functions: each enqueues
// one kernel on `stream` and returns the launch's error; none waits. Pointers
// are device memory, or host memory the device can read (pinned and mapped).
// Only in builds with CUDA (CHORUS_HAVE_CUDA).
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>

#include "base/dtype.h"

namespace chorus::cuda {

// dst[i] = a[i] op b[i]; dst may alias a and/or b exactly.
cudaError_t LaunchReduce(void* dst, const void* a, const void* b, size_t count, DataType dtype, ReduceOp op,
                         cudaStream_t stream);

// dst[i] = src[i] * *scale; `scale` is one element of `dtype` in host memory,
// read before the launch. dst may alias src exactly.
cudaError_t LaunchScale(void* dst, const void* src, size_t count, DataType dtype, const void* scale,
                        cudaStream_t stream);

// buf[i] /= divisor (Avg), as DivideKernel.
cudaError_t LaunchDivide(void* buf, size_t count, DataType dtype, int divisor, cudaStream_t stream);

}  // namespace chorus::cuda
