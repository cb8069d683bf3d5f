// The element math shared by the CPU and CUDA kernels (kernels/element_math.h)
// against every CPU kernel table this machine runs (portable, AVX2, AVX-512):
// for every dtype and op, reduce, scale and divide element by element must
// give exactly the kernels' bits, on random bit patterns mixed with special
// values (NaN with payloads, +-inf, subnormals, +-0, integer extremes). The
// CUDA kernels are loops over the same functions, so this checks the GPU's
// arithmetic on a machine without one.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "base/dtype.h"
#include "kernels/element_math.h"
#include "kernels/kernel_table.h"

namespace chorus::kernels {
namespace {

constexpr size_t kCount = 1037;  // vector bodies and tails

std::vector<uint64_t> SpecialValues(DataType dtype) {
  switch (dtype) {
    case chorusFloat32:
      return {0x00000000, 0x80000000, 0x7f800000, 0xff800000, 0x7fc00000, 0xffc12345, 0x7f800001,
              0x00000001, 0x807fffff, 0x7f7fffff, 0x3f800000, 0xbf800000, 0x00800000};
    case chorusFloat64:
      return {0x0000000000000000, 0x8000000000000000, 0x7ff0000000000000, 0xfff0000000000000,
              0x7ff8000000000000, 0xfff8000012345678, 0x0000000000000001, 0x7fefffffffffffff,
              0x3ff0000000000000};
    case chorusFloat16:
      return {0x0000, 0x8000, 0x7c00, 0xfc00, 0x7e00, 0xfe55, 0x7c01, 0x0001, 0x83ff, 0x7bff, 0x3c00, 0x0400};
    case chorusBfloat16:
      return {0x0000, 0x8000, 0x7f80, 0xff80, 0x7fc0, 0xffc5, 0x7f81, 0x0001, 0x807f, 0x7f7f, 0x3f80, 0x0080};
    default:
      return {0, 1, ~uint64_t{0}, uint64_t{1} << (DataTypeSize(dtype) * 8 - 1),
              (uint64_t{1} << (DataTypeSize(dtype) * 8 - 1)) - 1, 2};
  }
}

template <DataType kType>
std::vector<StorageOf<kType>> RandomElements(std::mt19937_64& rng) {
  const std::vector<uint64_t> specials = SpecialValues(kType);
  std::vector<StorageOf<kType>> out(kCount);
  for (auto& element : out) {
    const uint64_t random = rng();
    const uint64_t bits = random % 4 == 0 ? specials[(random >> 8) % specials.size()] : rng();
    std::memcpy(&element, &bits, sizeof(element));  // little-endian: low bytes
  }
  return out;
}

std::vector<const KernelTable*> Tables() {
  std::vector<const KernelTable*> tables;
  for (KernelIsa isa : {KernelIsa::kPortable, KernelIsa::kAvx2, KernelIsa::kAvx512}) {
    if (const KernelTable* table = KernelsFor(isa)) tables.push_back(table);
  }
  return tables;
}

template <typename S>
void ExpectSameBits(const std::vector<S>& got, const std::vector<S>& want, const std::string& what) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    if (std::memcmp(&got[i], &want[i], sizeof(S)) != 0) {
      ADD_FAILURE() << what << ": element " << i << " differs";
      return;
    }
  }
}

template <DataType kType, typename Op>
void CheckReduce(ReduceOp op, const std::vector<StorageOf<kType>>& a, const std::vector<StorageOf<kType>>& b) {
  std::vector<StorageOf<kType>> want(kCount);
  for (size_t i = 0; i < kCount; ++i) want[i] = ReduceElement<kType, Op>(a[i], b[i]);
  for (const KernelTable* table : Tables()) {
    std::vector<StorageOf<kType>> got(kCount);
    table->reduce[kType][static_cast<int>(op)](got.data(), a.data(), b.data(), kCount);
    ExpectSameBits(got, want, std::string(table->name) + " " + DataTypeName(kType) + " " + ReduceOpName(op));
  }
}

