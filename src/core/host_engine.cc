// The host engine: the CPU kernels and memmove, for memory the CPU touches.
#include <cstring>

#include "core/local_engine.h"
#include "kernels/reduce.h"

namespace chorus {
namespace {

class HostLocalEngine final : public LocalEngine {
 public:
  MemoryKind kind() const override { return MemoryKind::kHost; }

  Status Copy(void* dst, const void* src, size_t bytes) override {
    if (dst != src) std::memmove(dst, src, bytes);
    return Status::Ok();
  }

  Status Reduce(void* dst, const void* a, const void* b, size_t count, DataType dtype, ReduceOp op,
                const void* scale) override {
    ReduceKernel(dst, a, b, count, dtype, op);
    if (scale != nullptr) ScaleKernel(dst, dst, count, dtype, scale);
    return Status::Ok();
  }

  Status Scale(void* dst, const void* src, size_t count, DataType dtype, const void* scale) override {
    ScaleKernel(dst, src, count, dtype, scale);
    return Status::Ok();
  }
};

}  // namespace

LocalEngine& HostEngine() {
  static HostLocalEngine engine;  // stateless
  return engine;
}

}  // namespace chorus
