// The engine table every launch uses unless a test brings its own.
#include "core/local_engine.h"

namespace chorus {

const LocalEngines& DefaultLocalEngines() {
  static const LocalEngines engines = [] {
    LocalEngines table;
    table.by_kind[static_cast<size_t>(MemoryKind::kHost)] = &HostEngine();
    table.by_kind[static_cast<size_t>(MemoryKind::kCudaHostPinned)] = &HostEngine();
    return table;
  }();
  return engines;
}

}  // namespace chorus
