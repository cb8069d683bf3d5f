// AVX-512 kernels (F, BW, VL, DQ, with F16C): 512-bit vectors, masked tails.
// The loops are x86_simd_kernels.h's; this file gives them the AVX-512
// instructions.
//
// Compiled with AVX-512 flags: nothing here may run before kernel_dispatch.cc
// has checked the CPU, and it calls no inline function of a shared header
// outside an anonymous namespace (see x86_simd_kernels.h).
//
// Every (dtype, op) is vectorised; the tail is one masked step (masked loads
// do not fault past the end, masked stores write nothing there; the zeros
// computed in masked-off lanes are discarded).

// GCC 12's AVX-512 intrinsics pass a deliberately undefined vector as the
// unused merge operand, which -W(maybe-)uninitialized reports falsely.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#include <immintrin.h>

#include <cstdint>
#include <type_traits>

#include "kernels/kernel_table.h"
#include "kernels/x86_kernel_tables.h"
#include "kernels/x86_simd_kernels.h"

namespace chorus::kernels {
namespace {

// The lowest n bits set, n < 64: the mask of a partial vector of n lanes.
constexpr uint64_t LowLanes(size_t n) { return (uint64_t{1} << n) - 1; }

struct Avx512Traits {
  static constexpr const char* kName = "avx512";
  static constexpr size_t kVectorBytes = 64;
  static constexpr bool kMaskedTails = true;
  static constexpr bool kInt64Multiply = true;
  using FloatVec = __m512;
  using WordVec = __m256i;

  // ---- Memory. Every integer type shares __m512i; the float and double
  // overloads win over the templates for their own types. ----

  static __m512 Load(const float* p) { return _mm512_loadu_ps(p); }
  static __m512d Load(const double* p) { return _mm512_loadu_pd(p); }
  template <typename T>
  static __m512i Load(const T* p) { return _mm512_loadu_si512(p); }
  static void Store(float* p, __m512 v) { _mm512_storeu_ps(p, v); }
  static void Store(double* p, __m512d v) { _mm512_storeu_pd(p, v); }
  template <typename T>
  static void Store(T* p, __m512i v) { _mm512_storeu_si512(p, v); }

  static __m512 LoadPart(const float* p, size_t n) {
    return _mm512_maskz_loadu_ps(static_cast<__mmask16>(LowLanes(n)), p);
  }
  static __m512d LoadPart(const double* p, size_t n) {
    return _mm512_maskz_loadu_pd(static_cast<__mmask8>(LowLanes(n)), p);
  }
  template <typename T>
  static __m512i LoadPart(const T* p, size_t n) {
    const uint64_t mask = LowLanes(n);
    if constexpr (sizeof(T) == 1) return _mm512_maskz_loadu_epi8(mask, p);
    if constexpr (sizeof(T) == 4) return _mm512_maskz_loadu_epi32(static_cast<__mmask16>(mask), p);
    if constexpr (sizeof(T) == 8) return _mm512_maskz_loadu_epi64(static_cast<__mmask8>(mask), p);
  }
  static void StorePart(float* p, __m512 v, size_t n) {
    _mm512_mask_storeu_ps(p, static_cast<__mmask16>(LowLanes(n)), v);
  }
  static void StorePart(double* p, __m512d v, size_t n) {
    _mm512_mask_storeu_pd(p, static_cast<__mmask8>(LowLanes(n)), v);
  }
  template <typename T>
  static void StorePart(T* p, __m512i v, size_t n) {
    const uint64_t mask = LowLanes(n);
    if constexpr (sizeof(T) == 1) _mm512_mask_storeu_epi8(p, mask, v);
    if constexpr (sizeof(T) == 4) _mm512_mask_storeu_epi32(p, static_cast<__mmask16>(mask), v);
    if constexpr (sizeof(T) == 8) _mm512_mask_storeu_epi64(p, static_cast<__mmask8>(mask), v);
  }

  static __m512 Splat(float s) { return _mm512_set1_ps(s); }
  static __m512d Splat(double s) { return _mm512_set1_pd(s); }
  template <typename T>
  static __m512i Splat(T s) {
    if constexpr (sizeof(T) == 1) return _mm512_set1_epi8(static_cast<char>(s));
    if constexpr (sizeof(T) == 4) return _mm512_set1_epi32(static_cast<int>(s));
    if constexpr (sizeof(T) == 8) return _mm512_set1_epi64(static_cast<long long>(s));
  }

