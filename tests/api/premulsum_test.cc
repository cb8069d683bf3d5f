// chorusRedOpCreatePreMulSum: sum(scalar * x_i) with the scalar read once at
// creation (host immediate) or at every call ("device" residence, host memory
// here), for every datatype; chorusRedOpDestroy.
#include <gtest/gtest.h>

#include "tests/api/harness.h"
#include "tests/api/typed_buffer.h"

namespace chorus_test {
namespace {

constexpr size_t kCount = 517;

// Small integers so that scalar * x summed over 8 ranks fits int8/bfloat16.
double Input(chorusDataType_t dtype, int rank, size_t index) {
  const double base = static_cast<double>((index * 3 + static_cast<size_t>(rank) * 5) % 11);
  return IsSigned(dtype) ? base - 5 : base;
}

double Expected(chorusDataType_t dtype, double scalar, int nranks, size_t index) {
  double sum = 0;
  for (int rank = 0; rank < nranks; ++rank) sum += scalar * Input(dtype, rank, index);
  return sum;
}

// Integers scale by whole numbers; floats by fractions, exact in binary.
double FirstScalar(chorusDataType_t dtype) { return IsFloat(dtype) ? 0.5 : 2; }
double SecondScalar(chorusDataType_t dtype) { return IsFloat(dtype) ? 0.25 : 3; }

void AllReduceAndCheck(chorusComm_t comm, int rank, int nranks, chorusDataType_t dtype, chorusRedOp_t op, double scalar,
                       const char* what) {
  TypedBuffer send(dtype, kCount);
  TypedBuffer recv(dtype, kCount);
  for (size_t i = 0; i < kCount; ++i) send.Set(i, Input(dtype, rank, i));
  const chorusResult_t result = chorusAllReduce(send.data(), recv.data(), kCount, dtype, op, comm, nullptr);
  ASSERT_EQ(result, chorusSuccess) << what << " " << Name(dtype) << Describe(result, comm);
  std::vector<double> expected(kCount);
  for (size_t i = 0; i < kCount; ++i) expected[i] = Expected(dtype, scalar, nranks, i);
  EXPECT_EQ(CompareRange(recv, 0, expected), "") << what << " rank " << rank;
}

class PreMulSumTest : public testing::TestWithParam<int> {};

TEST_P(PreMulSumTest, HostImmediateScalarIsReadOnceAtCreation) {
  const int nranks = GetParam();
  ThreadComms comms = ThreadComms::InitRank(nranks);
  ASSERT_TRUE(comms.ok()) << comms.error();
  comms.Run([&](int rank, chorusComm_t comm) {
    for (chorusDataType_t dtype : kAllDataTypes) {
      TypedBuffer scalar(dtype, 1);
      scalar.Set(0, FirstScalar(dtype));
      chorusRedOp_t op = chorusSum;
      const chorusResult_t created =
          chorusRedOpCreatePreMulSum(&op, scalar.data(), dtype, chorusScalarHostImmediate, comm);
      ASSERT_EQ(created, chorusSuccess) << Name(dtype) << Describe(created, comm);
      EXPECT_GE(static_cast<int>(op), static_cast<int>(chorusNumOps));
      scalar.Set(0, SecondScalar(dtype));  // must not matter any more
      AllReduceAndCheck(comm, rank, nranks, dtype, op, FirstScalar(dtype), "immediate");
      EXPECT_EQ(chorusRedOpDestroy(op, comm), chorusSuccess);
      if (testing::Test::HasFatalFailure()) return;
    }
  });
}

TEST_P(PreMulSumTest, DeviceScalarIsReadAtEachCall) {
  const int nranks = GetParam();
  ThreadComms comms = ThreadComms::InitRank(nranks);
  ASSERT_TRUE(comms.ok()) << comms.error();
  comms.Run([&](int rank, chorusComm_t comm) {
    for (chorusDataType_t dtype : kAllDataTypes) {
      TypedBuffer scalar(dtype, 1);
      scalar.Set(0, FirstScalar(dtype));
      chorusRedOp_t op = chorusSum;
      const chorusResult_t created = chorusRedOpCreatePreMulSum(&op, scalar.data(), dtype, chorusScalarDevice, comm);
      ASSERT_EQ(created, chorusSuccess) << Name(dtype) << Describe(created, comm);
      AllReduceAndCheck(comm, rank, nranks, dtype, op, FirstScalar(dtype), "device first");
      scalar.Set(0, SecondScalar(dtype));
      AllReduceAndCheck(comm, rank, nranks, dtype, op, SecondScalar(dtype), "device second");
      EXPECT_EQ(chorusRedOpDestroy(op, comm), chorusSuccess);
      if (testing::Test::HasFatalFailure()) return;
    }
  });
}

TEST_P(PreMulSumTest, WorksInReduceAndReduceScatter) {
  const int nranks = GetParam();
  ThreadComms comms = ThreadComms::InitRank(nranks);
  ASSERT_TRUE(comms.ok()) << comms.error();
  comms.Run([&](int rank, chorusComm_t comm) {
    const chorusDataType_t dtype = chorusFloat32;
    float scalar = 0.5f;
    chorusRedOp_t op = chorusSum;
    ASSERT_EQ(chorusRedOpCreatePreMulSum(&op, &scalar, dtype, chorusScalarHostImmediate, comm), chorusSuccess);
    TypedBuffer send(dtype, kCount * nranks);
    for (size_t i = 0; i < send.count(); ++i) send.Set(i, Input(dtype, rank, i));
    TypedBuffer recv(dtype, kCount * nranks);
    const int root = nranks - 1;
    chorusResult_t result = chorusReduce(send.data(), recv.data(), send.count(), dtype, op, root, comm, nullptr);
    ASSERT_EQ(result, chorusSuccess) << Describe(result, comm);
    std::vector<double> expected(send.count());
    for (size_t i = 0; i < expected.size(); ++i) expected[i] = Expected(dtype, 0.5, nranks, i);
    if (rank == root) {
      EXPECT_EQ(CompareRange(recv, 0, expected), "") << "Reduce";
    }

    TypedBuffer block(dtype, kCount);
    result = chorusReduceScatter(send.data(), block.data(), kCount, dtype, op, comm, nullptr);
    ASSERT_EQ(result, chorusSuccess) << Describe(result, comm);
    const std::vector<double> mine(expected.begin() + rank * kCount, expected.begin() + (rank + 1) * kCount);
    EXPECT_EQ(CompareRange(block, 0, mine), "") << "ReduceScatter rank " << rank;
    EXPECT_EQ(chorusRedOpDestroy(op, comm), chorusSuccess);
  });
}

INSTANTIATE_TEST_SUITE_P(Ranks, PreMulSumTest, testing::Values(1, 2, 3, 8),
                         [](const testing::TestParamInfo<int>& info) { return std::to_string(info.param) + "ranks"; });

}  // namespace
}  // namespace chorus_test