template <DataType kType>
void CheckType() {
  using S = StorageOf<kType>;
  std::mt19937_64 rng(1234 + kType);
  const std::vector<S> a = RandomElements<kType>(rng), b = RandomElements<kType>(rng);
  CheckReduce<kType, SumOp>(ReduceOp::kSum, a, b);
  CheckReduce<kType, ProdOp>(ReduceOp::kProd, a, b);
  CheckReduce<kType, MaxOp>(ReduceOp::kMax, a, b);
  CheckReduce<kType, MinOp>(ReduceOp::kMin, a, b);

  for (size_t pick : {size_t{0}, size_t{5}, size_t{17}}) {  // random factors, maybe special
    const S factor = b[pick];
    std::vector<S> want(kCount);
    for (size_t i = 0; i < kCount; ++i) want[i] = ScaleElement<kType>(a[i], ElementOf<kType>::Load(factor));
    for (const KernelTable* table : Tables()) {
      std::vector<S> got(kCount);
      table->scale[kType](got.data(), a.data(), kCount, &factor);
      ExpectSameBits(got, want, std::string(table->name) + " scale " + DataTypeName(kType));
    }
  }

  const bool integral = !IsFloatingType(kType);
  for (int divisor : {1, 2, 3, 7, -1, -5, 0}) {
    if (!integral && divisor <= 0) continue;  // Avg divides by the rank count
    std::vector<S> want(kCount);
    for (size_t i = 0; i < kCount; ++i) want[i] = DivideElement<kType>(a[i], divisor);
    for (const KernelTable* table : Tables()) {
      std::vector<S> got = a;
      table->divide[kType](got.data(), kCount, divisor);
      ExpectSameBits(got, want,
                     std::string(table->name) + " divide " + DataTypeName(kType) + " by " + std::to_string(divisor));
    }
  }
}

TEST(ElementMathTest, EveryTableMatchesTheElementFunctions) {
  ASSERT_FALSE(Tables().empty());
  CheckType<chorusInt8>();
  CheckType<chorusUint8>();
  CheckType<chorusInt32>();
  CheckType<chorusUint32>();
  CheckType<chorusInt64>();
  CheckType<chorusUint64>();
  CheckType<chorusFloat16>();
  CheckType<chorusFloat32>();
  CheckType<chorusFloat64>();
  CheckType<chorusBfloat16>();
}

// Spot values that pin the semantics the GPU shares: wrapping integers,
// fp16/bf16 through float32 with round to nearest even, MIN / -1.
TEST(ElementMathTest, PinnedValues) {
  EXPECT_EQ((ReduceElement<chorusInt8, SumOp>(int8_t{127}, int8_t{1})), int8_t{-128});
  EXPECT_EQ((ReduceElement<chorusUint8, ProdOp>(uint8_t{16}, uint8_t{17})), uint8_t{16});  // 272 mod 256
  EXPECT_EQ((ReduceElement<chorusInt32, MaxOp>(-3, 2)), 2);
  EXPECT_EQ((ReduceElement<chorusInt64, MinOp>(int64_t{-3}, int64_t{2})), int64_t{-3});
  // fp16: 1 + 2^-11 is a tie between 1 and 1 + 2^-10: even wins (1.0).
  EXPECT_EQ((ReduceElement<chorusFloat16, SumOp>(uint16_t{0x3c00}, uint16_t{0x1000})), uint16_t{0x3c00});
  // bf16: 1 + 1 = 2.
  EXPECT_EQ((ReduceElement<chorusBfloat16, SumOp>(uint16_t{0x3f80}, uint16_t{0x3f80})), uint16_t{0x4000});
  EXPECT_EQ(ScaleElement<chorusFloat32>(1.5f, 2.0f), 3.0f);
  EXPECT_EQ(DivideElement<chorusInt32>(-7, 2), -3);
  EXPECT_EQ(DivideElement<chorusInt32>(INT32_MIN, -1), INT32_MIN);
  EXPECT_EQ(DivideElement<chorusUint32>(7u, 0), 7u);
}

}  // namespace
}  // namespace chorus::kernels
