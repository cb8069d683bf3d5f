// AVX-512 kernels (F, BW, VL, DQ, with F16C), 512-bit vectors, masked tails.
//
// Compiled with AVX-512 flags: nothing here may run before kernel_dispatch.cc
// has checked the CPU, and nothing here may be an inline function of a shared
// header (the linker could hand this AVX-512 copy to portable callers), so
// everything is in an anonymous namespace or an intrinsic.
//
// Every (dtype, op) is vectorised; the tail is one masked step (masked loads
// do not fault past the end, masked stores write nothing there; the zeros
// computed in masked-off lanes are discarded). Bit-identical to the portable
// kernels for the reasons given in x86_avx2_kernels.cc.

// GCC 12's AVX-512 intrinsics pass a deliberately undefined vector as the
// unused merge operand, which -W(maybe-)uninitialized reports falsely.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#include <immintrin.h>

#include <cstdint>
#include <cstring>
#include <type_traits>

#include "kernels/kernel_table.h"
#include "kernels/x86_kernel_tables.h"

namespace chorus::kernels {
namespace {

// The lowest n bits set, n < 64: the mask of a partial vector of n lanes.
constexpr uint64_t LowLanes(size_t n) { return (uint64_t{1} << n) - 1; }

// ---- Lanes: how one dtype moves between memory and a 512-bit vector. ----

struct Float32Lanes {
  using Storage = float;
  using Compute = float;
  using Vec = __m512;
  static constexpr size_t kWidth = 16;
  static Vec Load(const Storage* p) { return _mm512_loadu_ps(p); }
  static void Store(Storage* p, Vec v) { _mm512_storeu_ps(p, v); }
  static Vec LoadPart(const Storage* p, size_t n) {
    return _mm512_maskz_loadu_ps(static_cast<__mmask16>(LowLanes(n)), p);
  }
  static void StorePart(Storage* p, Vec v, size_t n) {
    _mm512_mask_storeu_ps(p, static_cast<__mmask16>(LowLanes(n)), v);
  }
  static Vec Splat(Storage s) { return _mm512_set1_ps(s); }
};

struct Float64Lanes {
  using Storage = double;
  using Compute = double;
  using Vec = __m512d;
  static constexpr size_t kWidth = 8;
  static Vec Load(const Storage* p) { return _mm512_loadu_pd(p); }
  static void Store(Storage* p, Vec v) { _mm512_storeu_pd(p, v); }
  static Vec LoadPart(const Storage* p, size_t n) {
    return _mm512_maskz_loadu_pd(static_cast<__mmask8>(LowLanes(n)), p);
  }
  static void StorePart(Storage* p, Vec v, size_t n) {
    _mm512_mask_storeu_pd(p, static_cast<__mmask8>(LowLanes(n)), v);
  }
  static Vec Splat(Storage s) { return _mm512_set1_pd(s); }
};

// Sixteen 16-bit values as one 256-bit memory operand.
__m256i Load16x16(const uint16_t* p) {
  return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p));
}
__m256i Load16x16Part(const uint16_t* p, size_t n) {
  return _mm256_maskz_loadu_epi16(static_cast<__mmask16>(LowLanes(n)), p);
}
void Store16x16(uint16_t* p, __m256i v) { _mm256_storeu_si256(reinterpret_cast<__m256i*>(p), v); }
void Store16x16Part(uint16_t* p, __m256i v, size_t n) {
  _mm256_mask_storeu_epi16(p, static_cast<__mmask16>(LowLanes(n)), v);
}

// fp16: exact widening, round-to-nearest-even narrowing (imm 0), NaN quiet
// with its top payload bits, exactly like FloatToHalf.
struct HalfLanes {
  using Storage = uint16_t;
  using Compute = float;
  using Vec = __m512;
  static constexpr size_t kWidth = 16;
  static Vec Widen(__m256i h) { return _mm512_cvtph_ps(h); }
  static __m256i Narrow(Vec v) { return _mm512_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT); }
  static Vec Load(const Storage* p) { return Widen(Load16x16(p)); }
  static void Store(Storage* p, Vec v) { Store16x16(p, Narrow(v)); }
  static Vec LoadPart(const Storage* p, size_t n) { return Widen(Load16x16Part(p, n)); }
  static void StorePart(Storage* p, Vec v, size_t n) { Store16x16Part(p, Narrow(v), n); }
  static Vec Splat(Storage s) { return Widen(_mm256_set1_epi16(static_cast<short>(s))); }
};

