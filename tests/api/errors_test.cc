// Bad input is rejected with chorusInvalidArgument / chorusInvalidUsage, a
// non-empty chorusGetLastError message, and nothing written; the
// communicator keeps working afterwards.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <string>

#include "tests/api/harness.h"
#include "tests/api/typed_buffer.h"

namespace chorus_test {
namespace {

constexpr uint8_t kSentinel = 0x5A;
constexpr size_t kCount = 64;
const auto kBadType = static_cast<chorusDataType_t>(99);
const auto kNegativeType = static_cast<chorusDataType_t>(-1);
const auto kBadOp = static_cast<chorusRedOp_t>(99);
const auto kNegativeOp = static_cast<chorusRedOp_t>(-1);
const auto kUncreatedOp = static_cast<chorusRedOp_t>(chorusNumOps);

std::string LastError(chorusComm_t comm) { return chorusGetLastError(comm); }

// A 2-rank communicator; bad calls are made on one rank only (they must be
// rejected locally, before any communication), then both ranks prove the
// communicator still works.
class BadArgumentsTest : public testing::Test {
 protected:
  void SetUp() override {
    comms_ = ThreadComms::InitRank(2);
    ASSERT_TRUE(comms_.ok()) << comms_.error();
    send_.FillBytes(1);
    recv_.FillBytes(kSentinel);
  }

  void TearDown() override {
    if (!comms_.ok()) return;
    comms_.Run([](int rank, chorusComm_t comm) {
      int32_t value = rank + 1;
      ASSERT_EQ(chorusAllReduce(&value, &value, 1, chorusInt32, chorusSum, comm, nullptr), chorusSuccess)
          << "the communicator broke after rejected calls: " << LastError(comm);
      EXPECT_EQ(value, 3);
    });
  }

  // The call was rejected with `expected`, explained, and wrote nothing.
  void ExpectRejected(chorusResult_t got, chorusResult_t expected, const char* what, chorusComm_t comm) {
    EXPECT_EQ(got, expected) << what << ": " << chorusGetErrorString(got);
    EXPECT_FALSE(LastError(comm).empty()) << what << ": no chorusGetLastError message";
    EXPECT_TRUE(recv_.AllBytesAre(kSentinel)) << what << ": wrote into recvbuff";
  }
  void ExpectInvalid(chorusResult_t got, const char* what) { ExpectRejected(got, chorusInvalidArgument, what, comm()); }

  chorusComm_t comm() const { return comms_[0]; }

