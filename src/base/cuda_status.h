// CUDA runtime errors as Chorus statuses, in builds with CUDA: one wording
// for every caller, and CUDA's sticky last error cleared so that it never
// surfaces in the application's next cudaGetLastError.
#pragma once

#include <cuda_runtime_api.h>

#include <string>

#include "base/status.h"

namespace chorus {

// chorusSuccess for cudaSuccess; otherwise chorusSystemError "<what>:
// <CUDA's text>", or "<what>: no CUDA driver or device (<CUDA's text>)"
// where the process has no usable driver or device.
Status CudaCheck(cudaError_t error, const std::string& what);

// A CUDA driver function fetched through the runtime
// (cudaGetDriverEntryPointByVersion, CUDA 12 ABI), so that libchorus.so
// links no libcuda. Errors: CudaCheck's with "<what>: <symbol>", or
// chorusSystemError "<what>: the CUDA driver has no <symbol>".
Status CudaDriverEntry(const char* symbol, const std::string& what, void** entry);

}  // namespace chorus
