#include "core/pointer_kind.h"

#include "chorus_build_config.h"

#if CHORUS_HAVE_CUDA
#include <cuda_runtime_api.h>
#endif

namespace chorus {

MemoryKind ClassifyPointer(const void* pointer) {
#if CHORUS_HAVE_CUDA
  if (pointer == nullptr || !CudaDevicePresent()) return MemoryKind::kHost;
  cudaPointerAttributes attributes{};
  if (cudaPointerGetAttributes(&attributes, pointer) != cudaSuccess) {
    // A pointer the runtime rejects: plain host memory as far as Chorus can
    // tell. Clear the error so that it does not surface in the
    // application's next cudaGetLastError.
    cudaGetLastError();
    return MemoryKind::kHost;
  }
  switch (attributes.type) {
    case cudaMemoryTypeDevice:
    case cudaMemoryTypeManaged:
      return MemoryKind::kCudaDevice;
    case cudaMemoryTypeHost:
      return MemoryKind::kCudaHostPinned;
    default:
      return MemoryKind::kHost;
  }
#else
  (void)pointer;
  return MemoryKind::kHost;
#endif
}

}  // namespace chorus