// bf16: widen by a 16-bit shift; narrow with round-to-nearest-even on the
// upper half, a NaN becoming (bits >> 16) | 0x40, as in FloatToBfloat16.
struct Bfloat16Lanes {
  using Storage = uint16_t;
  using Compute = float;
  using Vec = __m512;
  static constexpr size_t kWidth = 16;
  static Vec Widen(__m256i b) {
    return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(b), 16));
  }
  static __m256i Narrow(Vec v) {
    const __m512i bits = _mm512_castps_si512(v);
    const __m512i magnitude = _mm512_and_si512(bits, _mm512_set1_epi32(0x7fffffff));
    const __mmask16 is_nan = _mm512_cmpgt_epu32_mask(magnitude, _mm512_set1_epi32(0x7f800000));
    const __m512i upper = _mm512_srli_epi32(bits, 16);
    const __m512i odd = _mm512_and_si512(upper, _mm512_set1_epi32(1));
    const __m512i rounded = _mm512_srli_epi32(
        _mm512_add_epi32(_mm512_add_epi32(bits, _mm512_set1_epi32(0x7fff)), odd), 16);
    const __m512i quiet_nan = _mm512_or_si512(upper, _mm512_set1_epi32(0x40));
    return _mm512_cvtepi32_epi16(_mm512_mask_blend_epi32(is_nan, rounded, quiet_nan));
  }
  static Vec Load(const Storage* p) { return Widen(Load16x16(p)); }
  static void Store(Storage* p, Vec v) { Store16x16(p, Narrow(v)); }
  static Vec LoadPart(const Storage* p, size_t n) { return Widen(Load16x16Part(p, n)); }
  static void StorePart(Storage* p, Vec v, size_t n) { Store16x16Part(p, Narrow(v), n); }
  static Vec Splat(Storage s) {
    return _mm512_castsi512_ps(_mm512_set1_epi32(static_cast<int>(uint32_t{s} << 16)));
  }
};

template <typename T>
struct IntLanes {
  using Storage = T;
  using Vec = __m512i;
  static constexpr size_t kWidth = 64 / sizeof(T);
  static Vec Load(const Storage* p) { return _mm512_loadu_si512(p); }
  static void Store(Storage* p, Vec v) { _mm512_storeu_si512(p, v); }
  static Vec LoadPart(const Storage* p, size_t n) {
    const uint64_t mask = LowLanes(n);
    if constexpr (sizeof(T) == 1) return _mm512_maskz_loadu_epi8(mask, p);
    if constexpr (sizeof(T) == 4) return _mm512_maskz_loadu_epi32(static_cast<__mmask16>(mask), p);
    if constexpr (sizeof(T) == 8) return _mm512_maskz_loadu_epi64(static_cast<__mmask8>(mask), p);
  }
  static void StorePart(Storage* p, Vec v, size_t n) {
    const uint64_t mask = LowLanes(n);
    if constexpr (sizeof(T) == 1) _mm512_mask_storeu_epi8(p, mask, v);
    if constexpr (sizeof(T) == 4) _mm512_mask_storeu_epi32(p, static_cast<__mmask16>(mask), v);
    if constexpr (sizeof(T) == 8) _mm512_mask_storeu_epi64(p, static_cast<__mmask8>(mask), v);
  }
  static Vec Splat(Storage s) {
    if constexpr (sizeof(T) == 1) return _mm512_set1_epi8(static_cast<char>(s));
    if constexpr (sizeof(T) == 4) return _mm512_set1_epi32(static_cast<int>(s));
    if constexpr (sizeof(T) == 8) return _mm512_set1_epi64(static_cast<long long>(s));
  }
};

// ---- Ops on vectors; each knows which ReduceOp it implements. ----

// FirstNanWins (element_ops.h): a's NaN, quieted, whenever a is NaN, so
// the result does not depend on which operand the compiler puts first.
__m512 FirstNanWins(__m512 a, __m512 result) {
  const __m512 quiet_a = _mm512_or_ps(a, _mm512_castsi512_ps(_mm512_set1_epi32(0x00400000)));
  return _mm512_mask_blend_ps(_mm512_cmp_ps_mask(a, a, _CMP_UNORD_Q), result, quiet_a);
}
__m512d FirstNanWins(__m512d a, __m512d result) {
  const __m512d quiet_a =
      _mm512_or_pd(a, _mm512_castsi512_pd(_mm512_set1_epi64(0x0008000000000000)));
  return _mm512_mask_blend_pd(_mm512_cmp_pd_mask(a, a, _CMP_UNORD_Q), result, quiet_a);
}

