// ReduceKernel: exact results for every dtype x op on crafted inputs
// (negative numbers, wrap-around, infinities, rounding ties).
#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include <gtest/gtest.h>

#include "kernel_test_util.h"

namespace chorus {
namespace {

using testing::BitsOf;
using testing::Reduced;

template <typename T>
void ExpectAllOps(const std::vector<T>& a, const std::vector<T>& b, DataType dtype,
                  const std::vector<T>& sum, const std::vector<T>& prod,
                  const std::vector<T>& max, const std::vector<T>& min) {
  EXPECT_EQ(Reduced(a, b, dtype, ReduceOp::kSum), sum) << "sum";
  EXPECT_EQ(Reduced(a, b, dtype, ReduceOp::kProd), prod) << "prod";
  EXPECT_EQ(Reduced(a, b, dtype, ReduceOp::kMax), max) << "max";
  EXPECT_EQ(Reduced(a, b, dtype, ReduceOp::kMin), min) << "min";
}

TEST(ReduceKernelTest, Int8WrapsAndComparesSigned) {
  ExpectAllOps<int8_t>({-128, 127, -1, 100, -7, 0}, {-1, 1, -1, 100, 3, -128}, chorusInt8,
                       {127, -128, -2, -56, -4, -128},
                       {-128, 127, 1, 16, -21, 0},
                       {-1, 127, -1, 100, 3, 0},
                       {-128, 1, -1, 100, -7, -128});
}

TEST(ReduceKernelTest, Uint8WrapsAndComparesUnsigned) {
  ExpectAllOps<uint8_t>({255, 200, 0, 16, 3}, {1, 100, 0, 16, 250}, chorusUint8,
                        {0, 44, 0, 32, 253},
                        {255, 32, 0, 0, 238},
                        {255, 200, 0, 16, 250},
                        {1, 100, 0, 16, 3});
}

TEST(ReduceKernelTest, Int32WrapsAndComparesSigned) {
  constexpr int32_t kMin = std::numeric_limits<int32_t>::min();
  constexpr int32_t kMax = std::numeric_limits<int32_t>::max();
  ExpectAllOps<int32_t>({kMin, kMax, -5, 65536, -7}, {-1, 1, 3, 65536, -7}, chorusInt32,
                        {kMax, kMin, -2, 131072, -14},
                        {kMin, kMax, -15, 0, 49},
                        {-1, kMax, 3, 65536, -7},
                        {kMin, 1, -5, 65536, -7});
}

TEST(ReduceKernelTest, Uint32WrapsAndComparesUnsigned) {
  constexpr uint32_t kMax = std::numeric_limits<uint32_t>::max();
  ExpectAllOps<uint32_t>({kMax, 0x80000000u, 7, 65536}, {1, 0x80000000u, 6, 65537},
                         chorusUint32,
                         {0, 0, 13, 131073},
                         {kMax, 0, 42, 65536},
                         {kMax, 0x80000000u, 7, 65537},
                         {1, 0x80000000u, 6, 65536});
}

TEST(ReduceKernelTest, Int64WrapsAndComparesSigned) {
  constexpr int64_t kMin = std::numeric_limits<int64_t>::min();
  constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
  constexpr int64_t k32 = int64_t{1} << 32;
  constexpr int64_t k40 = int64_t{1} << 40;
  ExpectAllOps<int64_t>({kMin, kMax, -5, k32, -3}, {-1, 1, 3, k32, k40}, chorusInt64,
                        {kMax, kMin, -2, 2 * k32, k40 - 3},
                        {kMin, kMax, -15, 0, -3 * k40},
                        {-1, kMax, 3, k32, k40},
                        {kMin, 1, -5, k32, -3});
}

TEST(ReduceKernelTest, Uint64WrapsAndComparesUnsigned) {
  constexpr uint64_t kMax = std::numeric_limits<uint64_t>::max();
  constexpr uint64_t k63 = uint64_t{1} << 63;
  constexpr uint64_t k32 = uint64_t{1} << 32;
  ExpectAllOps<uint64_t>({kMax, k63, 7, k32}, {1, k63, 6, k32 + 1}, chorusUint64,
                         {0, 0, 13, 2 * k32 + 1},
                         {kMax, 0, 42, k32},
                         {kMax, k63, 7, k32 + 1},
                         {1, k63, 6, k32});
}

// Floats are compared bit for bit (so -0.0 != +0.0); NaN is checked apart.
template <typename T>
void ExpectFloatOps(const std::vector<T>& a, const std::vector<T>& b, DataType dtype,
                    const std::vector<T>& sum, const std::vector<T>& prod,
                    const std::vector<T>& max, const std::vector<T>& min) {
  EXPECT_EQ(BitsOf(Reduced(a, b, dtype, ReduceOp::kSum)), BitsOf(sum)) << "sum";
  EXPECT_EQ(BitsOf(Reduced(a, b, dtype, ReduceOp::kMax)), BitsOf(max)) << "max";
  EXPECT_EQ(BitsOf(Reduced(a, b, dtype, ReduceOp::kMin)), BitsOf(min)) << "min";
  std::vector<T> product = Reduced(a, b, dtype, ReduceOp::kProd);
  ASSERT_EQ(product.size(), prod.size());
  for (size_t i = 0; i < prod.size(); ++i) {
    if (std::isnan(prod[i])) {
      EXPECT_TRUE(std::isnan(product[i])) << "prod " << i;
    } else {
      EXPECT_EQ(BitsOf(std::vector<T>{product[i]}), BitsOf(std::vector<T>{prod[i]})) << i;
    }
  }
}

TEST(ReduceKernelTest, Float32RoundsToNearestEven) {
  const float inf = HUGE_VALF;
  const float nan = std::numeric_limits<float>::quiet_NaN();
  ExpectFloatOps<float>({1.5f, -2.0f, 3e38f, 1.0f, -0.0f, inf, 1.0f},
                        {2.25f, 3.0f, 3e38f, 0x1p-24f, 0.0f, 0.0f, 0x1.8p-23f}, chorusFloat32,
                        {3.75f, 1.0f, inf, 1.0f, 0.0f, inf, 1.0f + 0x1p-22f},
                        {3.375f, -6.0f, inf, 0x1p-24f, -0.0f, nan, 0x1.8p-23f},
                        {2.25f, 3.0f, 3e38f, 1.0f, 0.0f, inf, 1.0f},
                        {1.5f, -2.0f, 3e38f, 0x1p-24f, 0.0f, 0.0f, 0x1.8p-23f});
}

TEST(ReduceKernelTest, Float64RoundsToNearestEven) {
  const double inf = HUGE_VAL;
  const double nan = std::numeric_limits<double>::quiet_NaN();
  ExpectFloatOps<double>({1.5, -2.0, 1e308, 1.0, -0.0, inf, 1.0},
                         {2.25, 3.0, 1e308, 0x1p-53, 0.0, 0.0, 0x1.8p-52}, chorusFloat64,
                         {3.75, 1.0, inf, 1.0, 0.0, inf, 1.0 + 0x1p-51},
                         {3.375, -6.0, inf, 0x1p-53, -0.0, nan, 0x1.8p-52},
                         {2.25, 3.0, 1e308, 1.0, 0.0, inf, 1.0},
                         {1.5, -2.0, 1e308, 0x1p-53, 0.0, 0.0, 0x1.8p-52});
}

// A 16-bit float type computed in float and rounded back; the last element
// of a and b is inf and 0, so its product is NaN (any payload).
void ExpectSixteenBitOps(DataType dtype, const std::vector<uint16_t>& a, const std::vector<uint16_t>& b,
                         const std::vector<uint16_t>& sum, const std::vector<uint16_t>& max,
                         const std::vector<uint16_t>& min, const std::vector<uint16_t>& prod_but_last) {
  EXPECT_EQ(Reduced(a, b, dtype, ReduceOp::kSum), sum) << "sum";
  EXPECT_EQ(Reduced(a, b, dtype, ReduceOp::kMax), max) << "max";
  EXPECT_EQ(Reduced(a, b, dtype, ReduceOp::kMin), min) << "min";
  std::vector<uint16_t> prod = Reduced(a, b, dtype, ReduceOp::kProd);
  EXPECT_EQ(std::vector<uint16_t>(prod.begin(), prod.end() - 1), prod_but_last) << "prod";
  const float last = dtype == chorusFloat16 ? HalfToFloat(prod.back()) : Bfloat16ToFloat(prod.back());
  EXPECT_TRUE(std::isnan(last));  // inf * 0
}

// fp16 inputs: 1.5, -2, 2048, 2048, 65504, 2^-24, -0, inf.
TEST(ReduceKernelTest, Float16ComputesInFloatAndRoundsBack) {
  ExpectSixteenBitOps(chorusFloat16, {0x3e00, 0xc000, 0x6800, 0x6800, 0x7bff, 0x0001, 0x8000, 0x7c00},
                      {0x4080, 0x4200, 0x3c00, 0x4200, 0x7bff, 0x0001, 0x0000, 0x0000},
                      {0x4380, 0x3c00, 0x6800, 0x6802, 0x7c00, 0x0002, 0x0000, 0x7c00},
                      {0x4080, 0x4200, 0x6800, 0x6800, 0x7bff, 0x0001, 0x0000, 0x7c00},
                      {0x3e00, 0xc000, 0x3c00, 0x4200, 0x7bff, 0x0001, 0x0000, 0x0000},
                      {0x42c0, 0xc600, 0x6800, 0x6e00, 0x7c00, 0x0000, 0x8000});
}

// bf16 inputs: 1.5, -2, 256, 256, max finite, 1, -0, inf.
TEST(ReduceKernelTest, Bfloat16ComputesInFloatAndRoundsBack) {
  ExpectSixteenBitOps(chorusBfloat16, {0x3fc0, 0xc000, 0x4380, 0x4380, 0x7f7f, 0x3f80, 0x8000, 0x7f80},
                      {0x4010, 0x4040, 0x3f80, 0x4040, 0x7f7f, 0x3b80, 0x0000, 0x0000},
                      {0x4070, 0x3f80, 0x4380, 0x4382, 0x7f80, 0x3f80, 0x0000, 0x7f80},
                      {0x4010, 0x4040, 0x4380, 0x4380, 0x7f7f, 0x3f80, 0x0000, 0x7f80},
                      {0x3fc0, 0xc000, 0x3f80, 0x4040, 0x7f7f, 0x3b80, 0x0000, 0x0000},
                      {0x4058, 0xc0c0, 0x4380, 0x4440, 0x7f80, 0x3b80, 0x8000});
}

// Documented: Max/Min return the second operand when either is NaN.
TEST(ReduceKernelTest, MaxMinTakeSecondOperandOnNan) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  EXPECT_EQ(Reduced<float>({nan}, {1.0f}, chorusFloat32, ReduceOp::kMax)[0], 1.0f);
  EXPECT_EQ(Reduced<float>({nan}, {1.0f}, chorusFloat32, ReduceOp::kMin)[0], 1.0f);
  EXPECT_TRUE(std::isnan(Reduced<float>({1.0f}, {nan}, chorusFloat32, ReduceOp::kMax)[0]));
  EXPECT_TRUE(std::isnan(Reduced<float>({1.0f}, {nan}, chorusFloat32, ReduceOp::kMin)[0]));
  const double dnan = std::numeric_limits<double>::quiet_NaN();
  EXPECT_EQ(Reduced<double>({dnan}, {2.0}, chorusFloat64, ReduceOp::kMax)[0], 2.0);
  EXPECT_TRUE(std::isnan(Reduced<double>({2.0}, {dnan}, chorusFloat64, ReduceOp::kMin)[0]));
  EXPECT_EQ(Reduced<uint16_t>({0x7e00}, {0x3c00}, chorusFloat16, ReduceOp::kMax)[0], 0x3c00);
  EXPECT_EQ(Reduced<uint16_t>({0x3c00}, {0x7e00}, chorusFloat16, ReduceOp::kMax)[0], 0x7e00);
  EXPECT_EQ(Reduced<uint16_t>({0x7fc0}, {0x3f80}, chorusBfloat16, ReduceOp::kMin)[0], 0x3f80);
  EXPECT_EQ(Reduced<uint16_t>({0x3f80}, {0x7fc0}, chorusBfloat16, ReduceOp::kMin)[0], 0x7fc0);
}

TEST(ReduceKernelTest, CountZeroTouchesNothing) {
  ReduceKernel(nullptr, nullptr, nullptr, 0, chorusFloat32, ReduceOp::kSum);
  int32_t dst = 42;
  const int32_t one = 1;
  ReduceKernel(&dst, &one, &one, 0, chorusInt32, ReduceOp::kSum);
  EXPECT_EQ(dst, 42);
}

TEST(ReduceKernelTest, OutOfRangeDtypeOrOpIsIgnored) {
  int32_t dst = 42;
  const int32_t one = 1;
  ReduceKernel(&dst, &one, &one, 1, static_cast<DataType>(chorusNumTypes), ReduceOp::kSum);
  ReduceKernel(&dst, &one, &one, 1, chorusInt32, static_cast<ReduceOp>(4));
  ReduceKernel(&dst, &one, &one, 1, chorusInt32, static_cast<ReduceOp>(-1));
  EXPECT_EQ(dst, 42);
}

}  // namespace
}  // namespace chorus