  // Sixteen 16-bit words (one 256-bit memory operand): one per float lane.
  static __m256i LoadWords(const uint16_t* p) {
    return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p));
  }
  static __m256i LoadWordsPart(const uint16_t* p, size_t n) {
    return _mm256_maskz_loadu_epi16(static_cast<__mmask16>(LowLanes(n)), p);
  }
  static void StoreWords(uint16_t* p, __m256i w) {
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(p), w);
  }
  static void StoreWordsPart(uint16_t* p, __m256i w, size_t n) {
    _mm256_mask_storeu_epi16(p, static_cast<__mmask16>(LowLanes(n)), w);
  }
  static __m256i SplatWords(uint16_t s) { return _mm256_set1_epi16(static_cast<short>(s)); }

  // ---- fp16 and bf16 conversions. ----

  // Exact widening; narrowing rounds to nearest even (imm 0) and keeps a NaN
  // quiet with its top payload bits, exactly like FloatToHalf.
  static __m512 HalfToFloat(__m256i h) { return _mm512_cvtph_ps(h); }
  static __m256i FloatToHalf(__m512 v) { return _mm512_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT); }

  // vcvtph2ps quiets a signaling NaN (0x7c00 < |h| < 0x7e00) by setting the
  // float's quiet bit; HalfToFloat keeps it signaling, so clear it again.
  static __m512 HalfToFloatKeepingSignalingNans(__m256i h) {
    const __m512i magnitude = _mm512_and_si512(_mm512_cvtepu16_epi32(h), _mm512_set1_epi32(0x7fff));
    const __mmask16 signaling =
        _mm512_cmpgt_epu32_mask(magnitude, _mm512_set1_epi32(0x7c00)) &
        _mm512_cmplt_epu32_mask(magnitude, _mm512_set1_epi32(0x7e00));
    const __m512i bits = _mm512_castps_si512(HalfToFloat(h));
    return _mm512_castsi512_ps(_mm512_mask_xor_epi32(bits, signaling, bits, _mm512_set1_epi32(0x00400000)));
  }

  // bf16 widens by a 16-bit shift; it narrows rounding to nearest even on the
  // upper half, a NaN becoming (bits >> 16) | 0x40, as in FloatToBfloat16.
  static __m512 Bfloat16ToFloat(__m256i b) {
    return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(b), 16));
  }
  static __m256i FloatToBfloat16(__m512 v) {
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

  // ---- Float arithmetic. ----

  // a's NaN, quieted, whenever a is NaN (FirstNanWins in element_ops.h).
  static __m512 FirstNanWins(__m512 a, __m512 result) {
    const __m512 quiet_a = _mm512_or_ps(a, _mm512_castsi512_ps(_mm512_set1_epi32(0x00400000)));
    return _mm512_mask_blend_ps(_mm512_cmp_ps_mask(a, a, _CMP_UNORD_Q), result, quiet_a);
  }
  static __m512d FirstNanWins(__m512d a, __m512d result) {
    const __m512d quiet_a =
        _mm512_or_pd(a, _mm512_castsi512_pd(_mm512_set1_epi64(0x0008000000000000)));
    return _mm512_mask_blend_pd(_mm512_cmp_pd_mask(a, a, _CMP_UNORD_Q), result, quiet_a);
  }
  static __m512 Add(__m512 a, __m512 b) { return _mm512_add_ps(a, b); }
  static __m512d Add(__m512d a, __m512d b) { return _mm512_add_pd(a, b); }
  static __m512 Mul(__m512 a, __m512 b) { return _mm512_mul_ps(a, b); }
  static __m512d Mul(__m512d a, __m512d b) { return _mm512_mul_pd(a, b); }
  // vmaxps(a, b) = a > b ? a : b, vminps(a, b) = a < b ? a : b.
  static __m512 Max(__m512 a, __m512 b) { return _mm512_max_ps(a, b); }
  static __m512d Max(__m512d a, __m512d b) { return _mm512_max_pd(a, b); }
  static __m512 Min(__m512 a, __m512 b) { return _mm512_min_ps(a, b); }
  static __m512d Min(__m512d a, __m512d b) { return _mm512_min_pd(a, b); }
  static __m512 Div(__m512 a, __m512 b) { return _mm512_div_ps(a, b); }
  static __m512d Div(__m512d a, __m512d b) { return _mm512_div_pd(a, b); }

  // ---- Integer arithmetic (wrapping). ----

  template <typename T>
  static __m512i IntAdd(__m512i a, __m512i b) {
    if constexpr (sizeof(T) == 1) return _mm512_add_epi8(a, b);
    if constexpr (sizeof(T) == 4) return _mm512_add_epi32(a, b);
    if constexpr (sizeof(T) == 8) return _mm512_add_epi64(a, b);
  }

  // 8 bits: even bytes multiply in place in 16-bit lanes, odd bytes after a
  // shift down (a low byte of a product depends only on the factors' low
  // bytes). Low halves of products are the wrapped result, signed or not.
  template <typename T>
  static __m512i IntMul(__m512i a, __m512i b) {
    if constexpr (sizeof(T) == 1) {
      const __m512i even = _mm512_mullo_epi16(a, b);
      const __m512i odd = _mm512_mullo_epi16(_mm512_srli_epi16(a, 8), _mm512_srli_epi16(b, 8));
      return _mm512_or_si512(_mm512_and_si512(even, _mm512_set1_epi16(0x00ff)),
                             _mm512_slli_epi16(odd, 8));
    }
    if constexpr (sizeof(T) == 4) return _mm512_mullo_epi32(a, b);
    if constexpr (sizeof(T) == 8) return _mm512_mullo_epi64(a, b);
  }

  template <typename T>
  static __m512i IntMax(__m512i a, __m512i b) {
    constexpr bool kSigned = std::is_signed_v<T>;
    if constexpr (sizeof(T) == 1) return kSigned ? _mm512_max_epi8(a, b) : _mm512_max_epu8(a, b);
    if constexpr (sizeof(T) == 4) return kSigned ? _mm512_max_epi32(a, b) : _mm512_max_epu32(a, b);
    if constexpr (sizeof(T) == 8) return kSigned ? _mm512_max_epi64(a, b) : _mm512_max_epu64(a, b);
  }

  template <typename T>
  static __m512i IntMin(__m512i a, __m512i b) {
    constexpr bool kSigned = std::is_signed_v<T>;
    if constexpr (sizeof(T) == 1) return kSigned ? _mm512_min_epi8(a, b) : _mm512_min_epu8(a, b);
    if constexpr (sizeof(T) == 4) return kSigned ? _mm512_min_epi32(a, b) : _mm512_min_epu32(a, b);
    if constexpr (sizeof(T) == 8) return kSigned ? _mm512_min_epi64(a, b) : _mm512_min_epu64(a, b);
  }
};

}  // namespace

const KernelTable& Avx512KernelsUnchecked() {
  static const KernelTable table = MakeSimdTable<Avx512Traits>();
  return table;
}

}  // namespace chorus::kernels
