// ScaleKernel (PreMulSum) and DivideKernel (Avg): exact results per dtype.
#include <cstdint>
#include <limits>
#include <vector>

#include <gtest/gtest.h>

#include "kernel_test_util.h"

namespace chorus {
namespace {

template <typename T>
std::vector<T> Divided(std::vector<T> values, DataType dtype, int divisor) {
  DivideKernel(values.data(), values.size(), dtype, divisor);
  return values;
}

template <typename T>
std::vector<T> Scaled(const std::vector<T>& values, DataType dtype, T scalar) {
  std::vector<T> out(values.size());
  ScaleKernel(out.data(), values.data(), values.size(), dtype, &scalar);
  return out;
}

TEST(DivideKernelTest, IntegersTruncateTowardZero) {
  EXPECT_EQ(Divided<int32_t>({-7, 7, -1, 1, -6}, chorusInt32, 2),
            (std::vector<int32_t>{-3, 3, 0, 0, -3}));
  EXPECT_EQ(Divided<int8_t>({-7, 7, -128, 127}, chorusInt8, 2),
            (std::vector<int8_t>{-3, 3, -64, 63}));
  EXPECT_EQ(Divided<int64_t>({-7, 7, std::numeric_limits<int64_t>::min()}, chorusInt64, -2),
            (std::vector<int64_t>{3, -3, int64_t{1} << 62}));
  EXPECT_EQ(Divided<uint8_t>({255, 7}, chorusUint8, 2), (std::vector<uint8_t>{127, 3}));
  EXPECT_EQ(Divided<uint32_t>({0xffffffffu, 10}, chorusUint32, 3),
            (std::vector<uint32_t>{0x55555555u, 3}));
  EXPECT_EQ(Divided<uint64_t>({~uint64_t{0}, 9}, chorusUint64, 4),
            (std::vector<uint64_t>{~uint64_t{0} / 4, 2}));
}

TEST(DivideKernelTest, MinByMinusOneWrapsInsteadOfTrapping) {
  constexpr int32_t kMin = std::numeric_limits<int32_t>::min();
  EXPECT_EQ(Divided<int32_t>({kMin, 5}, chorusInt32, -1), (std::vector<int32_t>{kMin, -5}));
  constexpr int64_t kMin64 = std::numeric_limits<int64_t>::min();
  EXPECT_EQ(Divided<int64_t>({kMin64, 5}, chorusInt64, -1), (std::vector<int64_t>{kMin64, -5}));
  EXPECT_EQ(Divided<int8_t>({-128, 5}, chorusInt8, -1), (std::vector<int8_t>{-128, -5}));
}

TEST(DivideKernelTest, IntegerDivisionByZeroLeavesValues) {
  EXPECT_EQ(Divided<int32_t>({-7, 7}, chorusInt32, 0), (std::vector<int32_t>{-7, 7}));
  EXPECT_EQ(Divided<uint64_t>({9}, chorusUint64, 0), (std::vector<uint64_t>{9}));
}

TEST(DivideKernelTest, FloatsDivide) {
  EXPECT_EQ(Divided<float>({1.0f, -7.0f, 3.0f}, chorusFloat32, 2),
            (std::vector<float>{0.5f, -3.5f, 1.5f}));
  EXPECT_EQ(Divided<float>({1.0f}, chorusFloat32, 3), (std::vector<float>{1.0f / 3.0f}));
  EXPECT_EQ(Divided<double>({1.0, -7.0}, chorusFloat64, 3),
            (std::vector<double>{1.0 / 3.0, -7.0 / 3.0}));
  // fp16: 1/3 = 0x3555, -7/2 = -3.5 = 0xc300, 2^-24/2 ties to 0.
  EXPECT_EQ(Divided<uint16_t>({0x3c00, 0xc700, 0x0001}, chorusFloat16, 2),
            (std::vector<uint16_t>{0x3800, 0xc300, 0x0000}));
  EXPECT_EQ(Divided<uint16_t>({0x3c00}, chorusFloat16, 3), (std::vector<uint16_t>{0x3555}));
  // bf16: 1/3 = 0x3eaaaaab in float rounds up to 0x3eab.
  EXPECT_EQ(Divided<uint16_t>({0x3f80, 0xc0e0}, chorusBfloat16, 3),
            (std::vector<uint16_t>{0x3eab, FloatToBfloat16(-7.0f / 3.0f)}));
  EXPECT_EQ(Divided<uint16_t>({0xc0e0}, chorusBfloat16, 2), (std::vector<uint16_t>{0xc060}));
}

TEST(DivideKernelTest, CountZeroTouchesNothing) {
  DivideKernel(nullptr, 0, chorusInt32, 2);
  DivideKernel(nullptr, 0, chorusFloat16, 0);
}

TEST(ScaleKernelTest, IntegersMultiplyAndWrap) {
  constexpr int32_t kMax = std::numeric_limits<int32_t>::max();
  EXPECT_EQ(Scaled<int32_t>({-3, 5, kMax}, chorusInt32, 3),
            (std::vector<int32_t>{-9, 15, 2147483645}));
  EXPECT_EQ(Scaled<int8_t>({-3, 100}, chorusInt8, -2), (std::vector<int8_t>{6, 56}));
  EXPECT_EQ(Scaled<uint8_t>({200, 3}, chorusUint8, 2), (std::vector<uint8_t>{144, 6}));
  EXPECT_EQ(Scaled<uint32_t>({0x80000001u}, chorusUint32, 2), (std::vector<uint32_t>{2}));
  EXPECT_EQ(Scaled<int64_t>({-3, int64_t{1} << 62}, chorusInt64, 4),
            (std::vector<int64_t>{-12, 0}));
  EXPECT_EQ(Scaled<uint64_t>({5}, chorusUint64, 7), (std::vector<uint64_t>{35}));
}

TEST(ScaleKernelTest, FloatsMultiply) {
  EXPECT_EQ(Scaled<float>({1.0f, -3.0f, 0.1f}, chorusFloat32, 0.5f),
            (std::vector<float>{0.5f, -1.5f, 0.05f}));
  EXPECT_EQ(Scaled<double>({1.0, -3.0}, chorusFloat64, 0.25), (std::vector<double>{0.25, -0.75}));
  // fp16 x 0.5: 1 -> 0.5, 2^-24 -> 2^-25 ties to 0, 3*2^-24 -> 1.5*2^-24 ties to 2*2^-24.
  EXPECT_EQ(Scaled<uint16_t>({0x3c00, 0x0001, 0x0003}, chorusFloat16, 0x3800),
            (std::vector<uint16_t>{0x3800, 0x0000, 0x0002}));
  // bf16 x 3: 1 -> 3, 1.5 -> 4.5 (0x4090).
  EXPECT_EQ(Scaled<uint16_t>({0x3f80, 0x3fc0}, chorusBfloat16, 0x4040),
            (std::vector<uint16_t>{0x4040, 0x4090}));
}

TEST(ScaleKernelTest, InPlaceAndUnalignedScalar) {
  std::vector<float> values(37);
  for (size_t i = 0; i < values.size(); ++i) values[i] = static_cast<float>(i);
  alignas(8) unsigned char scalar_bytes[8] = {};
  const float two = 2.0f;
  std::memcpy(scalar_bytes + 1, &two, sizeof(two));
  ScaleKernel(values.data(), values.data(), values.size(), chorusFloat32, scalar_bytes + 1);
  for (size_t i = 0; i < values.size(); ++i) EXPECT_EQ(values[i], 2.0f * i) << i;
  ScaleKernel(nullptr, nullptr, 0, chorusFloat32, &two);
}

}  // namespace
}  // namespace chorus
