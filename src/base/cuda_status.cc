#include "base/cuda_status.h"

namespace chorus {

Status CudaCheck(cudaError_t error, const std::string& what) {
  if (error == cudaSuccess) return Status::Ok();
  cudaGetLastError();
  if (error == cudaErrorInsufficientDriver || error == cudaErrorNoDevice) {
    return Status(chorusSystemError, StrCat(what, ": no CUDA driver or device (", cudaGetErrorString(error), ")"));
  }
  return Status(chorusSystemError, StrCat(what, ": ", cudaGetErrorString(error)));
}

Status CudaDriverEntry(const char* symbol, const std::string& what, void** entry) {
  cudaDriverEntryPointQueryResult found = cudaDriverEntryPointSymbolNotFound;
  CHORUS_RETURN_IF_ERROR(CudaCheck(cudaGetDriverEntryPointByVersion(symbol, entry, 12000, cudaEnableDefault, &found),
                                   StrCat(what, ": ", symbol)));
  if (found != cudaDriverEntryPointSuccess || *entry == nullptr) {
    return Status(chorusSystemError, StrCat(what, ": the CUDA driver has no ", symbol));
  }
  return Status::Ok();
}

}  // namespace chorus
