// AVX2 kernels (with F16C for fp16), 256-bit vectors, scalar tails.
//
// This file is compiled with -mavx2 -mf16c -mfma, so none of its code may run
// before kernel_dispatch.cc has checked the CPU. For the same reason it calls
// no inline function of a shared header: the linker keeps ONE copy of each
// inline function, and an AVX-compiled copy made here could be the one that
// portable code ends up calling. Everything below is in an anonymous
// namespace or an intrinsic; tails and the few cases without a vector form
// (int64 prod) run the portable kernels through their table.
//
// Bit-identical to the portable kernels: every element sees the same
// operation in the same operand order (maxps(a, b) is exactly a > b ? a : b,
// NaN and signed zeros included), fp16 rounds with vcvtps2ph to nearest
// even, and bf16 rounds like FloatToBfloat16 (base/half.h).
#include <immintrin.h>

#include <cstdint>
#include <cstring>
#include <type_traits>

#include "kernels/kernel_table.h"
#include "kernels/x86_kernel_tables.h"

namespace chorus::kernels {
namespace {

// ---- Lanes: how one dtype moves between memory and a 256-bit vector. ----

struct Float32Lanes {
  using Storage = float;
  using Compute = float;
  using Vec = __m256;
  static constexpr size_t kWidth = 8;
  static Vec Load(const Storage* p) { return _mm256_loadu_ps(p); }
  static void Store(Storage* p, Vec v) { _mm256_storeu_ps(p, v); }
  static Vec Splat(Storage s) { return _mm256_set1_ps(s); }
};

struct Float64Lanes {
  using Storage = double;
  using Compute = double;
  using Vec = __m256d;
  static constexpr size_t kWidth = 4;
  static Vec Load(const Storage* p) { return _mm256_loadu_pd(p); }
  static void Store(Storage* p, Vec v) { _mm256_storeu_pd(p, v); }
  static Vec Splat(Storage s) { return _mm256_set1_pd(s); }
};

// fp16: eight halves widen exactly to eight floats (vcvtph2ps) and narrow
// with round-to-nearest-even (vcvtps2ph, imm 0), NaN kept quiet with its top
// payload bits, exactly like FloatToHalf.
struct HalfLanes {
  using Storage = uint16_t;
  using Compute = float;
  using Vec = __m256;
  static constexpr size_t kWidth = 8;
  static Vec Load(const Storage* p) {
    return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
  }
  static void Store(Storage* p, Vec v) {
    _mm_storeu_si128(reinterpret_cast<__m128i*>(p), _mm256_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT));
  }
  static Vec Splat(Storage s) { return _mm256_cvtph_ps(_mm_set1_epi16(static_cast<short>(s))); }
};

// bf16: widening is a 16-bit shift; narrowing rounds to nearest even on the
// upper half, and a NaN becomes (bits >> 16) | 0x40, as in FloatToBfloat16.
struct Bfloat16Lanes {
  using Storage = uint16_t;
  using Compute = float;
  using Vec = __m256;
  static constexpr size_t kWidth = 8;
  static Vec Load(const Storage* p) {
    const __m256i wide =
        _mm256_cvtepu16_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
    return _mm256_castsi256_ps(_mm256_slli_epi32(wide, 16));
  }
  static void Store(Storage* p, Vec v) {
    const __m256i bits = _mm256_castps_si256(v);
    const __m256i magnitude = _mm256_and_si256(bits, _mm256_set1_epi32(0x7fffffff));
    // Both sides are non-negative as int32, so a signed compare is exact.
    const __m256i is_nan = _mm256_cmpgt_epi32(magnitude, _mm256_set1_epi32(0x7f800000));
    const __m256i upper = _mm256_srli_epi32(bits, 16);
    const __m256i odd = _mm256_and_si256(upper, _mm256_set1_epi32(1));
    const __m256i rounded = _mm256_srli_epi32(
        _mm256_add_epi32(_mm256_add_epi32(bits, _mm256_set1_epi32(0x7fff)), odd), 16);
    const __m256i quiet_nan = _mm256_or_si256(upper, _mm256_set1_epi32(0x40));
    const __m256i narrow = _mm256_blendv_epi8(rounded, quiet_nan, is_nan);
    // Values fit in 16 bits, so unsigned saturation is a plain narrowing;
    // packus works per 128-bit lane, the permute joins the two halves.
    const __m256i packed = _mm256_permute4x64_epi64(_mm256_packus_epi32(narrow, narrow), 0x08);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(p), _mm256_castsi256_si128(packed));
  }
  static Vec Splat(Storage s) {
    return _mm256_castsi256_ps(_mm256_set1_epi32(static_cast<int>(uint32_t{s} << 16)));
  }
};

