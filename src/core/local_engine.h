// LocalEngine: the local work of a collective (copy, reduce, scale) on
// memory of one kind. The executor gives every local step, and every chunk it
// stages for a transport, to the engine of the kind of memory involved, and
// never calls memmove or a CPU kernel on a pointer it has not classified
// (base/memory_kind.h). The host engine is the CPU kernels themselves: one
// virtual call per chunk, none per element.
//
// Rules shared by every engine:
//  - Operands are memory of the engine's kind or CPU-accessible memory (the
//    executor's host staging chunks); a reduce may mix them.
//  - Every call is complete when it returns (a GPU engine waits for its
//    stream): the executor's chunk slots are the pipeline, so a chunk is
//    copied while other chunks are on the wire.
//  - dst may alias a source exactly, never partially.
#pragma once

#include <array>
#include <cstddef>

#include "base/dtype.h"
#include "base/memory_kind.h"
#include "base/status.h"

namespace chorus {

class LocalEngine {
 public:
  virtual ~LocalEngine() = default;

  virtual MemoryKind kind() const = 0;
  // dst[0, bytes) = src[0, bytes); either side may be host memory.
  virtual Status Copy(void* dst, const void* src, size_t bytes) = 0;
  // dst[i] = a[i] op b[i], then, when `scale` (one element of `dtype`, in
  // host memory) is given, dst[i] *= *scale: Avg and PreMulSum as a factor
  // of the reduce step.
  virtual Status Reduce(void* dst, const void* a, const void* b, size_t count, DataType dtype, ReduceOp op,
                        const void* scale = nullptr) = 0;
  // dst[i] = src[i] * *scale (`scale` in host memory).
  virtual Status Scale(void* dst, const void* src, size_t count, DataType dtype, const void* scale) = 0;
};

// The CPU kernels (kernels/reduce.h) and memmove; for kHost and
// kCudaHostPinned. Stateless, shared.
LocalEngine& HostEngine();

// One engine per memory kind; null where a kind has none (a CUDA device
// buffer in a build without CUDA). The executor's default is
// DefaultLocalEngines(); tests put their fake device engine in.
struct LocalEngines {
  std::array<LocalEngine*, kNumMemoryKinds> by_kind{};

  LocalEngine* For(MemoryKind kind) const { return by_kind[static_cast<size_t>(kind)]; }
};

// The host engine for the CPU-accessible kinds, and the CUDA engine for
// kCudaDevice in a CUDA build.
const LocalEngines& DefaultLocalEngines();

}  // namespace chorus
