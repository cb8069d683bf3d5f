// Broadcast, AllGather, AlltoAll, Gather and Scatter: every datatype, every
// root, NCCL's in-place conventions, odd counts, count 0, ring and tree.
#include <gtest/gtest.h>

#include "tests/api/collective_fixture.h"
#include "tests/api/reference.h"

namespace chorus_test {
namespace {

constexpr size_t kOddCount = 1031;  // prime: no rank count divides it
constexpr uint8_t kSentinel = 0xEE;

// The payload `rank` owns: PlainValue offset by `block` so blocks differ.
void FillPlain(TypedBuffer& buffer, size_t offset, size_t count, int rank, size_t block = 0) {
  for (size_t i = 0; i < count; ++i) buffer.Set(offset + i, PlainValue(rank, block * 7 + i));
}

std::vector<double> Plain(int rank, size_t count, size_t block = 0) {
  std::vector<double> values(count);
  for (size_t i = 0; i < count; ++i) values[i] = PlainValue(rank, block * 7 + i);
  return values;
}

std::string RootText(int root) { return "root " + std::to_string(root); }

void CheckBroadcast(chorusComm_t comm, int rank, chorusDataType_t dtype, int root, size_t count, bool in_place) {
  const std::string context = Context("Broadcast", rank, dtype, RootText(root).c_str(), count, in_place);
  TypedBuffer send(dtype, count);
  TypedBuffer recv(dtype, count);
  send.FillBytes(kSentinel);
  recv.FillBytes(kSentinel);
  if (rank == root) FillPlain(send, 0, count, root);
  TypedBuffer& result_buffer = in_place ? send : recv;
  const chorusResult_t result = chorusBroadcast(send.data(), result_buffer.data(), count, dtype, root, comm, nullptr);
  ASSERT_EQ(result, chorusSuccess) << context << Describe(result, comm);
  EXPECT_EQ(CompareRange(result_buffer, 0, Plain(root, count)), "") << context;
}

TEST_P(CollectiveTest, BroadcastEveryTypeAndRoot) {
  comms_.Run([&](int rank, chorusComm_t comm) {
    int call = 0;
    for (chorusDataType_t dtype : kAllDataTypes) {
      for (int root = 0; root < nranks(); ++root) {
        CheckBroadcast(comm, rank, dtype, root, kOddCount, call++ % 2 == 1);
        if (testing::Test::HasFatalFailure()) return;  // peers time out instead of hanging
      }
      CheckBroadcast(comm, rank, dtype, nranks() - 1, 0, false);
      CheckBroadcast(comm, rank, dtype, 0, 1, true);
    }
    CheckBroadcast(comm, rank, chorusFloat64, nranks() / 2, (1u << 18) + 1, false);
  });
}

void CheckAllGather(chorusComm_t comm, int rank, int nranks, chorusDataType_t dtype, size_t sendcount, bool in_place) {
  const std::string context = Context("AllGather", rank, dtype, "", sendcount, in_place);
  TypedBuffer send(dtype, sendcount);
  TypedBuffer recv(dtype, sendcount * nranks);
  recv.FillBytes(kSentinel);
  const void* send_pointer = send.data();
  if (in_place) {
    FillPlain(recv, rank * sendcount, sendcount, rank);
    send_pointer = recv.at(rank * sendcount);
  } else {
    FillPlain(send, 0, sendcount, rank);
  }
  const chorusResult_t result = chorusAllGather(send_pointer, recv.data(), sendcount, dtype, comm, nullptr);
  ASSERT_EQ(result, chorusSuccess) << context << Describe(result, comm);
  for (int from = 0; from < nranks; ++from) {
    EXPECT_EQ(CompareRange(recv, from * sendcount, Plain(from, sendcount)), "")
        << context << "block from rank " << from;
  }
}

TEST_P(CollectiveTest, AllGatherEveryType) {
  comms_.Run([&](int rank, chorusComm_t comm) {
    for (chorusDataType_t dtype : kAllDataTypes) {
      CheckAllGather(comm, rank, nranks(), dtype, 131, false);
      CheckAllGather(comm, rank, nranks(), dtype, 131, true);
      CheckAllGather(comm, rank, nranks(), dtype, 0, false);
      CheckAllGather(comm, rank, nranks(), dtype, 1, true);
      if (testing::Test::HasFatalFailure()) return;
    }
    CheckAllGather(comm, rank, nranks(), chorusUint8, (1u << 18) + 3, false);
  });
}

void CheckAlltoAll(chorusComm_t comm, int rank, int nranks, chorusDataType_t dtype, size_t count) {
  const std::string context = Context("AlltoAll", rank, dtype, "", count, false);
  TypedBuffer send(dtype, count * nranks);
  TypedBuffer recv(dtype, count * nranks);
  recv.FillBytes(kSentinel);
  // Block j of rank i's send buffer holds Plain(i, block j).
  for (int to = 0; to < nranks; ++to) FillPlain(send, to * count, count, rank, to);
  const chorusResult_t result = chorusAlltoAll(send.data(), recv.data(), count, dtype, comm, nullptr);
  ASSERT_EQ(result, chorusSuccess) << context << Describe(result, comm);
  for (int from = 0; from < nranks; ++from) {
    EXPECT_EQ(CompareRange(recv, from * count, Plain(from, count, rank)), "") << context << "block from rank " << from;
  }
}

TEST_P(CollectiveTest, AlltoAllEveryType) {
  comms_.Run([&](int rank, chorusComm_t comm) {
    for (chorusDataType_t dtype : kAllDataTypes) {
      CheckAlltoAll(comm, rank, nranks(), dtype, 37);
      CheckAlltoAll(comm, rank, nranks(), dtype, 0);
      CheckAlltoAll(comm, rank, nranks(), dtype, 1);
      if (testing::Test::HasFatalFailure()) return;
    }
    CheckAlltoAll(comm, rank, nranks(), chorusInt32, (1u << 16) + 1);
  });
}

void CheckGather(chorusComm_t comm, int rank, int nranks, chorusDataType_t dtype, int root, size_t sendcount,
                 bool in_place) {
  const std::string context = Context("Gather", rank, dtype, RootText(root).c_str(), sendcount, in_place);
  TypedBuffer send(dtype, sendcount);
  TypedBuffer recv(dtype, sendcount * nranks);
  recv.FillBytes(kSentinel);
  const void* send_pointer = send.data();
  if (in_place && rank == root) {
    FillPlain(recv, rank * sendcount, sendcount, rank);
    send_pointer = recv.at(rank * sendcount);
  } else {
    FillPlain(send, 0, sendcount, rank);
  }
  const chorusResult_t result = chorusGather(send_pointer, recv.data(), sendcount, dtype, root, comm, nullptr);
  ASSERT_EQ(result, chorusSuccess) << context << Describe(result, comm);
  if (rank != root) return;
  for (int from = 0; from < nranks; ++from) {
    EXPECT_EQ(CompareRange(recv, from * sendcount, Plain(from, sendcount)), "")
        << context << "block from rank " << from;
  }
}

void CheckScatter(chorusComm_t comm, int rank, int nranks, chorusDataType_t dtype, int root, size_t recvcount,
                  bool in_place) {
  const std::string context = Context("Scatter", rank, dtype, RootText(root).c_str(), recvcount, in_place);
  TypedBuffer send(dtype, recvcount * nranks);
  TypedBuffer recv(dtype, recvcount);
  send.FillBytes(kSentinel);
  recv.FillBytes(kSentinel);
  if (rank == root) {
    for (int to = 0; to < nranks; ++to) FillPlain(send, to * recvcount, recvcount, root, to);
  }
  const bool root_in_place = in_place && rank == root;
  void* recv_pointer = root_in_place ? send.at(rank * recvcount) : recv.data();
  const chorusResult_t result = chorusScatter(send.data(), recv_pointer, recvcount, dtype, root, comm, nullptr);
  ASSERT_EQ(result, chorusSuccess) << context << Describe(result, comm);
  const std::vector<double> expected = Plain(root, recvcount, rank);
  if (root_in_place) {
    EXPECT_EQ(CompareRange(send, rank * recvcount, expected), "") << context;
  } else {
    EXPECT_EQ(CompareRange(recv, 0, expected), "") << context;
  }
}

TEST_P(CollectiveTest, GatherEveryTypeAndRoot) {
  comms_.Run([&](int rank, chorusComm_t comm) {
    int call = 0;
    for (chorusDataType_t dtype : kAllDataTypes) {
      const int root = call % nranks();
      CheckGather(comm, rank, nranks(), dtype, root, 131, call++ % 2 == 1);
      CheckGather(comm, rank, nranks(), dtype, root, 0, false);
      if (testing::Test::HasFatalFailure()) return;
    }
    for (int root = 0; root < nranks(); ++root) {
      CheckGather(comm, rank, nranks(), chorusInt32, root, 1, false);
      CheckGather(comm, rank, nranks(), chorusFloat16, root, 259, true);
    }
  });
}

TEST_P(CollectiveTest, ScatterEveryTypeAndRoot) {
  comms_.Run([&](int rank, chorusComm_t comm) {
    int call = 0;
    for (chorusDataType_t dtype : kAllDataTypes) {
      const int root = call % nranks();
      CheckScatter(comm, rank, nranks(), dtype, root, 131, call++ % 2 == 1);
      CheckScatter(comm, rank, nranks(), dtype, root, 0, false);
      if (testing::Test::HasFatalFailure()) return;
    }
    for (int root = 0; root < nranks(); ++root) {
      CheckScatter(comm, rank, nranks(), chorusInt32, root, 1, false);
      CheckScatter(comm, rank, nranks(), chorusBfloat16, root, 259, true);
    }
  });
}

INSTANTIATE_TEST_SUITE_P(RanksAndAlgorithms, CollectiveTest, testing::ValuesIn(AllCollectiveParams()),
                         CollectiveParamName);

}  // namespace
}  // namespace chorus_test