template <typename T>
struct IntLanes {
  using Storage = T;
  using Vec = __m256i;
  static constexpr size_t kWidth = 32 / sizeof(T);
  static Vec Load(const Storage* p) { return _mm256_loadu_si256(reinterpret_cast<const Vec*>(p)); }
  static void Store(Storage* p, Vec v) { _mm256_storeu_si256(reinterpret_cast<Vec*>(p), v); }
  static Vec Splat(Storage s) {
    if constexpr (sizeof(T) == 1) return _mm256_set1_epi8(static_cast<char>(s));
    if constexpr (sizeof(T) == 4) return _mm256_set1_epi32(static_cast<int>(s));
    if constexpr (sizeof(T) == 8) return _mm256_set1_epi64x(static_cast<long long>(s));
  }
};

// ---- Ops on vectors; each knows which ReduceOp it implements. ----

// FirstNanWins (element_ops.h): a's NaN, quieted, whenever a is NaN, so
// the result does not depend on which operand the compiler puts first.
__m256 FirstNanWins(__m256 a, __m256 result) {
  const __m256 quiet_a = _mm256_or_ps(a, _mm256_castsi256_ps(_mm256_set1_epi32(0x00400000)));
  return _mm256_blendv_ps(result, quiet_a, _mm256_cmp_ps(a, a, _CMP_UNORD_Q));
}
__m256d FirstNanWins(__m256d a, __m256d result) {
  const __m256d quiet_a =
      _mm256_or_pd(a, _mm256_castsi256_pd(_mm256_set1_epi64x(0x0008000000000000)));
  return _mm256_blendv_pd(result, quiet_a, _mm256_cmp_pd(a, a, _CMP_UNORD_Q));
}

struct FloatSum {
  static constexpr ReduceOp kOp = ReduceOp::kSum;
  static __m256 Apply(__m256 a, __m256 b) { return FirstNanWins(a, _mm256_add_ps(a, b)); }
  static __m256d Apply(__m256d a, __m256d b) { return FirstNanWins(a, _mm256_add_pd(a, b)); }
};
struct FloatProd {
  static constexpr ReduceOp kOp = ReduceOp::kProd;
  static __m256 Apply(__m256 a, __m256 b) { return FirstNanWins(a, _mm256_mul_ps(a, b)); }
  static __m256d Apply(__m256d a, __m256d b) { return FirstNanWins(a, _mm256_mul_pd(a, b)); }
};
// vmaxps(a, b) = a > b ? a : b and vminps(a, b) = a < b ? a : b: operand
// order matters for NaN and +-0, and this order matches element_ops.h.
struct FloatMax {
  static constexpr ReduceOp kOp = ReduceOp::kMax;
  static __m256 Apply(__m256 a, __m256 b) { return _mm256_max_ps(a, b); }
  static __m256d Apply(__m256d a, __m256d b) { return _mm256_max_pd(a, b); }
};
struct FloatMin {
  static constexpr ReduceOp kOp = ReduceOp::kMin;
  static __m256 Apply(__m256 a, __m256 b) { return _mm256_min_ps(a, b); }
  static __m256d Apply(__m256d a, __m256d b) { return _mm256_min_pd(a, b); }
};
struct FloatDiv {
  static __m256 Apply(__m256 a, __m256 b) { return _mm256_div_ps(a, b); }
  static __m256d Apply(__m256d a, __m256d b) { return _mm256_div_pd(a, b); }
};

template <typename T>
struct IntSum {
  static constexpr ReduceOp kOp = ReduceOp::kSum;
  static __m256i Apply(__m256i a, __m256i b) {
    if constexpr (sizeof(T) == 1) return _mm256_add_epi8(a, b);
    if constexpr (sizeof(T) == 4) return _mm256_add_epi32(a, b);
    if constexpr (sizeof(T) == 8) return _mm256_add_epi64(a, b);
  }
};

// No 8-bit multiply exists: the low byte of a 16-bit product depends only on
// the low bytes of its factors, so even bytes multiply in place and odd
// bytes after a shift down. For 32 bits the low half of the product is the
// wrapped result for signed and unsigned alike.
template <typename T>
struct IntProd {
  static_assert(sizeof(T) != 8, "AVX2 has no 64-bit multiply");
  static constexpr ReduceOp kOp = ReduceOp::kProd;
  static __m256i Apply(__m256i a, __m256i b) {
    if constexpr (sizeof(T) == 1) {
      const __m256i even = _mm256_mullo_epi16(a, b);
      const __m256i odd = _mm256_mullo_epi16(_mm256_srli_epi16(a, 8), _mm256_srli_epi16(b, 8));
      return _mm256_or_si256(_mm256_and_si256(even, _mm256_set1_epi16(0x00ff)),
                             _mm256_slli_epi16(odd, 8));
    }
    if constexpr (sizeof(T) == 4) return _mm256_mullo_epi32(a, b);
  }
};

