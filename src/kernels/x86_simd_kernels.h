// The SIMD kernel loops and table, written once over a vector-traits type
// (Avx2Traits in x86_avx2_kernels.cc, Avx512Traits in x86_avx512_kernels.cc).
// Only those two files include this header; each compiles it with its own ISA
// flags, and kernel_dispatch.cc runs a table only on CPUs that have the ISA.
//
// Everything here is in an anonymous namespace on purpose: the linker keeps
// ONE copy of an inline function or template instantiation with external
// linkage, and an AVX-512 copy could then be the one AVX2 (or portable) code
// calls. Internal linkage gives each ISA's .cc its own private copy.
//
// What a traits type provides (Isa below):
//   kName, kVectorBytes; kMaskedTails (a partial last vector through masked
//   LoadPart/StorePart, else the portable kernel does the tail);
//   kInt64Multiply (else int64 prod and scale stay portable);
//   FloatVec, WordVec (16-bit words, one per float lane);
//   Load/Store/Splat (+ LoadPart/StorePart) for float, double and every
//   integer type; LoadWords/StoreWords/SplatWords (+ parts);
//   HalfToFloat/FloatToHalf, Bfloat16ToFloat/FloatToBfloat16;
//   HalfToFloatKeepingSignalingNans (HalfToFloat may quiet them; the bulk
//   conversions must not);
//   Add/Mul/Max/Min/Div and FirstNanWins on float and double vectors;
//   IntAdd/IntMul/IntMax/IntMin<T> on integer vectors.
//
// Bit-identical to the portable kernels: every element sees the same
// operation in the same operand order (maxps(a, b) is exactly a > b ? a : b,
// NaN and signed zeros included), Sum and Prod pin the first operand's NaN
// like FirstNanWins in element_ops.h, fp16 rounds to nearest even like
// FloatToHalf and bf16 like FloatToBfloat16 (base/half.h).
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <type_traits>
#include <utility>

#include "kernels/kernel_table.h"