  ThreadComms comms_;
  TypedBuffer send_{chorusFloat32, kCount * 2};
  TypedBuffer recv_{chorusFloat32, kCount * 2};
};

TEST_F(BadArgumentsTest, FreshCommHasNoLastError) { EXPECT_EQ(LastError(comm()), ""); }

TEST_F(BadArgumentsTest, AllReduce) {
  void* recv = recv_.data();
  const void* send = send_.data();
  ExpectInvalid(chorusAllReduce(nullptr, recv, kCount, chorusFloat32, chorusSum, comm(), nullptr), "NULL sendbuff");
  ExpectInvalid(chorusAllReduce(send, nullptr, kCount, chorusFloat32, chorusSum, comm(), nullptr), "NULL recvbuff");
  ExpectInvalid(chorusAllReduce(send, recv, kCount, kBadType, chorusSum, comm(), nullptr), "dtype 99");
  ExpectInvalid(chorusAllReduce(send, recv, kCount, kNegativeType, chorusSum, comm(), nullptr), "dtype -1");
  ExpectInvalid(chorusAllReduce(send, recv, kCount, chorusFloat32, kBadOp, comm(), nullptr), "op 99");
  ExpectInvalid(chorusAllReduce(send, recv, kCount, chorusFloat32, kNegativeOp, comm(), nullptr), "op -1");
  ExpectInvalid(chorusAllReduce(send, recv, kCount, chorusFloat32, kUncreatedOp, comm(), nullptr),
                "PreMulSum op never created");
  ExpectInvalid(chorusAllReduce(send, recv, SIZE_MAX / 2, chorusFloat32, chorusSum, comm(), nullptr),
                "count * element size overflows");
  ExpectInvalid(chorusAllReduce(recv_.at(1), recv, kCount, chorusFloat32, chorusSum, comm(), nullptr),
                "partially overlapping buffers");
  EXPECT_TRUE(recv_.AllBytesAre(kSentinel));
}

TEST_F(BadArgumentsTest, RootedCollectives) {
  void* recv = recv_.data();
  const void* send = send_.data();
  for (int root : {-1, 2, 1000}) {
    const std::string root_text = "root " + std::to_string(root);
    ExpectInvalid(chorusBroadcast(send, recv, kCount, chorusFloat32, root, comm(), nullptr),
                  ("Broadcast " + root_text).c_str());
    ExpectInvalid(chorusReduce(send, recv, kCount, chorusFloat32, chorusSum, root, comm(), nullptr),
                  ("Reduce " + root_text).c_str());
    ExpectInvalid(chorusGather(send, recv, kCount, chorusFloat32, root, comm(), nullptr),
                  ("Gather " + root_text).c_str());
    ExpectInvalid(chorusScatter(send, recv, kCount, chorusFloat32, root, comm(), nullptr),
                  ("Scatter " + root_text).c_str());
  }
  ExpectInvalid(chorusBroadcast(send, nullptr, kCount, chorusFloat32, 0, comm(), nullptr), "Broadcast NULL recvbuff");
  ExpectInvalid(chorusReduce(send, recv, kCount, chorusFloat32, kBadOp, 0, comm(), nullptr), "Reduce op 99");
  ExpectInvalid(chorusReduce(send, recv, kCount, kBadType, chorusSum, 0, comm(), nullptr), "Reduce dtype 99");
}

TEST_F(BadArgumentsTest, GatherAndScatterFamilies) {
  void* recv = recv_.data();
  const void* send = send_.data();
  ExpectInvalid(chorusAllGather(send, nullptr, kCount, chorusFloat32, comm(), nullptr), "AllGather NULL recvbuff");
  ExpectInvalid(chorusAllGather(nullptr, recv, kCount, chorusFloat32, comm(), nullptr), "AllGather NULL sendbuff");
  ExpectInvalid(chorusAllGather(send, recv, kCount, kBadType, comm(), nullptr), "AllGather dtype 99");
  ExpectInvalid(chorusReduceScatter(send, recv, kCount, chorusFloat32, kBadOp, comm(), nullptr), "ReduceScatter op 99");
  ExpectInvalid(chorusReduceScatter(send, recv, kCount, kBadType, chorusSum, comm(), nullptr),
                "ReduceScatter dtype 99");
  ExpectInvalid(chorusAlltoAll(nullptr, recv, kCount, chorusFloat32, comm(), nullptr), "AlltoAll NULL sendbuff");
  ExpectInvalid(chorusAlltoAll(send, recv, kCount, kBadType, comm(), nullptr), "AlltoAll dtype 99");
}

TEST_F(BadArgumentsTest, SendRecv) {
  void* recv = recv_.data();
  const void* send = send_.data();
  for (int peer : {-1, 2, 77}) {
    const std::string peer_text = "peer " + std::to_string(peer);
    ExpectInvalid(chorusSend(send, kCount, chorusFloat32, peer, comm(), nullptr), ("Send " + peer_text).c_str());
    ExpectInvalid(chorusRecv(recv, kCount, chorusFloat32, peer, comm(), nullptr), ("Recv " + peer_text).c_str());
  }
  ExpectInvalid(chorusSend(nullptr, kCount, chorusFloat32, 1, comm(), nullptr), "Send NULL");
  ExpectInvalid(chorusRecv(nullptr, kCount, chorusFloat32, 1, comm(), nullptr), "Recv NULL");
  ExpectInvalid(chorusRecv(recv, kCount, kBadType, 1, comm(), nullptr), "Recv dtype 99");
}

TEST_F(BadArgumentsTest, GroupEndWithoutStartIsInvalidUsage) {
  EXPECT_EQ(chorusGroupEnd(), chorusInvalidUsage);
  EXPECT_FALSE(LastError(nullptr).empty());
}

TEST_F(BadArgumentsTest, QueriesAndOps) {
  ExpectInvalid(chorusCommCount(comm(), nullptr), "CommCount NULL out");
  ExpectInvalid(chorusCommUserRank(comm(), nullptr), "CommUserRank NULL out");
  float scalar = 2.0f;
  chorusRedOp_t op = chorusSum;
  ExpectInvalid(chorusRedOpCreatePreMulSum(&op, nullptr, chorusFloat32, chorusScalarHostImmediate, comm()),
                "PreMulSum NULL scalar");
  ExpectInvalid(chorusRedOpCreatePreMulSum(nullptr, &scalar, chorusFloat32, chorusScalarHostImmediate, comm()),
                "PreMulSum NULL op");
  ExpectInvalid(chorusRedOpCreatePreMulSum(&op, &scalar, kBadType, chorusScalarHostImmediate, comm()),
                "PreMulSum dtype 99");
  ExpectInvalid(chorusRedOpDestroy(chorusSum, comm()), "RedOpDestroy of a built-in op");
  ExpectInvalid(chorusRedOpDestroy(static_cast<chorusRedOp_t>(12345), comm()), "RedOpDestroy of an op never created");
}

// The other side of the NULL rule: with count 0 there is nothing to point
// at, so NULL buffers are accepted (as in NCCL).
TEST_F(BadArgumentsTest, NullBuffersWithCountZeroAreAccepted) {
  comms_.Run([](int rank, chorusComm_t comm) {
    EXPECT_EQ(chorusAllReduce(nullptr, nullptr, 0, chorusFloat32, chorusSum, comm, nullptr), chorusSuccess)
        << "rank " << rank << ": " << LastError(comm);
    EXPECT_EQ(chorusBroadcast(nullptr, nullptr, 0, chorusInt8, 1, comm, nullptr), chorusSuccess)
        << "rank " << rank << ": " << LastError(comm);
    EXPECT_EQ(chorusAllGather(nullptr, nullptr, 0, chorusInt64, comm, nullptr), chorusSuccess)
        << "rank " << rank << ": " << LastError(comm);
  });
}

TEST(NullHandleTest, NullCommIsInvalidArgument) {
  TypedBuffer send(chorusInt32, kCount);
  TypedBuffer recv(chorusInt32, kCount);
  recv.FillBytes(kSentinel);
  EXPECT_EQ(chorusAllReduce(send.data(), recv.data(), kCount, chorusInt32, chorusSum, nullptr, nullptr),
            chorusInvalidArgument);
  EXPECT_FALSE(LastError(nullptr).empty());
  EXPECT_EQ(chorusBroadcast(send.data(), recv.data(), kCount, chorusInt32, 0, nullptr, nullptr), chorusInvalidArgument);
  EXPECT_EQ(chorusSend(send.data(), kCount, chorusInt32, 0, nullptr, nullptr), chorusInvalidArgument);
  EXPECT_EQ(chorusRecv(recv.data(), kCount, chorusInt32, 0, nullptr, nullptr), chorusInvalidArgument);
  EXPECT_TRUE(recv.AllBytesAre(kSentinel));
  int value = -1;
  EXPECT_EQ(chorusCommCount(nullptr, &value), chorusInvalidArgument);
  EXPECT_EQ(chorusCommUserRank(nullptr, &value), chorusInvalidArgument);
  EXPECT_EQ(value, -1);
  EXPECT_EQ(chorusGetVersion(nullptr), chorusInvalidArgument);
  EXPECT_EQ(chorusStreamCreate(nullptr), chorusInvalidArgument);
  chorusComm_t split = nullptr;
  EXPECT_EQ(chorusCommSplit(nullptr, 0, 0, &split, nullptr), chorusInvalidArgument);
}

}  // namespace
}  // namespace chorus_test