// a > b for 64-bit lanes; unsigned compares after flipping the sign bits.
template <typename T>
__m256i Greater64(__m256i a, __m256i b) {
  if constexpr (std::is_signed_v<T>) {
    return _mm256_cmpgt_epi64(a, b);
  } else {
    const __m256i bias = _mm256_set1_epi64x(static_cast<long long>(uint64_t{1} << 63));
    return _mm256_cmpgt_epi64(_mm256_xor_si256(a, bias), _mm256_xor_si256(b, bias));
  }
}

template <typename T>
struct IntMax {
  static constexpr ReduceOp kOp = ReduceOp::kMax;
  static __m256i Apply(__m256i a, __m256i b) {
    constexpr bool kSigned = std::is_signed_v<T>;
    if constexpr (sizeof(T) == 1) return kSigned ? _mm256_max_epi8(a, b) : _mm256_max_epu8(a, b);
    if constexpr (sizeof(T) == 4) return kSigned ? _mm256_max_epi32(a, b) : _mm256_max_epu32(a, b);
    if constexpr (sizeof(T) == 8) return _mm256_blendv_epi8(b, a, Greater64<T>(a, b));
  }
};

template <typename T>
struct IntMin {
  static constexpr ReduceOp kOp = ReduceOp::kMin;
  static __m256i Apply(__m256i a, __m256i b) {
    constexpr bool kSigned = std::is_signed_v<T>;
    if constexpr (sizeof(T) == 1) return kSigned ? _mm256_min_epi8(a, b) : _mm256_min_epu8(a, b);
    if constexpr (sizeof(T) == 4) return kSigned ? _mm256_min_epi32(a, b) : _mm256_min_epu32(a, b);
    if constexpr (sizeof(T) == 8) return _mm256_blendv_epi8(b, a, Greater64<T>(b, a));
  }
};

// ---- Loops: whole vectors here, the remainder by the portable kernel. ----

template <DataType kType, typename Lanes, typename Op>
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
  if (i < count) {
    PortableKernels().reduce[kType][static_cast<int>(Op::kOp)](out + i, x + i, y + i, count - i);
  }
}

// dst[i] = src[i] * factor, in that operand order like the portable kernel.
template <DataType kType, typename Lanes, typename Prod>
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
  if (i < count) PortableKernels().scale[kType](out + i, in + i, count - i, scalar);
}

__m256 SplatCompute(float value) { return _mm256_set1_ps(value); }
__m256d SplatCompute(double value) { return _mm256_set1_pd(value); }

// Floating types only: divides in the compute type by the converted divisor.
template <DataType kType, typename Lanes>
void DivideVectors(void* buf, size_t count, int divisor) {
  using S = typename Lanes::Storage;
  const auto d = SplatCompute(static_cast<typename Lanes::Compute>(divisor));
  S* data = static_cast<S*>(buf);
  size_t i = 0;
  for (; i + Lanes::kWidth <= count; i += Lanes::kWidth) {
    Lanes::Store(data + i, FloatDiv::Apply(Lanes::Load(data + i), d));
  }
  if (i < count) PortableKernels().divide[kType](data + i, count - i, divisor);
}

// ---- The table. ----

template <DataType kType, typename Lanes, typename... Ops>
void SetReduce(KernelTable& table) {
  ((table.reduce[kType][static_cast<int>(Ops::kOp)] = &ReduceVectors<kType, Lanes, Ops>), ...);
}

template <DataType kType, typename Lanes>
void SetFloatType(KernelTable& table) {
  SetReduce<kType, Lanes, FloatSum, FloatProd, FloatMax, FloatMin>(table);
  table.scale[kType] = &ScaleVectors<kType, Lanes, FloatProd>;
  table.divide[kType] = &DivideVectors<kType, Lanes>;
}

// Integer divide stays portable: AVX2 has no integer division.
template <DataType kType, typename T>
void SetIntType(KernelTable& table) {
  using Lanes = IntLanes<T>;
  if constexpr (sizeof(T) == 8) {
    SetReduce<kType, Lanes, IntSum<T>, IntMax<T>, IntMin<T>>(table);
  } else {
    SetReduce<kType, Lanes, IntSum<T>, IntProd<T>, IntMax<T>, IntMin<T>>(table);
    table.scale[kType] = &ScaleVectors<kType, Lanes, IntProd<T>>;
  }
}

KernelTable MakeAvx2Table() {
  KernelTable table = PortableKernels();
  table.name = "avx2";
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
static_assert(chorusNumTypes == 10, "a new data type needs a line in MakeAvx2Table");

}  // namespace

const KernelTable& Avx2KernelsUnchecked() {
  static const KernelTable table = MakeAvx2Table();
  return table;
}

}  // namespace chorus::kernels