struct FloatSum {
  static constexpr ReduceOp kOp = ReduceOp::kSum;
  static __m512 Apply(__m512 a, __m512 b) { return FirstNanWins(a, _mm512_add_ps(a, b)); }
  static __m512d Apply(__m512d a, __m512d b) { return FirstNanWins(a, _mm512_add_pd(a, b)); }
};
struct FloatProd {
  static constexpr ReduceOp kOp = ReduceOp::kProd;
  static __m512 Apply(__m512 a, __m512 b) { return FirstNanWins(a, _mm512_mul_ps(a, b)); }
  static __m512d Apply(__m512d a, __m512d b) { return FirstNanWins(a, _mm512_mul_pd(a, b)); }
};
// vmaxps(a, b) = a > b ? a : b, vminps(a, b) = a < b ? a : b (NaN and +-0
// included): this operand order matches element_ops.h.
struct FloatMax {
  static constexpr ReduceOp kOp = ReduceOp::kMax;
  static __m512 Apply(__m512 a, __m512 b) { return _mm512_max_ps(a, b); }
  static __m512d Apply(__m512d a, __m512d b) { return _mm512_max_pd(a, b); }
};
struct FloatMin {
  static constexpr ReduceOp kOp = ReduceOp::kMin;
  static __m512 Apply(__m512 a, __m512 b) { return _mm512_min_ps(a, b); }
  static __m512d Apply(__m512d a, __m512d b) { return _mm512_min_pd(a, b); }
};
struct FloatDiv {
  static __m512 Apply(__m512 a, __m512 b) { return _mm512_div_ps(a, b); }
  static __m512d Apply(__m512d a, __m512d b) { return _mm512_div_pd(a, b); }
};

template <typename T>
struct IntSum {
  static constexpr ReduceOp kOp = ReduceOp::kSum;
  static __m512i Apply(__m512i a, __m512i b) {
    if constexpr (sizeof(T) == 1) return _mm512_add_epi8(a, b);
    if constexpr (sizeof(T) == 4) return _mm512_add_epi32(a, b);
    if constexpr (sizeof(T) == 8) return _mm512_add_epi64(a, b);
  }
};

// 8 bits: even bytes multiply in place in 16-bit lanes, odd bytes after a
// shift down (a low byte of a product depends only on the factors' low
// bytes). Low halves of products are the wrapped result, signed or not.
template <typename T>
struct IntProd {
  static constexpr ReduceOp kOp = ReduceOp::kProd;
  static __m512i Apply(__m512i a, __m512i b) {
    if constexpr (sizeof(T) == 1) {
      const __m512i even = _mm512_mullo_epi16(a, b);
      const __m512i odd = _mm512_mullo_epi16(_mm512_srli_epi16(a, 8), _mm512_srli_epi16(b, 8));
      return _mm512_or_si512(_mm512_and_si512(even, _mm512_set1_epi16(0x00ff)),
                             _mm512_slli_epi16(odd, 8));
    }
    if constexpr (sizeof(T) == 4) return _mm512_mullo_epi32(a, b);
    if constexpr (sizeof(T) == 8) return _mm512_mullo_epi64(a, b);
  }
};

template <typename T>
struct IntMax {
  static constexpr ReduceOp kOp = ReduceOp::kMax;
  static __m512i Apply(__m512i a, __m512i b) {
    constexpr bool kSigned = std::is_signed_v<T>;
    if constexpr (sizeof(T) == 1) return kSigned ? _mm512_max_epi8(a, b) : _mm512_max_epu8(a, b);
    if constexpr (sizeof(T) == 4) return kSigned ? _mm512_max_epi32(a, b) : _mm512_max_epu32(a, b);
    if constexpr (sizeof(T) == 8) return kSigned ? _mm512_max_epi64(a, b) : _mm512_max_epu64(a, b);
  }
};

