// AVX2 kernels (with F16C for fp16): 256-bit vectors, tails by the portable
// kernels. The loops are x86_simd_kernels.h's; this file gives them the AVX2
// instructions.
//
// Compiled with -mavx2 -mf16c -mfma, so none of its code may run before
// kernel_dispatch.cc has checked the CPU, and it calls no inline function of
// a shared header outside an anonymous namespace (see x86_simd_kernels.h).
#include <immintrin.h>

#include <cstdint>
#include <type_traits>

#include "kernels/kernel_table.h"
#include "kernels/x86_kernel_tables.h"
#include "kernels/x86_simd_kernels.h"

namespace chorus::kernels {
namespace {

struct Avx2Traits {
  static constexpr const char* kName = "avx2";
  static constexpr size_t kVectorBytes = 32;
  static constexpr bool kMaskedTails = false;    // no masked byte/word loads
  static constexpr bool kInt64Multiply = false;  // vpmullq needs AVX-512DQ
  using FloatVec = __m256;
  using WordVec = __m128i;

  // ---- Memory. Every integer type shares __m256i; the float and double
  // overloads win over the template for their own types. ----

  static __m256 Load(const float* p) { return _mm256_loadu_ps(p); }
  static __m256d Load(const double* p) { return _mm256_loadu_pd(p); }
  template <typename T>
  static __m256i Load(const T* p) {
    return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p));
  }
  static void Store(float* p, __m256 v) { _mm256_storeu_ps(p, v); }
  static void Store(double* p, __m256d v) { _mm256_storeu_pd(p, v); }
  template <typename T>
  static void Store(T* p, __m256i v) {
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(p), v);
  }
  static __m256 Splat(float s) { return _mm256_set1_ps(s); }
  static __m256d Splat(double s) { return _mm256_set1_pd(s); }
  template <typename T>
  static __m256i Splat(T s) {
    if constexpr (sizeof(T) == 1) return _mm256_set1_epi8(static_cast<char>(s));
    if constexpr (sizeof(T) == 4) return _mm256_set1_epi32(static_cast<int>(s));
    if constexpr (sizeof(T) == 8) return _mm256_set1_epi64x(static_cast<long long>(s));
  }

  // Eight 16-bit words: one per float lane.
  static __m128i LoadWords(const uint16_t* p) {
    return _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
  }
  static void StoreWords(uint16_t* p, __m128i w) {
    _mm_storeu_si128(reinterpret_cast<__m128i*>(p), w);
  }
  static __m128i SplatWords(uint16_t s) { return _mm_set1_epi16(static_cast<short>(s)); }

  // ---- fp16 and bf16 conversions. ----

  // vcvtph2ps widens exactly; vcvtps2ph (imm 0) rounds to nearest even and
  // keeps a NaN quiet with its top payload bits, exactly like FloatToHalf.
  static __m256 HalfToFloat(__m128i h) { return _mm256_cvtph_ps(h); }
  static __m128i FloatToHalf(__m256 v) { return _mm256_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT); }

  // vcvtph2ps quiets a signaling NaN (0x7c00 < |h| < 0x7e00) by setting the
  // float's quiet bit; HalfToFloat keeps it signaling, so clear it again.
  static __m256 HalfToFloatKeepingSignalingNans(__m128i h) {
    const __m256i magnitude = _mm256_and_si256(_mm256_cvtepu16_epi32(h), _mm256_set1_epi32(0x7fff));
    const __m256i signaling = _mm256_and_si256(_mm256_cmpgt_epi32(magnitude, _mm256_set1_epi32(0x7c00)),
                                               _mm256_cmpgt_epi32(_mm256_set1_epi32(0x7e00), magnitude));
    const __m256i quiet_bit = _mm256_and_si256(signaling, _mm256_set1_epi32(0x00400000));
    return _mm256_castsi256_ps(_mm256_xor_si256(_mm256_castps_si256(HalfToFloat(h)), quiet_bit));
  }

  // bf16 widens by a 16-bit shift; it narrows rounding to nearest even on the
  // upper half, a NaN becoming (bits >> 16) | 0x40, as in FloatToBfloat16.
  static __m256 Bfloat16ToFloat(__m128i b) {
    return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(b), 16));
  }
  static __m128i FloatToBfloat16(__m256 v) {
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
    return _mm256_castsi256_si128(packed);
  }

  // ---- Float arithmetic. ----

  // a's NaN, quieted, whenever a is NaN (FirstNanWins in element_ops.h).
  static __m256 FirstNanWins(__m256 a, __m256 result) {
    const __m256 quiet_a = _mm256_or_ps(a, _mm256_castsi256_ps(_mm256_set1_epi32(0x00400000)));
    return _mm256_blendv_ps(result, quiet_a, _mm256_cmp_ps(a, a, _CMP_UNORD_Q));
  }
  static __m256d FirstNanWins(__m256d a, __m256d result) {
    const __m256d quiet_a =
        _mm256_or_pd(a, _mm256_castsi256_pd(_mm256_set1_epi64x(0x0008000000000000)));
    return _mm256_blendv_pd(result, quiet_a, _mm256_cmp_pd(a, a, _CMP_UNORD_Q));
  }
  static __m256 Add(__m256 a, __m256 b) { return _mm256_add_ps(a, b); }
  static __m256d Add(__m256d a, __m256d b) { return _mm256_add_pd(a, b); }
  static __m256 Mul(__m256 a, __m256 b) { return _mm256_mul_ps(a, b); }
  static __m256d Mul(__m256d a, __m256d b) { return _mm256_mul_pd(a, b); }
  // vmaxps(a, b) = a > b ? a : b and vminps(a, b) = a < b ? a : b.
  static __m256 Max(__m256 a, __m256 b) { return _mm256_max_ps(a, b); }
  static __m256d Max(__m256d a, __m256d b) { return _mm256_max_pd(a, b); }
  static __m256 Min(__m256 a, __m256 b) { return _mm256_min_ps(a, b); }
  static __m256d Min(__m256d a, __m256d b) { return _mm256_min_pd(a, b); }
  static __m256 Div(__m256 a, __m256 b) { return _mm256_div_ps(a, b); }
  static __m256d Div(__m256d a, __m256d b) { return _mm256_div_pd(a, b); }

  // ---- Integer arithmetic (wrapping). ----

  template <typename T>
  static __m256i IntAdd(__m256i a, __m256i b) {
    if constexpr (sizeof(T) == 1) return _mm256_add_epi8(a, b);
    if constexpr (sizeof(T) == 4) return _mm256_add_epi32(a, b);
    if constexpr (sizeof(T) == 8) return _mm256_add_epi64(a, b);
  }

  // No 8-bit multiply exists: the low byte of a 16-bit product depends only
  // on the low bytes of its factors, so even bytes multiply in place and odd
  // bytes after a shift down. For 32 bits the low half of the product is the
  // wrapped result for signed and unsigned alike.
  template <typename T>
  static __m256i IntMul(__m256i a, __m256i b) {
    static_assert(sizeof(T) != 8, "AVX2 has no 64-bit multiply");
    if constexpr (sizeof(T) == 1) {
      const __m256i even = _mm256_mullo_epi16(a, b);
      const __m256i odd = _mm256_mullo_epi16(_mm256_srli_epi16(a, 8), _mm256_srli_epi16(b, 8));
      return _mm256_or_si256(_mm256_and_si256(even, _mm256_set1_epi16(0x00ff)),
                             _mm256_slli_epi16(odd, 8));
    }
    if constexpr (sizeof(T) == 4) return _mm256_mullo_epi32(a, b);
  }

  template <typename T>
  static __m256i IntMax(__m256i a, __m256i b) {
    constexpr bool kSigned = std::is_signed_v<T>;
    if constexpr (sizeof(T) == 1) return kSigned ? _mm256_max_epi8(a, b) : _mm256_max_epu8(a, b);
    if constexpr (sizeof(T) == 4) return kSigned ? _mm256_max_epi32(a, b) : _mm256_max_epu32(a, b);
    if constexpr (sizeof(T) == 8) return _mm256_blendv_epi8(b, a, Greater64<T>(a, b));
  }

  template <typename T>
  static __m256i IntMin(__m256i a, __m256i b) {
    constexpr bool kSigned = std::is_signed_v<T>;
    if constexpr (sizeof(T) == 1) return kSigned ? _mm256_min_epi8(a, b) : _mm256_min_epu8(a, b);
    if constexpr (sizeof(T) == 4) return kSigned ? _mm256_min_epi32(a, b) : _mm256_min_epu32(a, b);
    if constexpr (sizeof(T) == 8) return _mm256_blendv_epi8(b, a, Greater64<T>(b, a));
  }

  // a > b for 64-bit lanes; unsigned compares after flipping the sign bits.
  template <typename T>
  static __m256i Greater64(__m256i a, __m256i b) {
    if constexpr (std::is_signed_v<T>) {
      return _mm256_cmpgt_epi64(a, b);
    } else {
      const __m256i bias = _mm256_set1_epi64x(static_cast<long long>(uint64_t{1} << 63));
      return _mm256_cmpgt_epi64(_mm256_xor_si256(a, bias), _mm256_xor_si256(b, bias));
    }
  }
};

}  // namespace

const KernelTable& Avx2KernelsUnchecked() {
  static const KernelTable table = MakeSimdTable<Avx2Traits>();
  return table;
}

}  // namespace chorus::kernels
