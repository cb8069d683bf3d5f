// Exact IEEE conversions between float32 and the 16-bit float formats
// (binary16 "half" and bfloat16), shared by the CPU and CUDA kernels. Written as bit manipulation plus selects,
// without table lookups, so that the kernels' loops stay vectorisable.
//
// Guarantees (in the default round-to-nearest mode; FTZ/DAZ do not matter,
// since no intermediate is a float subnormal unless the input is one):
//  - HalfToFloat / Bfloat16ToFloat are exact for every input; NaN stays NaN
//    with its payload shifted into the float mantissa.
//  - FloatToHalf rounds to nearest, ties to even, produces correct
//    subnormals, overflows to +/-inf, and turns NaN into a quiet NaN of the
//    same sign keeping the top payload bits.
//  - FloatToBfloat16 rounds to nearest, ties to even, on the upper 16 bits;
//    overflow rounds to +/-inf; NaN becomes a quiet NaN (never inf).
#pragma once

#include <cstdint>

#include "base/host_device.h"

namespace chorus {

namespace half_internal {
CHORUS_HOST_DEVICE inline uint32_t FloatBits(float f) { return BitCast<uint32_t>(f); }
CHORUS_HOST_DEVICE inline float BitsToFloat(uint32_t u) { return BitCast<float>(u); }
}  // namespace half_internal

// Both conversions compute every candidate result and pick one with selects
// (no branches), which lets the compiler vectorise loops that call them.
CHORUS_HOST_DEVICE inline float HalfToFloat(uint16_t h) {
  using half_internal::BitsToFloat;
  using half_internal::FloatBits;
  constexpr uint32_t kShiftedExponent = 0x7c00u << 13;  // half exponent in float position
  const uint32_t magnitude = (static_cast<uint32_t>(h) & 0x7fffu) << 13;
  const uint32_t exponent = magnitude & kShiftedExponent;
  const uint32_t normal = magnitude + ((127u - 15u) << 23);  // rebias the exponent
  const uint32_t inf_or_nan = normal + ((128u - 16u) << 23);  // exponent all ones
  // Zero or subnormal: let the FPU normalise; mantissa * 2^-24 is exact.
  const uint32_t subnormal =
      FloatBits(BitsToFloat(normal + (1u << 23)) - BitsToFloat(113u << 23));
  uint32_t bits = exponent == kShiftedExponent ? inf_or_nan : normal;
  bits = exponent == 0 ? subnormal : bits;
  return BitsToFloat(bits | ((static_cast<uint32_t>(h) & 0x8000u) << 16));
}

CHORUS_HOST_DEVICE inline uint16_t FloatToHalf(float f) {
  using half_internal::BitsToFloat;
  using half_internal::FloatBits;
  const uint32_t all = FloatBits(f);
  const uint32_t sign = all & 0x80000000u;
  const uint32_t bits = all ^ sign;
  // |f| >= 65536, inf or NaN: inf, or a quiet NaN keeping the top payload.
  const uint32_t nan = 0x7e00u | ((bits >> 13) & 0x3ffu);
  const uint32_t too_big = bits > 0x7f800000u ? nan : 0x7c00u;
  // |f| < 2^-14: adding 0.5 aligns the half's subnormal grid with the
  // float's last mantissa bits, so the FPU's round-to-nearest-even rounds.
  constexpr uint32_t kDenormMagic = ((127u - 15u) + (23u - 10u) + 1u) << 23;
  const uint32_t subnormal =
      FloatBits(BitsToFloat(bits) + BitsToFloat(kDenormMagic)) - kDenormMagic;
  // Normal: rebias, add just under half an ulp, plus one on odd mantissas so
  // that ties go to even. A carry out of 0x7bff lands on 0x7c00 = inf.
  const uint32_t mantissa_odd = (bits >> 13) & 1u;
  const uint32_t normal = (bits + ((15u - 127u) << 23) + 0xfffu + mantissa_odd) >> 13;
  uint32_t out = bits >= (143u << 23) ? too_big : normal;
  out = bits < (113u << 23) ? subnormal : out;
  return static_cast<uint16_t>(out | (sign >> 16));
}

CHORUS_HOST_DEVICE inline float Bfloat16ToFloat(uint16_t b) {
  return half_internal::BitsToFloat(static_cast<uint32_t>(b) << 16);
}

CHORUS_HOST_DEVICE inline uint16_t FloatToBfloat16(float f) {
  const uint32_t bits = half_internal::FloatBits(f);
  if ((bits & 0x7fffffffu) > 0x7f800000u) {
    return static_cast<uint16_t>((bits >> 16) | 0x0040u);  // quiet NaN
  }
  const uint32_t rounding = 0x7fffu + ((bits >> 16) & 1u);
  return static_cast<uint16_t>((bits + rounding) >> 16);
}

}  // namespace chorus
