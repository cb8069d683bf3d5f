#include "core/pointer_kind.h"

#include "chorus_build_config.h"

#if CHORUS_HAVE_CUDA
#include <cuda_runtime_api.h>
#endif

namespace chorus {

// Without a driver or a device cudaPointerGetAttributes fails for every
// pointer, after a call into the runtime on each one; asked once, the
// host-only case costs one branch per buffer. Fixed for the process's life (a
// driver does not appear later), so it is a constant once computed, not
// mutable state.
bool CudaDevicePresent() {
#if CHORUS_HAVE_CUDA
  static const bool present = [] {
    int devices = 0;
    if (cudaGetDeviceCount(&devices) != cudaSuccess) {
      cudaGetLastError();  // not the application's error to see
      return false;
    }
    return devices > 0;
  }();
  return present;
#else
  return false;
#endif
}

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
