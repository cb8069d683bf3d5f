// Which kind of memory a user's pointer is (base/memory_kind.h). In a CUDA
// build it asks the CUDA runtime (cudaPointerGetAttributes): device and
// managed memory are kCudaDevice, cudaHostAlloc'ed or registered memory
// kCudaHostPinned, anything the runtime does not know kHost. Without CUDA,
// or where the runtime has no driver or device, every pointer is kHost.
#pragma once

#include "base/cuda_device.h"  // CudaDevicePresent
#include "base/memory_kind.h"

namespace chorus {

MemoryKind ClassifyPointer(const void* pointer);

}  // namespace chorus
