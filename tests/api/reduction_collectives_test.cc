// AllReduce, Reduce and ReduceScatter: every datatype x every op, in place
// and out of place, odd counts, count 0 and 1, every root, ring and tree.
#include <gtest/gtest.h>

#include "tests/api/collective_fixture.h"
#include "tests/api/reference.h"

namespace chorus_test {
namespace {

constexpr size_t kOddCount = 1031;  // prime: no rank count divides it

std::vector<double> Reduced(chorusDataType_t dtype, chorusRedOp_t op, int nranks, size_t first, size_t count) {
  std::vector<double> expected(count);
  for (size_t i = 0; i < count; ++i) expected[i] = ReducedValue(dtype, op, nranks, first + i);
  return expected;
}

void FillInputs(TypedBuffer& buffer, chorusRedOp_t op, int rank, int nranks) {
  for (size_t i = 0; i < buffer.count(); ++i) {
    buffer.Set(i, InputValue(buffer.dtype(), op, rank, nranks, i));
  }
}

void CheckAllReduce(chorusComm_t comm, int rank, int nranks, chorusDataType_t dtype, chorusRedOp_t op, size_t count,
                    bool in_place) {
  const std::string context = Context("AllReduce", rank, dtype, Name(op), count, in_place);
  TypedBuffer send(dtype, count);
  TypedBuffer recv(dtype, count);
  FillInputs(send, op, rank, nranks);
  recv.FillBytes(0xEE);
  TypedBuffer& result_buffer = in_place ? send : recv;
  const chorusResult_t result = chorusAllReduce(send.data(), result_buffer.data(), count, dtype, op, comm, nullptr);
  ASSERT_EQ(result, chorusSuccess) << context << Describe(result, comm);
  EXPECT_EQ(CompareRange(result_buffer, 0, Reduced(dtype, op, nranks, 0, count)), "") << context;
}

TEST_P(CollectiveTest, AllReduceEveryTypeAndOp) {
  comms_.Run([&](int rank, chorusComm_t comm) {
    for (chorusDataType_t dtype : kAllDataTypes) {
      for (chorusRedOp_t op : kAllOps) {
        CheckAllReduce(comm, rank, nranks(), dtype, op, kOddCount, /*in_place=*/false);
        CheckAllReduce(comm, rank, nranks(), dtype, op, kOddCount, /*in_place=*/true);
        if (testing::Test::HasFatalFailure()) return;  // peers time out instead of hanging
      }
    }
  });
}

TEST_P(CollectiveTest, AllReduceZeroOneAndLargeCounts) {
  comms_.Run([&](int rank, chorusComm_t comm) {
    for (chorusDataType_t dtype : kAllDataTypes) {
      CheckAllReduce(comm, rank, nranks(), dtype, chorusSum, 0, false);
      CheckAllReduce(comm, rank, nranks(), dtype, chorusMax, 1, true);
    }
    // Several pipeline chunks, not a multiple of anything.
    CheckAllReduce(comm, rank, nranks(), chorusFloat32, chorusSum, (1u << 19) + 3, false);
    CheckAllReduce(comm, rank, nranks(), chorusInt8, chorusMin, (1u << 20) + 1, true);
  });
}

void CheckReduce(chorusComm_t comm, int rank, int nranks, chorusDataType_t dtype, chorusRedOp_t op, int root,
                 size_t count, bool in_place) {
  const std::string context =
      Context("Reduce", rank, dtype, Name(op), count, in_place) + "root " + std::to_string(root) + ": ";
  TypedBuffer send(dtype, count);
  TypedBuffer recv(dtype, count);
  FillInputs(send, op, rank, nranks);
  recv.FillBytes(0xEE);
  TypedBuffer& result_buffer = in_place ? send : recv;
  const chorusResult_t result = chorusReduce(send.data(), result_buffer.data(), count, dtype, op, root, comm, nullptr);
  ASSERT_EQ(result, chorusSuccess) << context << Describe(result, comm);
  if (rank == root) {
    EXPECT_EQ(CompareRange(result_buffer, 0, Reduced(dtype, op, nranks, 0, count)), "") << context;
  }
}

TEST_P(CollectiveTest, ReduceEveryTypeOpAndRoot) {
  comms_.Run([&](int rank, chorusComm_t comm) {
    int call = 0;
    for (chorusDataType_t dtype : kAllDataTypes) {
      for (chorusRedOp_t op : kAllOps) {
        const int root = call % nranks();
        CheckReduce(comm, rank, nranks(), dtype, op, root, kOddCount, call % 2 == 1);
        if (testing::Test::HasFatalFailure()) return;
        ++call;
      }
    }
    for (int root = 0; root < nranks(); ++root) {
      CheckReduce(comm, rank, nranks(), chorusInt32, chorusSum, root, kOddCount, false);
      CheckReduce(comm, rank, nranks(), chorusFloat16, chorusMax, root, 1, true);
      CheckReduce(comm, rank, nranks(), chorusFloat32, chorusSum, root, 0, false);
    }
  });
}

void CheckReduceScatter(chorusComm_t comm, int rank, int nranks, chorusDataType_t dtype, chorusRedOp_t op,
                        size_t recvcount, bool in_place) {
  const std::string context = Context("ReduceScatter", rank, dtype, Name(op), recvcount, in_place);
  TypedBuffer send(dtype, recvcount * nranks);
  TypedBuffer recv(dtype, recvcount);
  FillInputs(send, op, rank, nranks);
  recv.FillBytes(0xEE);
  void* recv_pointer = in_place ? send.at(rank * recvcount) : recv.data();
  const chorusResult_t result = chorusReduceScatter(send.data(), recv_pointer, recvcount, dtype, op, comm, nullptr);
  ASSERT_EQ(result, chorusSuccess) << context << Describe(result, comm);
  const std::vector<double> expected = Reduced(dtype, op, nranks, rank * recvcount, recvcount);
  if (in_place) {
    EXPECT_EQ(CompareRange(send, rank * recvcount, expected), "") << context;
  } else {
    EXPECT_EQ(CompareRange(recv, 0, expected), "") << context;
  }
}

TEST_P(CollectiveTest, ReduceScatterEveryTypeAndOp) {
  comms_.Run([&](int rank, chorusComm_t comm) {
    for (chorusDataType_t dtype : kAllDataTypes) {
      for (chorusRedOp_t op : kAllOps) {
        CheckReduceScatter(comm, rank, nranks(), dtype, op, 131, false);
        CheckReduceScatter(comm, rank, nranks(), dtype, op, 131, true);
        if (testing::Test::HasFatalFailure()) return;
      }
      CheckReduceScatter(comm, rank, nranks(), dtype, chorusSum, 0, false);
      CheckReduceScatter(comm, rank, nranks(), dtype, chorusMin, 1, true);
    }
    CheckReduceScatter(comm, rank, nranks(), chorusFloat32, chorusSum, (1u << 17) + 5, false);
  });
}

INSTANTIATE_TEST_SUITE_P(RanksAndAlgorithms, CollectiveTest, testing::ValuesIn(AllCollectiveParams()),
                         CollectiveParamName);

}  // namespace
}  // namespace chorus_test
