// Every SIMD kernel table this CPU can run (AVX2, AVX-512) against the
// portable reference: random bit patterns mixed with special values (NaN
// with payloads, +-inf, subnormals, +-0, integer extremes), every length
// 0..64 plus long ones, every aliasing pattern, guard elements after the
// end. Outputs, inputs and guards must be bit-identical.
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include <gtest/gtest.h>

#include "base/dtype.h"
#include "base/half.h"
#include "kernels/kernel_table.h"

namespace chorus::kernels {
namespace {

using Bytes = std::vector<unsigned char>;

constexpr size_t kGuard = 7;

std::vector<size_t> Lengths() {
  std::vector<size_t> lengths;
  for (size_t n = 0; n <= 64; ++n) lengths.push_back(n);
  lengths.push_back(1000);
  lengths.push_back(4099);
  return lengths;
}

template <typename T>
void Put(Bytes& out, size_t index, T value) {
  std::memcpy(out.data() + index * sizeof(T), &value, sizeof(T));
}

// Bit patterns worth hitting on purpose, per element size and kind.
std::vector<uint64_t> SpecialValues(DataType dtype) {
  switch (dtype) {
    case chorusFloat32:
      return {0x00000000, 0x80000000, 0x7f800000, 0xff800000, 0x7fc00000, 0xffc12345,
              0x7f800001, 0x7fa00abc, 0x00000001, 0x807fffff, 0x7f7fffff, 0xff7fffff,
              0x3f800000, 0xbf800000, 0x00800000, 0x3f808000};
    case chorusFloat64:
      return {0x0000000000000000, 0x8000000000000000, 0x7ff0000000000000, 0xfff0000000000000,
              0x7ff8000000000000, 0xfff8000012345678, 0x7ff0000000000001, 0x0000000000000001,
              0x800fffffffffffff, 0x7fefffffffffffff, 0x3ff0000000000000, 0xbff0000000000000};
    case chorusFloat16:
      return {0x0000, 0x8000, 0x7c00, 0xfc00, 0x7e00, 0xfe55, 0x7c01, 0x7d23, 0x0001,
              0x83ff, 0x7bff, 0xfbff, 0x3c00, 0xbc00, 0x0400, 0x3c01};
    case chorusBfloat16:
      return {0x0000, 0x8000, 0x7f80, 0xff80, 0x7fc0, 0xffc5, 0x7f81, 0x7fa3, 0x0001,
              0x807f, 0x7f7f, 0xff7f, 0x3f80, 0xbf80, 0x0080, 0x3f81};
    default:  // integers: 0, 1, all ones (-1 / max unsigned), both extremes
      return {0, 1, ~uint64_t{0}, uint64_t{1} << (DataTypeSize(dtype) * 8 - 1),
              (uint64_t{1} << (DataTypeSize(dtype) * 8 - 1)) - 1, 2};
  }
}

// n elements plus guards: a quarter special values, the rest random bits.
Bytes RandomElements(DataType dtype, size_t n, std::mt19937_64& rng) {
  const size_t size = DataTypeSize(dtype);
  const std::vector<uint64_t> specials = SpecialValues(dtype);
  Bytes out((n + kGuard) * size);
  for (size_t i = 0; i < n + kGuard; ++i) {
    const uint64_t random = rng();
    const uint64_t bits = random % 4 == 0 ? specials[(random >> 8) % specials.size()] : rng();
    std::memcpy(out.data() + i * size, &bits, size);  // little-endian: low bytes
  }
  return out;
}

enum class Aliasing { kNone, kDstIsA, kDstIsB, kAllSame };

// Runs one reduce and returns a, b and dst (guards included) concatenated.
Bytes RunReduce(ReduceFn fn, Bytes a, Bytes b, Bytes dst, size_t n, Aliasing aliasing) {
  void* out = dst.data();
  const void* x = a.data();
  const void* y = b.data();
  if (aliasing == Aliasing::kDstIsA) out = a.data();
  if (aliasing == Aliasing::kDstIsB) out = b.data();
  if (aliasing == Aliasing::kAllSame) out = a.data(), y = a.data();
  fn(out, x, y, n);
  Bytes all = a;
  all.insert(all.end(), b.begin(), b.end());
  all.insert(all.end(), dst.begin(), dst.end());
  return all;
}

// "" when equal, else the first differing byte offset and its 8 bytes.
std::string FirstDifference(const Bytes& actual, const Bytes& expected) {
  if (actual == expected) return "";
  if (actual.size() != expected.size()) return "sizes differ";
  size_t at = 0;
  while (actual[at] == expected[at]) ++at;
  at -= at % 8;
  char text[96];
  uint64_t got = 0, want = 0;
  std::memcpy(&got, actual.data() + at, std::min<size_t>(8, actual.size() - at));
  std::memcpy(&want, expected.data() + at, std::min<size_t>(8, expected.size() - at));
  std::snprintf(text, sizeof(text), "byte %zu: got %016llx want %016llx", at,
                static_cast<unsigned long long>(got), static_cast<unsigned long long>(want));
  return text;
}

const char* IsaName(KernelIsa isa) { return isa == KernelIsa::kAvx2 ? "avx2" : "avx512"; }

class SimdKernelTest : public ::testing::TestWithParam<std::tuple<KernelIsa, DataType>> {
 protected:
  void SetUp() override {
    table_ = KernelsFor(std::get<0>(GetParam()));
    if (table_ == nullptr) GTEST_SKIP() << "this CPU or build lacks " << IsaName(std::get<0>(GetParam()));
  }
  const KernelTable* table_ = nullptr;
  const KernelTable& reference_ = PortableKernels();
  std::mt19937_64 rng_{20261121};
};

TEST_P(SimdKernelTest, ReduceIsBitIdenticalToPortable) {
  const DataType dtype = std::get<1>(GetParam());
  for (int op = 0; op < kNumReduceOps; ++op) {
    for (size_t n : Lengths()) {
      const Bytes a = RandomElements(dtype, n, rng_);
      const Bytes b = RandomElements(dtype, n, rng_);
      const Bytes dst = RandomElements(dtype, n, rng_);
      for (Aliasing aliasing : {Aliasing::kNone, Aliasing::kDstIsA, Aliasing::kDstIsB,
                                Aliasing::kAllSame}) {
        ASSERT_EQ(FirstDifference(RunReduce(table_->reduce[dtype][op], a, b, dst, n, aliasing),
                                  RunReduce(reference_.reduce[dtype][op], a, b, dst, n, aliasing)),
                  "")
            << ReduceOpName(static_cast<ReduceOp>(op)) << " n=" << n
            << " aliasing=" << static_cast<int>(aliasing);
      }
    }
  }
}

TEST_P(SimdKernelTest, ScaleIsBitIdenticalToPortable) {
  const DataType dtype = std::get<1>(GetParam());
  for (size_t n : Lengths()) {
    const Bytes src = RandomElements(dtype, n, rng_);
    const Bytes scalar = RandomElements(dtype, 1, rng_);  // element 0 is the factor
    for (bool in_place : {false, true}) {
      Bytes expected_src = src, actual_src = src;
      Bytes expected_dst = RandomElements(dtype, n, rng_);
      Bytes actual_dst = expected_dst;
      reference_.scale[dtype](in_place ? expected_src.data() : expected_dst.data(),
                              expected_src.data(), n, scalar.data());
      table_->scale[dtype](in_place ? actual_src.data() : actual_dst.data(), actual_src.data(),
                           n, scalar.data());
      ASSERT_EQ(FirstDifference(actual_src, expected_src), "") << "n=" << n << " in_place=" << in_place;
      ASSERT_EQ(FirstDifference(actual_dst, expected_dst), "") << "n=" << n << " in_place=" << in_place;
    }
  }
}

TEST_P(SimdKernelTest, DivideIsBitIdenticalToPortable) {
  const DataType dtype = std::get<1>(GetParam());
  for (int divisor : {1, 2, 3, 7, -5, 1000003}) {
    for (size_t n : Lengths()) {
      Bytes expected = RandomElements(dtype, n, rng_);
      Bytes actual = expected;
      reference_.divide[dtype](expected.data(), n, divisor);
      table_->divide[dtype](actual.data(), n, divisor);
      ASSERT_EQ(FirstDifference(actual, expected), "") << "divisor=" << divisor << " n=" << n;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(
    EveryIsaAndType, SimdKernelTest,
    ::testing::Combine(::testing::Values(KernelIsa::kAvx2, KernelIsa::kAvx512),
                       ::testing::Values(chorusInt8, chorusUint8, chorusInt32, chorusUint32,
                                         chorusInt64, chorusUint64, chorusFloat16,
                                         chorusFloat32, chorusFloat64, chorusBfloat16)),
    [](const ::testing::TestParamInfo<SimdKernelTest::ParamType>& info) {
      return std::string(IsaName(std::get<0>(info.param))) + "_" +
             DataTypeName(std::get<1>(info.param));
    });

// The NaN rule spelled out (not only "same as portable"): Max/Min return the
// second operand when either is NaN, so NaN propagates only from b; +0/-0
// also return b. 37 elements put cases in vector bodies and tails alike.
TEST(SimdKernelNanOrderTest, MaxMinReturnSecondOperandOnNanAndZeros) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  for (KernelIsa isa : {KernelIsa::kPortable, KernelIsa::kAvx2, KernelIsa::kAvx512}) {
    const KernelTable* table = KernelsFor(isa);
    if (table == nullptr) continue;
    constexpr size_t kCount = 37;
    std::vector<float> a(kCount), b(kCount), max(kCount), min(kCount);
    for (size_t i = 0; i < kCount; ++i) {
      a[i] = i % 3 == 0 ? nan : (i % 3 == 1 ? 1.0f : 0.0f);
      b[i] = i % 3 == 0 ? 1.0f : (i % 3 == 1 ? nan : -0.0f);
    }
    table->reduce[chorusFloat32][static_cast<int>(ReduceOp::kMax)](max.data(), a.data(), b.data(), kCount);
    table->reduce[chorusFloat32][static_cast<int>(ReduceOp::kMin)](min.data(), a.data(), b.data(), kCount);
    for (size_t i = 0; i < kCount; ++i) {
      for (const std::vector<float>* result : {&max, &min}) {
        uint32_t got, want;
        std::memcpy(&got, &(*result)[i], 4);
        std::memcpy(&want, &b[i], 4);
        EXPECT_EQ(got, want) << table->name << " i=" << i;
      }
    }
  }
}

// Sum and Prod of two NaNs return a's NaN, quieted, in every table (the
// compiler may not reorder operands into a different payload).
TEST(SimdKernelNanOrderTest, SumAndProdOfTwoNansReturnFirstQuieted) {
  constexpr uint32_t kSignalingA = 0x7f800abc, kQuietB = 0xffc12345;
  for (KernelIsa isa : {KernelIsa::kPortable, KernelIsa::kAvx2, KernelIsa::kAvx512}) {
    const KernelTable* table = KernelsFor(isa);
    if (table == nullptr) continue;
    for (ReduceOp op : {ReduceOp::kSum, ReduceOp::kProd}) {
      constexpr size_t kCount = 37;
      std::vector<uint32_t> a(kCount, kSignalingA), b(kCount, kQuietB), out(kCount);
      table->reduce[chorusFloat32][static_cast<int>(op)](out.data(), a.data(), b.data(), kCount);
      for (size_t i = 0; i < kCount; ++i) {
        EXPECT_EQ(out[i], kSignalingA | 0x00400000u) << table->name << " i=" << i;
      }
    }
  }
}

TEST(SimdKernelDispatchTest, ActiveTableIsTheMostCapableAvailable) {
  const KernelTable* best = &PortableKernels();
  for (KernelIsa isa : {KernelIsa::kAvx2, KernelIsa::kAvx512}) {
    if (const KernelTable* table = KernelsFor(isa)) best = table;
  }
  EXPECT_EQ(&ActiveKernels(), best) << ActiveKernels().name;
  EXPECT_STREQ(KernelsFor(KernelIsa::kPortable)->name, "portable");
}

}  // namespace
}  // namespace chorus::kernels
