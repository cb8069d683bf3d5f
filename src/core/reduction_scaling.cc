#include "core/reduction_scaling.h"

#include <cstring>
#include <vector>

#include "kernels/reduce.h"

namespace chorus {

void ScaledInput(const Operation& op, void* dst, const void* src, size_t count) {
  if (op.premultiply) {
    ScaleKernel(dst, src, count, op.args.dtype, op.scalar);
  } else if (dst != src) {
    std::memcpy(dst, src, count * DataTypeSize(op.args.dtype));
  }
}

void FinishResult(const Operation& op, void* result, size_t count, int nranks) {
  if (op.average) DivideKernel(result, count, op.args.dtype, nranks);
}

Status ScaledInputFrom(const LocalEngines& engines, MemoryKind kind, const Operation& op, void* dst,
                       const void* src, size_t count) {
  if (IsCpuAccessible(kind)) {
    ScaledInput(op, dst, src, count);
    return Status::Ok();
  }
  // The engine brings the input to the host copy, scaled there in place.
  LocalEngine* engine = engines.For(kind);
  if (engine == nullptr) return InvalidArgument("no local engine for ", MemoryKindName(kind), " memory");
  CHORUS_RETURN_IF_ERROR(engine->Copy(dst, src, count * DataTypeSize(op.args.dtype)));
  ScaledInput(op, dst, dst, count);
  return Status::Ok();
}

Status FinishResultOn(const LocalEngines& engines, MemoryKind kind, const Operation& op, void* result, size_t count,
                      int nranks) {
  if (!op.average) return Status::Ok();
  if (IsCpuAccessible(kind)) {
    FinishResult(op, result, count, nranks);
    return Status::Ok();
  }
  // Integer Avg divides (no engine call scales by 1/n exactly), so the
  // result makes a round trip to the host. A heap copy per call: device
  // results are large, and this path is not the host's latency path.
  LocalEngine* engine = engines.For(kind);
  if (engine == nullptr) return InvalidArgument("no local engine for ", MemoryKindName(kind), " memory");
  const size_t bytes = count * DataTypeSize(op.args.dtype);
  std::vector<uint8_t> host(bytes);
  CHORUS_RETURN_IF_ERROR(engine->Copy(host.data(), result, bytes));
  FinishResult(op, host.data(), count, nranks);
  return engine->Copy(result, host.data(), bytes);
}

}  // namespace chorus