namespace chorus::kernels {
namespace {

// ---- Lanes: how one dtype moves between memory and a vector. ----

// float, double and the integers: stored and computed as themselves.
template <typename Isa, typename T>
struct NativeLanes {
  using Storage = T;
  using Compute = T;
  using Vec = decltype(Isa::Load(std::declval<const T*>()));
  static constexpr size_t kWidth = Isa::kVectorBytes / sizeof(T);
  static Vec Load(const T* p) { return Isa::Load(p); }
  static void Store(T* p, Vec v) { Isa::Store(p, v); }
  static Vec LoadPart(const T* p, size_t n) { return Isa::LoadPart(p, n); }
  static void StorePart(T* p, Vec v, size_t n) { Isa::StorePart(p, v, n); }
  static Vec Splat(T s) { return Isa::Splat(s); }
};

// fp16 and bf16: 16-bit words widened exactly to float, computed in float,
// narrowed with the rounding of base/half.h.
template <typename Isa, DataType kType>
struct SixteenBitFloatLanes {
  static_assert(kType == chorusFloat16 || kType == chorusBfloat16);
  using Storage = uint16_t;
  using Compute = float;
  using Vec = typename Isa::FloatVec;
  using Words = typename Isa::WordVec;
  static constexpr size_t kWidth = Isa::kVectorBytes / sizeof(float);
  static Vec Widen(Words w) {
    if constexpr (kType == chorusFloat16) return Isa::HalfToFloat(w);
    else return Isa::Bfloat16ToFloat(w);
  }
  static Words Narrow(Vec v) {
    if constexpr (kType == chorusFloat16) return Isa::FloatToHalf(v);
    else return Isa::FloatToBfloat16(v);
  }
  static Vec Load(const Storage* p) { return Widen(Isa::LoadWords(p)); }
  static void Store(Storage* p, Vec v) { Isa::StoreWords(p, Narrow(v)); }
  static Vec LoadPart(const Storage* p, size_t n) { return Widen(Isa::LoadWordsPart(p, n)); }
  static void StorePart(Storage* p, Vec v, size_t n) { Isa::StoreWordsPart(p, Narrow(v), n); }
  static Vec Splat(Storage s) { return Widen(Isa::SplatWords(s)); }
};

// ---- One ReduceOp on vectors of compute type T. ----

// Sum and Prod pin the first operand's NaN; Max(a, b) is a > b ? a : b and
// Min(a, b) is a < b ? a : b (operand order matters for NaN and +-0).
template <typename Isa, typename T, ReduceOp kReduceOp>
struct VectorOp {
  static constexpr ReduceOp kOp = kReduceOp;
  template <typename V>
  static V Apply(V a, V b) {
    if constexpr (std::is_floating_point_v<T>) {
      if constexpr (kOp == ReduceOp::kSum) return Isa::FirstNanWins(a, Isa::Add(a, b));
      if constexpr (kOp == ReduceOp::kProd) return Isa::FirstNanWins(a, Isa::Mul(a, b));
      if constexpr (kOp == ReduceOp::kMax) return Isa::Max(a, b);
      if constexpr (kOp == ReduceOp::kMin) return Isa::Min(a, b);
    } else {
      if constexpr (kOp == ReduceOp::kSum) return Isa::template IntAdd<T>(a, b);
      if constexpr (kOp == ReduceOp::kProd) return Isa::template IntMul<T>(a, b);
      if constexpr (kOp == ReduceOp::kMax) return Isa::template IntMax<T>(a, b);
      if constexpr (kOp == ReduceOp::kMin) return Isa::template IntMin<T>(a, b);
    }
  }
};

// ---- Loops: whole vectors, then the tail (masked, or the portable kernel). ----

template <typename Isa, DataType kType, typename Lanes, typename Op>
void ReduceVectors(void* dst, const void* a, const void* b, size_t count) {
  using S = typename Lanes::Storage;
  S* out = static_cast<S*>(dst);
  const S* x = static_cast<const S*>(a);
  const S* y = static_cast<const S*>(b);
  size_t i = 0;
  // Both inputs are loaded before dst is stored, so exact aliasing is safe.
  for (; i + Lanes::kWidth <= count; i += Lanes::kWidth) {
    Lanes::Store(out + i, Op::Apply(Lanes::Load(x + i), Lanes::Load(y + i)));
  }
  if (i == count) return;
  const size_t rest = count - i;
  if constexpr (Isa::kMaskedTails) {
    Lanes::StorePart(out + i, Op::Apply(Lanes::LoadPart(x + i, rest), Lanes::LoadPart(y + i, rest)),
                     rest);
  } else {
    PortableKernels().reduce[kType][static_cast<int>(Op::kOp)](out + i, x + i, y + i, rest);
  }
}

// dst[i] = src[i] * factor, in that operand order like the portable kernel.
template <typename Isa, DataType kType, typename Lanes, typename Prod>
void ScaleVectors(void* dst, const void* src, size_t count, const void* scalar) {
  using S = typename Lanes::Storage;
  S factor_storage;
  std::memcpy(&factor_storage, scalar, sizeof(S));  // scalar may be unaligned
  const typename Lanes::Vec factor = Lanes::Splat(factor_storage);
  S* out = static_cast<S*>(dst);
  const S* in = static_cast<const S*>(src);
  size_t i = 0;
  for (; i + Lanes::kWidth <= count; i += Lanes::kWidth) {
    Lanes::Store(out + i, Prod::Apply(Lanes::Load(in + i), factor));
  }
  if (i == count) return;
  const size_t rest = count - i;
  if constexpr (Isa::kMaskedTails) {
    Lanes::StorePart(out + i, Prod::Apply(Lanes::LoadPart(in + i, rest), factor), rest);
  } else {
    PortableKernels().scale[kType](out + i, in + i, rest, scalar);
  }
}

// Floating types only: divides in the compute type by the converted divisor.
template <typename Isa, DataType kType, typename Lanes>
void DivideVectors(void* buf, size_t count, int divisor) {
  using S = typename Lanes::Storage;
  const auto d = Isa::Splat(static_cast<typename Lanes::Compute>(divisor));
  S* data = static_cast<S*>(buf);
  size_t i = 0;
  for (; i + Lanes::kWidth <= count; i += Lanes::kWidth) {
    Lanes::Store(data + i, Isa::Div(Lanes::Load(data + i), d));
  }
  if (i == count) return;
  const size_t rest = count - i;
  if constexpr (Isa::kMaskedTails) {
    Lanes::StorePart(data + i, Isa::Div(Lanes::LoadPart(data + i, rest), d), rest);
  } else {
    PortableKernels().divide[kType](data + i, rest, divisor);
  }
}

// ---- Bulk fp16/bf16 <-> float32 conversions (kernels/convert.h). ----

// Exact, signaling NaNs included, as base/half.h's HalfToFloat.
template <typename Isa, DataType kType>
typename Isa::FloatVec WidenExactly(typename Isa::WordVec words) {
  if constexpr (kType == chorusFloat16) return Isa::HalfToFloatKeepingSignalingNans(words);
  else return Isa::Bfloat16ToFloat(words);
}

template <typename Isa, DataType kType>
void WidenVectors(float* dst, const uint16_t* src, size_t count) {
  constexpr size_t kWidth = Isa::kVectorBytes / sizeof(float);
  size_t i = 0;
  for (; i + kWidth <= count; i += kWidth) {
    Isa::Store(dst + i, WidenExactly<Isa, kType>(Isa::LoadWords(src + i)));
  }
  if (i == count) return;
  const size_t rest = count - i;
  if constexpr (Isa::kMaskedTails) {
    Isa::StorePart(dst + i, WidenExactly<Isa, kType>(Isa::LoadWordsPart(src + i, rest)), rest);
  } else if constexpr (kType == chorusFloat16) {
    PortableKernels().half_to_float(dst + i, src + i, rest);
  } else {
    PortableKernels().bfloat16_to_float(dst + i, src + i, rest);
  }
}

// Narrowing is SixteenBitFloatLanes' store: already rounds like base/half.h.
template <typename Isa, DataType kType>
void NarrowVectors(uint16_t* dst, const float* src, size_t count) {
  using Lanes = SixteenBitFloatLanes<Isa, kType>;
  size_t i = 0;
  for (; i + Lanes::kWidth <= count; i += Lanes::kWidth) {
    Lanes::Store(dst + i, Isa::Load(src + i));
  }
  if (i == count) return;
  const size_t rest = count - i;
  if constexpr (Isa::kMaskedTails) {
    Lanes::StorePart(dst + i, Isa::LoadPart(src + i, rest), rest);
  } else if constexpr (kType == chorusFloat16) {
    PortableKernels().float_to_half(dst + i, src + i, rest);
  } else {
    PortableKernels().float_to_bfloat16(dst + i, src + i, rest);
  }
}

// ---- The table: a copy of the portable one with the vector entries. ----

template <typename Isa, DataType kType, typename Lanes, typename... Ops>
void SetReduce(KernelTable& table) {
  ((table.reduce[kType][static_cast<int>(Ops::kOp)] = &ReduceVectors<Isa, kType, Lanes, Ops>), ...);
}

template <typename Isa, DataType kType, typename Lanes>
void SetType(KernelTable& table) {
  using C = typename Lanes::Compute;
  constexpr bool kFloating = std::is_floating_point_v<C>;
  using Prod = VectorOp<Isa, C, ReduceOp::kProd>;
  SetReduce<Isa, kType, Lanes, VectorOp<Isa, C, ReduceOp::kSum>, VectorOp<Isa, C, ReduceOp::kMax>,
            VectorOp<Isa, C, ReduceOp::kMin>>(table);
  if constexpr (kFloating || sizeof(C) < 8 || Isa::kInt64Multiply) {
    SetReduce<Isa, kType, Lanes, Prod>(table);
    table.scale[kType] = &ScaleVectors<Isa, kType, Lanes, Prod>;
  }
  // Integer divide stays portable: there is no vector integer division.
  if constexpr (kFloating) table.divide[kType] = &DivideVectors<Isa, kType, Lanes>;
}

template <typename Isa>
KernelTable MakeSimdTable() {
  KernelTable table = PortableKernels();
  table.name = Isa::kName;
  SetType<Isa, chorusInt8, NativeLanes<Isa, int8_t>>(table);
  SetType<Isa, chorusUint8, NativeLanes<Isa, uint8_t>>(table);
  SetType<Isa, chorusInt32, NativeLanes<Isa, int32_t>>(table);
  SetType<Isa, chorusUint32, NativeLanes<Isa, uint32_t>>(table);
  SetType<Isa, chorusInt64, NativeLanes<Isa, int64_t>>(table);
  SetType<Isa, chorusUint64, NativeLanes<Isa, uint64_t>>(table);
  SetType<Isa, chorusFloat16, SixteenBitFloatLanes<Isa, chorusFloat16>>(table);
  SetType<Isa, chorusFloat32, NativeLanes<Isa, float>>(table);
  SetType<Isa, chorusFloat64, NativeLanes<Isa, double>>(table);
  SetType<Isa, chorusBfloat16, SixteenBitFloatLanes<Isa, chorusBfloat16>>(table);
  table.half_to_float = &WidenVectors<Isa, chorusFloat16>;
  table.bfloat16_to_float = &WidenVectors<Isa, chorusBfloat16>;
  table.float_to_half = &NarrowVectors<Isa, chorusFloat16>;
  table.float_to_bfloat16 = &NarrowVectors<Isa, chorusBfloat16>;
  return table;
}
static_assert(chorusNumTypes == 10, "a new data type needs a line in MakeSimdTable");

}  // namespace
}  // namespace chorus::kernels
