// The bulk fp16/bf16 <-> float32 conversions of every kernel table this CPU
// runs (portable, AVX2 + F16C, AVX-512; each one explicitly, not only the
// dispatched one) and the kernels/convert.h entry points, bit for bit against
// base/half.h's scalar functions: every 16-bit pattern widened; >= 2^20 random
// float patterns, the special values and every rounding tie (and its float
// neighbours) narrowed; every length 0..67 at unaligned starts with guards.
#include "kernels/convert.h"

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "base/half.h"
#include "kernels/kernel_table.h"

namespace chorus::kernels {
namespace {

using half_internal::BitsToFloat;
using half_internal::FloatBits;

// One format's four functions: the kernel under test and its scalar reference.
struct Format {
  const char* name;
  WidenFn widen;
  NarrowFn narrow;
  float (*scalar_widen)(uint16_t);
  uint16_t (*scalar_narrow)(float);
};

std::vector<Format> FormatsOf(const KernelTable& table) {
  return {{"fp16", table.half_to_float, table.float_to_half, &HalfToFloat, &FloatToHalf},
          {"bf16", table.bfloat16_to_float, table.float_to_bfloat16, &Bfloat16ToFloat,
           &FloatToBfloat16}};
}

// The dispatched entry points of kernels/convert.h.
std::vector<Format> PublicFormats() {
  return {{"fp16", &HalfToFloatKernel, &FloatToHalfKernel, &HalfToFloat, &FloatToHalf},
          {"bf16", &Bfloat16ToFloatKernel, &FloatToBfloat16Kernel, &Bfloat16ToFloat,
           &FloatToBfloat16}};
}

std::vector<uint16_t> AllWords() {
  std::vector<uint16_t> words(65536);
  for (uint32_t w = 0; w < 65536; ++w) words[w] = static_cast<uint16_t>(w);
  return words;
}

// Specials, the midpoint between every pair of adjacent fp16 values (the
// round-half-to-even ties, incl. subnormal ones and 65520 -> inf) and every
// bf16 tie (low half 0x8000), each with its float neighbours, then 2^20
// random patterns.
std::vector<uint32_t> FloatPatterns() {
  std::vector<uint32_t> patterns = {
      0x00000000, 0x80000000, 0x7f800000, 0xff800000,  // +-0, +-inf
      0x7fc00000, 0xffc00000, 0x7f800001, 0xff800001,  // quiet / signaling NaNs
      0x7fa00000, 0x7f802000, 0x7f801fff, 0x7fbfffff, 0x7fffffff, 0xffffffff,
      0x00000001, 0x807fffff, 0x00800000, 0x7f7fffff, 0xff7fffff,  // float extremes
      0x477fe000, 0x477fefff, 0x477ff000, 0x477ff001, 0x47800000,  // 65504 .. 65536
      0x33800000, 0x33000000, 0x33000001, 0x32ffffff, 0x33c00000,  // 2^-24, 2^-25, ...
      0x38800000, 0x387fe000, 0x387ff000, 0x38800001,               // fp16 min normal
      0x3f800000, 0xbf800000, 0x3f801000, 0x3f803000, 0x3f808000, 0x3f818000};
  for (uint32_t h = 0; h < 0x7c00; ++h) {  // positive finite halves; signs below
    const uint32_t low = FloatBits(HalfToFloat(static_cast<uint16_t>(h)));
    const uint32_t high = h + 1 == 0x7c00 ? 0x47800000 : FloatBits(HalfToFloat(static_cast<uint16_t>(h + 1)));
    const uint32_t tie = FloatBits((BitsToFloat(low) + BitsToFloat(high)) * 0.5f);  // exact
    for (uint32_t bits : {tie - 1, tie, tie + 1}) {
      patterns.push_back(bits);
      patterns.push_back(bits | 0x80000000u);
    }
  }
  for (uint32_t upper = 0; upper < 65536; ++upper) {
    for (uint32_t lower : {0x7fffu, 0x8000u, 0x8001u}) patterns.push_back(upper << 16 | lower);
  }
  std::mt19937 rng(20261121);
  for (int i = 0; i < (1 << 20); ++i) patterns.push_back(static_cast<uint32_t>(rng()));
  return patterns;
}

class ConvertKernelTest : public ::testing::TestWithParam<KernelIsa> {
 protected:
  void SetUp() override {
    const KernelTable* table = KernelsFor(GetParam());
    if (table == nullptr) GTEST_SKIP() << "this CPU (or build) has no such kernel table";
    formats_ = FormatsOf(*table);
  }
  std::vector<Format> formats_;
};

void ExpectAllWordsWiden(const Format& format) {
  const std::vector<uint16_t> words = AllWords();
  std::vector<float> out(words.size());
  format.widen(out.data(), words.data(), words.size());
  int mismatches = 0;
  for (size_t i = 0; i < words.size() && mismatches < 10; ++i) {
    const uint32_t want = FloatBits(format.scalar_widen(words[i]));
    if (FloatBits(out[i]) != want) {
      ++mismatches;
      ADD_FAILURE() << format.name << " 0x" << std::hex << words[i] << " widened to 0x" << FloatBits(out[i])
                    << ", scalar gives 0x" << want;
    }
  }
}

void ExpectFloatPatternsNarrow(const Format& format) {
  const std::vector<uint32_t> patterns = FloatPatterns();
  std::vector<float> in(patterns.size());
  for (size_t i = 0; i < patterns.size(); ++i) in[i] = BitsToFloat(patterns[i]);
  std::vector<uint16_t> out(in.size());
  format.narrow(out.data(), in.data(), in.size());
  int mismatches = 0;
  for (size_t i = 0; i < in.size() && mismatches < 10; ++i) {
    const uint16_t want = format.scalar_narrow(in[i]);
    if (out[i] != want) {
      ++mismatches;
      ADD_FAILURE() << format.name << " float 0x" << std::hex << patterns[i] << " narrowed to 0x"
                    << out[i] << ", scalar gives 0x" << want;
    }
  }
}

// Every length 0..67 (several whole vectors of either ISA plus every tail),
// inputs and outputs starting 0..3 elements past a vector boundary; elements
// past the end must stay untouched.
void ExpectEveryLengthAndStart(const Format& format) {
  constexpr size_t kMax = 67;
  constexpr size_t kGuard = 5;
  constexpr uint16_t kWordGuard = 0xa5a5;
  constexpr float kFloatGuard = -7.25f;
  std::mt19937 rng(67);
  alignas(64) uint16_t words_in[4 + kMax];
  alignas(64) float floats_in[4 + kMax];
  alignas(64) uint16_t words_out[4 + kMax + kGuard];
  alignas(64) float floats_out[4 + kMax + kGuard];
  for (size_t start = 0; start < 4; ++start) {
    for (size_t n = 0; n <= kMax; ++n) {
      for (size_t i = 0; i < n; ++i) {
        words_in[start + i] = static_cast<uint16_t>(rng());
        floats_in[start + i] = BitsToFloat(static_cast<uint32_t>(rng()));
      }
      for (size_t i = 0; i < n + kGuard; ++i) {
        floats_out[start + i] = kFloatGuard;
        words_out[start + i] = kWordGuard;
      }
      format.widen(floats_out + start, words_in + start, n);
      format.narrow(words_out + start, floats_in + start, n);
      for (size_t i = 0; i < n; ++i) {
        ASSERT_EQ(FloatBits(floats_out[start + i]), FloatBits(format.scalar_widen(words_in[start + i])))
            << format.name << " widen, length " << n << ", start " << start << ", element " << i;
        ASSERT_EQ(words_out[start + i], format.scalar_narrow(floats_in[start + i]))
            << format.name << " narrow, length " << n << ", start " << start << ", element " << i;
      }
      for (size_t g = n; g < n + kGuard; ++g) {
        ASSERT_EQ(FloatBits(floats_out[start + g]), FloatBits(kFloatGuard)) << "widen wrote past length " << n;
        ASSERT_EQ(words_out[start + g], kWordGuard) << "narrow wrote past length " << n;
      }
    }
  }
}

TEST_P(ConvertKernelTest, EverySixteenBitPatternWidensLikeTheScalar) {
  for (const Format& format : formats_) ExpectAllWordsWiden(format);
}

TEST_P(ConvertKernelTest, FloatPatternsTiesAndSpecialsNarrowLikeTheScalar) {
  for (const Format& format : formats_) ExpectFloatPatternsNarrow(format);
}

TEST_P(ConvertKernelTest, EveryLengthAndUnalignedStart) {
  for (const Format& format : formats_) ExpectEveryLengthAndStart(format);
}

INSTANTIATE_TEST_SUITE_P(EveryIsa, ConvertKernelTest,
                         ::testing::Values(KernelIsa::kPortable, KernelIsa::kAvx2, KernelIsa::kAvx512),
                         [](const ::testing::TestParamInfo<KernelIsa>& info) -> std::string {
                           switch (info.param) {
                             case KernelIsa::kPortable: return "portable";
                             case KernelIsa::kAvx2: return "avx2";
                             case KernelIsa::kAvx512: return "avx512";
                           }
                           return "unknown";
                         });

// The dispatched entry points reach the same results (and do nothing at 0).
TEST(ConvertKernelEntryPoints, MatchTheScalarFunctions) {
  for (const Format& format : PublicFormats()) {
    ExpectAllWordsWiden(format);
    ExpectFloatPatternsNarrow(format);
    ExpectEveryLengthAndStart(format);
  }
}

// The checks above are only as strong as the ISAs that ran: name them.
TEST(ConvertKernelEntryPoints, ReportsTheTablesTested) {
  std::string tested;
  for (KernelIsa isa : {KernelIsa::kPortable, KernelIsa::kAvx2, KernelIsa::kAvx512}) {
    if (const KernelTable* table = KernelsFor(isa)) tested += std::string(" ") + table->name;
  }
  std::printf("kernel tables on this CPU:%s; dispatched: %s\n", tested.c_str(), ActiveKernels().name);
  EXPECT_NE(tested.find("portable"), std::string::npos);
}

}  // namespace
}  // namespace chorus::kernels
