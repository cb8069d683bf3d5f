// ReduceKernel over every dtype x op, every length 0..64 (vector bodies and
// scalar tails) and every aliasing pattern, checked against values computed
// here in double arithmetic. Inputs are small integers so that every
// result is exact in every dtype, fp16 included. Guard elements after the
// end catch overruns.
#include <cstdint>
#include <cstring>
#include <string>
#include <tuple>
#include <vector>

#include <gtest/gtest.h>

#include "kernel_test_util.h"

namespace chorus {
namespace {

using testing::IsSignedType;
using testing::StoreSmall;

enum class Aliasing { kNone, kDstIsA, kDstIsB, kAllSame };

// In double, so that float products like -3 * 0 give -0.0 as the kernels do.
double ExpectedValue(ReduceOp op, double a, double b) {
  switch (op) {
    case ReduceOp::kSum: return a + b;
    case ReduceOp::kProd: return a * b;
    case ReduceOp::kMax: return a > b ? a : b;
    case ReduceOp::kMin: return a < b ? a : b;
  }
  return 0;
}

class ReduceTailTest : public ::testing::TestWithParam<std::tuple<DataType, ReduceOp>> {};

TEST_P(ReduceTailTest, EveryLengthAndAliasingMatchesReference) {
  const auto [dtype, op] = GetParam();
  const size_t size = DataTypeSize(dtype);
  constexpr size_t kGuard = 8;
  constexpr double kGuardValue = 99;
  for (size_t n = 0; n <= 64; ++n) {
    for (Aliasing aliasing : {Aliasing::kNone, Aliasing::kDstIsA, Aliasing::kDstIsB,
                              Aliasing::kAllSame}) {
      std::vector<double> a_values(n), b_values(n);
      for (size_t i = 0; i < n; ++i) {
        const int64_t shift_a = IsSignedType(dtype) ? 5 : 0;
        const int64_t shift_b = IsSignedType(dtype) ? 3 : 0;
        a_values[i] = static_cast<double>(static_cast<int64_t>(i * 7 % 11) - shift_a);
        b_values[i] = aliasing == Aliasing::kAllSame
                          ? a_values[i]
                          : static_cast<double>(static_cast<int64_t>(i * 3 % 7) - shift_b);
      }
      std::vector<char> a((n + kGuard) * size), b((n + kGuard) * size), dst((n + kGuard) * size);
      for (size_t i = 0; i < n + kGuard; ++i) {
        StoreSmall(dtype, a.data(), i, i < n ? a_values[i] : kGuardValue);
        StoreSmall(dtype, b.data(), i, i < n ? b_values[i] : kGuardValue);
        StoreSmall(dtype, dst.data(), i, kGuardValue);
      }
      void* out = dst.data();
      const void* in_a = a.data();
      const void* in_b = b.data();
      switch (aliasing) {
        case Aliasing::kNone: break;
        case Aliasing::kDstIsA: out = a.data(); break;
        case Aliasing::kDstIsB: out = b.data(); break;
        case Aliasing::kAllSame: out = a.data(); in_b = a.data(); break;
      }
      ReduceKernel(out, in_a, in_b, n, dtype, op);

      std::vector<char> expected((n + kGuard) * size);
      for (size_t i = 0; i < n + kGuard; ++i) {
        StoreSmall(dtype, expected.data(), i,
                      i < n ? ExpectedValue(op, a_values[i], b_values[i]) : kGuardValue);
      }
      ASSERT_EQ(std::memcmp(out, expected.data(), expected.size()), 0)
          << "n=" << n << " aliasing=" << static_cast<int>(aliasing);
    }
  }
}

INSTANTIATE_TEST_SUITE_P(
    AllTypesAndOps, ReduceTailTest,
    ::testing::Combine(::testing::Values(chorusInt8, chorusUint8, chorusInt32, chorusUint32,
                                         chorusInt64, chorusUint64, chorusFloat16, chorusFloat32,
                                         chorusFloat64, chorusBfloat16),
                       ::testing::Values(ReduceOp::kSum, ReduceOp::kProd, ReduceOp::kMax,
                                         ReduceOp::kMin)),
    [](const ::testing::TestParamInfo<ReduceTailTest::ParamType>& info) {
      return std::string(DataTypeName(std::get<0>(info.param))) + "_" +
             ReduceOpName(std::get<1>(info.param));
    });

}  // namespace
}  // namespace chorus
