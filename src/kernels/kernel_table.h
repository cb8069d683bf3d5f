// A table of kernel function pointers per (dtype, op), built once. The
// portable table holds plain C++ loops the compiler auto-vectorises; CPU
// specific tables (AVX2, AVX-512, F16C) can later replace entries of it, and
// ActiveKernels() picks the best table for this machine once.
#pragma once

#include <cstddef>

#include "base/dtype.h"

namespace chorus::kernels {

inline constexpr int kNumReduceOps = 4;  // ReduceOp::kSum .. kMin

// dst[i] = a[i] op b[i]; dst may alias a and/or b exactly.
using ReduceFn = void (*)(void* dst, const void* a, const void* b, size_t count);
// dst[i] = src[i] * *scalar; dst may alias src exactly.
using ScaleFn = void (*)(void* dst, const void* src, size_t count, const void* scalar);
// buf[i] /= divisor.
using DivideFn = void (*)(void* buf, size_t count, int divisor);

struct KernelTable {
  const char* name;  // e.g. "portable", for logs and benchmarks
  ReduceFn reduce[chorusNumTypes][kNumReduceOps];
  ScaleFn scale[chorusNumTypes];
  DivideFn divide[chorusNumTypes];
};

// Plain C++ loops; correct everywhere.
const KernelTable& PortableKernels();

// The table used by ReduceKernel & co.: chosen once, immutable afterwards.
const KernelTable& ActiveKernels();

}  // namespace chorus::kernels
