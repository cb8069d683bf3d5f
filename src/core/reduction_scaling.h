// How Avg and PreMulSum run on the kernels' plain Sum, for every path that
// reduces (the schedules through the executor, the shm board): PreMulSum
// scales each rank's input by its scalar before anything is reduced, Avg
// divides the reduced result by the number of ranks where a result lands.
// The Operation carries the flags and the scalar (core/reduction_ops.h
// resolves them from the public op).
#pragma once

#include <cstddef>

#include "base/status.h"
#include "core/local_engine.h"
#include "core/operation.h"

namespace chorus {

// Whether `op`'s input must be scaled before it is reduced.
inline bool ScalesInput(const Operation& op) { return op.premultiply; }

// dst[0, count) = the input elements src[0, count), scaled for PreMulSum
// (copied as they are otherwise). dst may alias src.
void ScaledInput(const Operation& op, void* dst, const void* src, size_t count);

// Divides the `count` reduced elements at `result` by `nranks` for Avg;
// nothing for the other ops.
void FinishResult(const Operation& op, void* result, size_t count, int nranks);

// The same for memory of any kind: `src` (ScaledInputFrom; `dst` is host
// memory) or `result` (FinishResultOn) of `kind`, which the CPU may not be
// able to touch, goes through a host copy moved by that kind's engine in
// `engines`, so that scaling is the same CPU arithmetic for every kind.
Status ScaledInputFrom(const LocalEngines& engines, MemoryKind kind, const Operation& op, void* dst,
                       const void* src, size_t count);
Status FinishResultOn(const LocalEngines& engines, MemoryKind kind, const Operation& op, void* result, size_t count,
                      int nranks);

}  // namespace chorus
