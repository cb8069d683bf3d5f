// The engine table every launch uses unless a test brings its own.
#include "core/local_engine.h"

#include "chorus_build_config.h"

#if CHORUS_HAVE_CUDA
#include "core/cuda_engine.h"
#endif

namespace chorus {

const LocalEngines& DefaultLocalEngines() {
  static const LocalEngines engines = [] {
    LocalEngines table;
    table.by_kind[static_cast<size_t>(MemoryKind::kHost)] = &HostEngine();
    table.by_kind[static_cast<size_t>(MemoryKind::kCudaHostPinned)] = &HostEngine();
#if CHORUS_HAVE_CUDA
    table.by_kind[static_cast<size_t>(MemoryKind::kCudaDevice)] = &CudaDeviceEngine();
#endif
    return table;
  }();
  return engines;
}

}  // namespace chorus