template <typename T>
struct IntMin {
  static constexpr ReduceOp kOp = ReduceOp::kMin;
  static __m512i Apply(__m512i a, __m512i b) {
    constexpr bool kSigned = std::is_signed_v<T>;
    if constexpr (sizeof(T) == 1) return kSigned ? _mm512_min_epi8(a, b) : _mm512_min_epu8(a, b);
    if constexpr (sizeof(T) == 4) return kSigned ? _mm512_min_epi32(a, b) : _mm512_min_epu32(a, b);
    if constexpr (sizeof(T) == 8) return kSigned ? _mm512_min_epi64(a, b) : _mm512_min_epu64(a, b);
  }
};

// ---- Loops: whole vectors, then one masked partial vector. ----

template <typename Lanes, typename Op>
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
  if (const size_t rest = count - i; rest > 0) {
    Lanes::StorePart(out + i, Op::Apply(Lanes::LoadPart(x + i, rest), Lanes::LoadPart(y + i, rest)),
                     rest);
  }
}

// dst[i] = src[i] * factor, in that operand order like the portable kernel.
template <typename Lanes, typename Prod>
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
  if (const size_t rest = count - i; rest > 0) {
    Lanes::StorePart(out + i, Prod::Apply(Lanes::LoadPart(in + i, rest), factor), rest);
  }
}

__m512 SplatCompute(float value) { return _mm512_set1_ps(value); }
__m512d SplatCompute(double value) { return _mm512_set1_pd(value); }

// Floating types only: divides in the compute type by the converted divisor.
template <typename Lanes>
void DivideVectors(void* buf, size_t count, int divisor) {
  using S = typename Lanes::Storage;
  const auto d = SplatCompute(static_cast<typename Lanes::Compute>(divisor));
  S* data = static_cast<S*>(buf);
  size_t i = 0;
  for (; i + Lanes::kWidth <= count; i += Lanes::kWidth) {
    Lanes::Store(data + i, FloatDiv::Apply(Lanes::Load(data + i), d));
  }
  if (const size_t rest = count - i; rest > 0) {
    Lanes::StorePart(data + i, FloatDiv::Apply(Lanes::LoadPart(data + i, rest), d), rest);
  }
}

// ---- The table. ----

template <DataType kType, typename Lanes, typename Sum, typename Prod, typename Max, typename Min>
void SetType(KernelTable& table) {
  table.reduce[kType][static_cast<int>(ReduceOp::kSum)] = &ReduceVectors<Lanes, Sum>;
  table.reduce[kType][static_cast<int>(ReduceOp::kProd)] = &ReduceVectors<Lanes, Prod>;
  table.reduce[kType][static_cast<int>(ReduceOp::kMax)] = &ReduceVectors<Lanes, Max>;
  table.reduce[kType][static_cast<int>(ReduceOp::kMin)] = &ReduceVectors<Lanes, Min>;
  table.scale[kType] = &ScaleVectors<Lanes, Prod>;
}

template <DataType kType, typename Lanes>
void SetFloatType(KernelTable& table) {
  SetType<kType, Lanes, FloatSum, FloatProd, FloatMax, FloatMin>(table);
  table.divide[kType] = &DivideVectors<Lanes>;
}

// Integer divide stays portable: there is no vector integer division.
template <DataType kType, typename T>
void SetIntType(KernelTable& table) {
  SetType<kType, IntLanes<T>, IntSum<T>, IntProd<T>, IntMax<T>, IntMin<T>>(table);
}

KernelTable MakeAvx512Table() {
  KernelTable table = PortableKernels();
  table.name = "avx512";
  SetIntType<chorusInt8, int8_t>(table);
  SetIntType<chorusUint8, uint8_t>(table);
  SetIntType<chorusInt32, int32_t>(table);
  SetIntType<chorusUint32, uint32_t>(table);
  SetIntType<chorusInt64, int64_t>(table);
  SetIntType<chorusUint64, uint64_t>(table);
  SetFloatType<chorusFloat16, HalfLanes>(table);
  SetFloatType<chorusFloat32, Float32Lanes>(table);
  SetFloatType<chorusFloat64, Float64Lanes>(table);
  SetFloatType<chorusBfloat16, Bfloat16Lanes>(table);
  return table;
}
static_assert(chorusNumTypes == 10, "a new data type needs a line in MakeAvx512Table");

}  // namespace

const KernelTable& Avx512KernelsUnchecked() {
  static const KernelTable table = MakeAvx512Table();
  return table;
}

}  // namespace chorus::kernels
