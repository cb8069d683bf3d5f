// Whether this process can use CUDA device memory at all, for every layer
// that decides by it (memory classification, page-locked staging, the CUDA
// IPC transport).
#pragma once

namespace chorus {

// A CUDA build, a driver and at least one device; asked of the runtime once.
bool CudaDevicePresent();

}  // namespace chorus
