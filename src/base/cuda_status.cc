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

}  // namespace chorus
