// fp16 and bf16 conversions: exhaustive round trips and the rounding cases
// that matter (ties to even, subnormals, overflow, NaN).
#include "base/half.h"

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>

#include <gtest/gtest.h>

namespace chorus {
namespace {

using half_internal::BitsToFloat;
using half_internal::FloatBits;

bool IsHalfNan(uint16_t h) { return (h & 0x7c00u) == 0x7c00u && (h & 0x3ffu) != 0; }

// Independent definition of binary16 value: (-1)^s * m * 2^(e-25) style.
double ReferenceHalfValue(uint16_t h) {
  const int sign = (h >> 15) ? -1 : 1;
  const int exponent = (h >> 10) & 0x1f;
  const int mantissa = h & 0x3ff;
  if (exponent == 0) return sign * std::ldexp(mantissa, -24);
  if (exponent == 31) return mantissa ? std::nan("") : sign * HUGE_VAL;
  return sign * std::ldexp(1024 + mantissa, exponent - 25);
}

TEST(HalfTest, EveryHalfConvertsToItsExactFloatValue) {
  for (uint32_t h = 0; h < 65536; ++h) {
    const float f = HalfToFloat(static_cast<uint16_t>(h));
    const double expected = ReferenceHalfValue(static_cast<uint16_t>(h));
    if (std::isnan(expected)) {
      ASSERT_TRUE(std::isnan(f)) << h;
      ASSERT_EQ(FloatBits(f) >> 31, h >> 15) << h;  // sign kept
    } else {
      ASSERT_EQ(static_cast<double>(f), expected) << h;
      ASSERT_EQ(std::signbit(f), (h >> 15) != 0) << h;  // -0.0 stays -0.0
    }
  }
}

TEST(HalfTest, EveryHalfRoundTripsThroughFloat) {
  for (uint32_t h = 0; h < 65536; ++h) {
    const uint16_t back = FloatToHalf(HalfToFloat(static_cast<uint16_t>(h)));
    if (IsHalfNan(static_cast<uint16_t>(h))) {
      // Signalling NaNs come back quiet; sign and payload are kept.
      ASSERT_EQ(back, h | 0x200u) << h;
    } else {
      ASSERT_EQ(back, h) << h;
    }
  }
}

// Between every pair of adjacent positive halves: the exact midpoint rounds
// to the even one, one float ulp either side rounds to the nearer one.
TEST(HalfTest, MidpointsRoundToNearestEven) {
  for (uint32_t h = 0; h < 0x7c00u; ++h) {
    const uint16_t lo = static_cast<uint16_t>(h);
    const uint16_t hi = static_cast<uint16_t>(h + 1);  // 0x7c00 is inf: overflow case
    const float lo_value = HalfToFloat(lo);
    const float hi_value = hi == 0x7c00u ? 65536.0f : HalfToFloat(hi);
    const float mid = (lo_value + hi_value) / 2;  // exact: 12 significant bits
    const uint16_t even = (lo & 1u) ? hi : lo;
    ASSERT_EQ(FloatToHalf(mid), even) << h;
    ASSERT_EQ(FloatToHalf(std::nextafter(mid, 0.0f)), lo) << h;
    ASSERT_EQ(FloatToHalf(std::nextafter(mid, HUGE_VALF)), hi) << h;
    ASSERT_EQ(FloatToHalf(-mid), even | 0x8000u) << h;
  }
}

TEST(HalfTest, NamedRoundingCases) {
  EXPECT_EQ(FloatToHalf(0.0f), 0x0000);
  EXPECT_EQ(FloatToHalf(-0.0f), 0x8000);
  EXPECT_EQ(FloatToHalf(1.0f), 0x3c00);
  EXPECT_EQ(FloatToHalf(65504.0f), 0x7bff);          // largest finite
  EXPECT_EQ(FloatToHalf(65519.996f), 0x7bff);        // just below the tie
  EXPECT_EQ(FloatToHalf(65520.0f), 0x7c00);          // tie rounds to inf
  EXPECT_EQ(FloatToHalf(1e10f), 0x7c00);
  EXPECT_EQ(FloatToHalf(-1e10f), 0xfc00);
  EXPECT_EQ(FloatToHalf(std::numeric_limits<float>::max()), 0x7c00);
  EXPECT_EQ(FloatToHalf(HUGE_VALF), 0x7c00);
  EXPECT_EQ(FloatToHalf(-HUGE_VALF), 0xfc00);
  EXPECT_EQ(FloatToHalf(0x1p-14f), 0x0400);          // smallest normal
  EXPECT_EQ(FloatToHalf(0x1.ff8p-15f), 0x03ff);      // largest subnormal
  EXPECT_EQ(FloatToHalf(0x1p-24f), 0x0001);          // smallest subnormal
  EXPECT_EQ(FloatToHalf(0x1p-25f), 0x0000);          // tie -> even (zero)
  EXPECT_EQ(FloatToHalf(0x1.000002p-25f), 0x0001);   // just above the tie
  EXPECT_EQ(FloatToHalf(0x1.8p-24f), 0x0002);        // tie 1|2 -> 2
  EXPECT_EQ(FloatToHalf(0x1.4p-23f), 0x0002);        // tie 2|3 -> 2
  EXPECT_EQ(FloatToHalf(-0x1p-26f), 0x8000);         // underflow keeps the sign
  EXPECT_EQ(FloatToHalf(0x1p-149f), 0x0000);         // float subnormal
  EXPECT_EQ(FloatToHalf(2049.0f), 0x6800);           // tie -> 2048 (even)
  EXPECT_EQ(FloatToHalf(2051.0f), 0x6802);           // tie -> 2052 (even)
  EXPECT_EQ(FloatToHalf(1.0f + 0x1p-11f), 0x3c00);   // tie -> 1.0
  EXPECT_EQ(FloatToHalf(1.0f + 0x1.8p-10f), 0x3c02); // tie 1|2 ulps -> 2
}

TEST(HalfTest, NanStaysQuietNan) {
  const float quiet = std::numeric_limits<float>::quiet_NaN();
  const uint16_t h = FloatToHalf(quiet);
  EXPECT_TRUE(IsHalfNan(h));
  EXPECT_NE(h & 0x200u, 0u);
  EXPECT_EQ(FloatToHalf(-quiet), h | 0x8000u);
  // A float NaN whose payload lives only in the low 13 bits must not turn
  // into inf.
  const uint16_t low_payload = FloatToHalf(BitsToFloat(0x7f800001u));
  EXPECT_TRUE(IsHalfNan(low_payload));
  EXPECT_EQ(low_payload, 0x7e00);
  EXPECT_EQ(FloatToHalf(BitsToFloat(0x7fa00000u)), 0x7f00);  // payload kept, quieted
  EXPECT_TRUE(std::isnan(HalfToFloat(0x7e00)));
  EXPECT_TRUE(std::isnan(HalfToFloat(0x7c01)));
  EXPECT_TRUE(std::isinf(HalfToFloat(0x7c00)));
}

TEST(Bfloat16Test, EveryBfloat16RoundTripsThroughFloat) {
  for (uint32_t b = 0; b < 65536; ++b) {
    const float f = Bfloat16ToFloat(static_cast<uint16_t>(b));
    ASSERT_EQ(FloatBits(f), b << 16) << b;
    const uint16_t back = FloatToBfloat16(f);
    const bool is_nan = (b & 0x7f80u) == 0x7f80u && (b & 0x7fu) != 0;
    ASSERT_EQ(back, is_nan ? (b | 0x40u) : b) << b;
  }
}

TEST(Bfloat16Test, RoundsToNearestEven) {
  EXPECT_EQ(FloatToBfloat16(BitsToFloat(0x3f808000u)), 0x3f80);  // tie -> even
  EXPECT_EQ(FloatToBfloat16(BitsToFloat(0x3f818000u)), 0x3f82);  // tie -> even (up)
  EXPECT_EQ(FloatToBfloat16(BitsToFloat(0x3f807fffu)), 0x3f80);
  EXPECT_EQ(FloatToBfloat16(BitsToFloat(0x3f808001u)), 0x3f81);
  EXPECT_EQ(FloatToBfloat16(257.0f), 0x4380);  // tie -> 256
  EXPECT_EQ(FloatToBfloat16(259.0f), 0x4382);  // tie -> 260
  EXPECT_EQ(FloatToBfloat16(BitsToFloat(0x7f7fffffu)), 0x7f80);  // FLT_MAX -> inf
  EXPECT_EQ(FloatToBfloat16(BitsToFloat(0x7f7f7fffu)), 0x7f7f);
  EXPECT_EQ(FloatToBfloat16(-HUGE_VALF), 0xff80);
  EXPECT_EQ(FloatToBfloat16(-0.0f), 0x8000);
  EXPECT_EQ(FloatToBfloat16(BitsToFloat(0x00008000u)), 0x0000);  // subnormal tie -> 0
  EXPECT_EQ(FloatToBfloat16(BitsToFloat(0x00018000u)), 0x0002);
}

TEST(Bfloat16Test, NanNeverBecomesInf) {
  EXPECT_EQ(FloatToBfloat16(BitsToFloat(0x7f800001u)), 0x7fc0);
  EXPECT_EQ(FloatToBfloat16(BitsToFloat(0xff800001u)), 0xffc0);
  EXPECT_EQ(FloatToBfloat16(BitsToFloat(0x7fffffffu)), 0x7fff);
  EXPECT_EQ(FloatToBfloat16(std::numeric_limits<float>::quiet_NaN()), 0x7fc0);
  EXPECT_TRUE(std::isnan(Bfloat16ToFloat(0x7fc0)));
}

}  // namespace
}  // namespace chorus
