// CPU reduction and conversion kernels for every data type and op.
#pragma once

#include <cstddef>

#include "base/dtype.h"

namespace chorus {

// dst[i] = a[i] (op) b[i] for i < count. dst may alias a and/or b exactly
// (not partially). fp16/bf16 are computed in float32 and rounded back with
// round-to-nearest-even; integer Sum/Prod wrap (two's complement).
void ReduceKernel(void* dst, const void* a, const void* b, size_t count,
                  DataType dtype, ReduceOp op);

// dst[i] = src[i] * (*scalar) (PreMulSum). `scalar` points at one element
// of `dtype`; ints multiply exactly (wrapping), fp16/bf16 in float32 then
// round to nearest even. dst may alias src.
void ScaleKernel(void* dst, const void* src, size_t count, DataType dtype,
                 const void* scalar);

// buf[i] /= divisor (Avg). Integers divide with truncation toward zero;
// fp16/bf16 divide in float32 then round to nearest even.
void DivideKernel(void* buf, size_t count, DataType dtype, int divisor);

}  // namespace chorus
