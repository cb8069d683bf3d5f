// A table of kernel function pointers per (dtype, op), built once. The
// portable table holds plain C++ loops the compiler auto-vectorises; the x86
// tables (AVX2 + F16C + FMA, AVX-512 F/BW/VL/DQ) start as copies of it and
// replace the entries they vectorise. ActiveKernels() picks the best table
// this CPU supports, once. Every table gives bit-identical results.
#pragma once

#include <cstddef>
#include <cstdint>

#include "base/dtype.h"

namespace chorus::kernels {

inline constexpr int kNumReduceOps = 4;  // ReduceOp::kSum .. kMin

// dst[i] = a[i] op b[i]; dst may alias a and/or b exactly.
using ReduceFn = void (*)(void* dst, const void* a, const void* b, size_t count);
// dst[i] = src[i] * *scalar; dst may alias src exactly.
using ScaleFn = void (*)(void* dst, const void* src, size_t count, const void* scalar);
// buf[i] /= divisor.
using DivideFn = void (*)(void* buf, size_t count, int divisor);
// dst[i] = src[i] widened exactly from fp16 or bf16 (kernels/convert.h).
using WidenFn = void (*)(float* dst, const uint16_t* src, size_t count);
// dst[i] = src[i] rounded to nearest even into fp16 or bf16.
using NarrowFn = void (*)(uint16_t* dst, const float* src, size_t count);

struct KernelTable {
  const char* name;  // e.g. "portable", for logs and benchmarks
  ReduceFn reduce[chorusNumTypes][kNumReduceOps];
  ScaleFn scale[chorusNumTypes];
  DivideFn divide[chorusNumTypes];
  // Bulk conversions, bit-identical to base/half.h's scalar functions.
  WidenFn half_to_float;
  WidenFn bfloat16_to_float;
  NarrowFn float_to_half;
  NarrowFn float_to_bfloat16;
};

// Plain C++ loops; correct everywhere.
const KernelTable& PortableKernels();

// Instruction sets with a kernel table, from least to most capable.
enum class KernelIsa { kPortable, kAvx2, kAvx512 };

// The table for `isa`, or nullptr when this CPU or this build lacks it; lets
// tests and benchmarks compare every table this machine can run.
const KernelTable* KernelsFor(KernelIsa isa);

// The table used by ReduceKernel & co.: the most capable one this CPU runs,
// chosen once, immutable afterwards.
const KernelTable& ActiveKernels();

}  // namespace chorus::kernels
