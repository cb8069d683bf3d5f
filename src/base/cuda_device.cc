#include "base/cuda_device.h"

#include "chorus_build_config.h"

#if CHORUS_HAVE_CUDA
#include <cuda_runtime_api.h>
#endif

namespace chorus {

// Without a driver or a device every CUDA call fails after a call into the
// runtime; asked once, the host-only case costs one branch. Fixed for the
// process's life (a driver does not appear later), so it is a constant once
// computed, not mutable state.
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

}  // namespace chorus
