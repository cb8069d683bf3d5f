// Send/Recv: inside groups posted in any order (never deadlocks, exact data),
// and outside groups in matching order.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <random>
#include <utility>
#include <vector>

#include "tests/api/harness.h"

namespace chorus_test {
namespace {

// Payload of message `seq` from `from` to `to`: distinct per triple.
int32_t Payload(int from, int to, int seq, size_t index) {
  return from * 1000000 + to * 10000 + seq * 1000 + static_cast<int32_t>(index % 997);
}

std::vector<int32_t> MessageFor(int from, int to, int seq, size_t count) {
  std::vector<int32_t> data(count);
  for (size_t i = 0; i < count; ++i) data[i] = Payload(from, to, seq, i);
  return data;
}

size_t CountWrong(const std::vector<int32_t>& got, int from, int to, int seq) {
  size_t wrong = 0;
  for (size_t i = 0; i < got.size(); ++i) wrong += got[i] != Payload(from, to, seq, i);
  return wrong;
}

class RingExchangeTest : public testing::TestWithParam<int> {};

TEST_P(RingExchangeTest, SendRightReceiveLeftInAGroup) {
  const int nranks = GetParam();
  ThreadComms comms = ThreadComms::InitRank(nranks);
  ASSERT_TRUE(comms.ok()) << comms.error();
  comms.Run([&](int rank, chorusComm_t comm) {
    const int right = (rank + 1) % nranks;
    const int left = (rank + nranks - 1) % nranks;
    for (size_t count : {size_t{0}, size_t{1}, size_t{100003}}) {
      const std::vector<int32_t> out = MessageFor(rank, right, 0, count);
      std::vector<int32_t> in(count, -1);
      ASSERT_EQ(chorusGroupStart(), chorusSuccess);
      // Odd ranks post the receive first.
      if (rank % 2 == 1) {
        ASSERT_EQ(chorusRecv(in.data(), count, chorusInt32, left, comm, nullptr), chorusSuccess);
      }
      ASSERT_EQ(chorusSend(out.data(), count, chorusInt32, right, comm, nullptr), chorusSuccess);
      if (rank % 2 == 0) {
        ASSERT_EQ(chorusRecv(in.data(), count, chorusInt32, left, comm, nullptr), chorusSuccess);
      }
      const chorusResult_t ended = chorusGroupEnd();
      ASSERT_EQ(ended, chorusSuccess) << Describe(ended, comm);
      EXPECT_EQ(CountWrong(in, left, rank, 0), 0u) << "rank " << rank << " count " << count;
    }
  });
}

// A ring of 1 rank sends to itself inside a group: a local copy.
INSTANTIATE_TEST_SUITE_P(Ranks, RingExchangeTest, testing::Values(1, 2, 3, 5, 8),
                         [](const testing::TestParamInfo<int>& info) { return std::to_string(info.param) + "ranks"; });

struct PostedOp {
  bool is_send;
  int peer;
};

// All pairs, kMessages messages each way per pair. Rank 0 posts every receive
// first, rank 1 every send first, the others a seeded random order; the
// n-th send to a peer matches that peer's n-th receive from us.
void AllPairsExchange(int rank, int nranks, chorusComm_t comm, unsigned seed, size_t count) {
  constexpr int kMessages = 2;
  std::vector<PostedOp> ops;
  for (int peer = 0; peer < nranks; ++peer) {
    if (peer == rank) continue;
    for (int m = 0; m < kMessages; ++m) {
      ops.push_back({true, peer});
      ops.push_back({false, peer});
    }
  }
  if (rank == 0) {
    std::stable_partition(ops.begin(), ops.end(), [](const PostedOp& op) { return !op.is_send; });
  } else if (rank == 1) {
    std::stable_partition(ops.begin(), ops.end(), [](const PostedOp& op) { return op.is_send; });
  } else {
    std::mt19937 random(seed * 131 + static_cast<unsigned>(rank));
    std::shuffle(ops.begin(), ops.end(), random);
  }
  std::vector<std::vector<int32_t>> buffers(ops.size());
  std::vector<int> seq_of_op(ops.size());
  std::map<std::pair<bool, int>, int> next_seq;
  ASSERT_EQ(chorusGroupStart(), chorusSuccess);
  for (size_t k = 0; k < ops.size(); ++k) {
    const PostedOp& op = ops[k];
    const int seq = next_seq[{op.is_send, op.peer}]++;
    seq_of_op[k] = seq;
    chorusResult_t posted;
    if (op.is_send) {
      buffers[k] = MessageFor(rank, op.peer, seq, count + seq);
      posted = chorusSend(buffers[k].data(), buffers[k].size(), chorusInt32, op.peer, comm, nullptr);
    } else {
      buffers[k].assign(count + seq, -1);
      posted = chorusRecv(buffers[k].data(), buffers[k].size(), chorusInt32, op.peer, comm, nullptr);
    }
    ASSERT_EQ(posted, chorusSuccess) << Describe(posted, comm);
  }
  const chorusResult_t ended = chorusGroupEnd();
  ASSERT_EQ(ended, chorusSuccess) << Describe(ended, comm);
  for (size_t k = 0; k < ops.size(); ++k) {
    if (ops[k].is_send) continue;
    EXPECT_EQ(CountWrong(buffers[k], ops[k].peer, rank, seq_of_op[k]), 0u)
        << "rank " << rank << " from " << ops[k].peer << " message " << seq_of_op[k];
  }
}

class AllPairsTest : public testing::TestWithParam<int> {};

TEST_P(AllPairsTest, AnyPostingOrderInAGroupDeliversExactData) {
  const int nranks = GetParam();
  ThreadComms comms = ThreadComms::InitRank(nranks);
  ASSERT_TRUE(comms.ok()) << comms.error();
  comms.Run([&](int rank, chorusComm_t comm) {
    for (unsigned seed = 1; seed <= 3; ++seed) {
      AllPairsExchange(rank, nranks, comm, seed, seed == 3 ? 65537 : 13);
      if (testing::Test::HasFatalFailure()) return;
    }
  });
}

INSTANTIATE_TEST_SUITE_P(Ranks, AllPairsTest, testing::Values(2, 3, 4, 5),
                         [](const testing::TestParamInfo<int>& info) { return std::to_string(info.param) + "ranks"; });

// Outside a group each call blocks, so the two ranks issue matching orders.
TEST(P2PTest, BlockingSendRecvInMatchingOrder) {
  ThreadComms comms = ThreadComms::InitRank(2);
  ASSERT_TRUE(comms.ok()) << comms.error();
  comms.Run([&](int rank, chorusComm_t comm) {
    const int peer = 1 - rank;
    for (int seq = 0; seq < 3; ++seq) {
      const size_t count = seq == 2 ? 300007 : 17 + static_cast<size_t>(seq);
      const std::vector<int32_t> out = MessageFor(rank, peer, seq, count);
      std::vector<int32_t> in(count, -1);
      if (rank == 0) {
        ASSERT_EQ(chorusSend(out.data(), count, chorusInt32, peer, comm, nullptr), chorusSuccess);
        ASSERT_EQ(chorusRecv(in.data(), count, chorusInt32, peer, comm, nullptr), chorusSuccess);
      } else {
        ASSERT_EQ(chorusRecv(in.data(), count, chorusInt32, peer, comm, nullptr), chorusSuccess);
        ASSERT_EQ(chorusSend(out.data(), count, chorusInt32, peer, comm, nullptr), chorusSuccess);
      }
      EXPECT_EQ(CountWrong(in, peer, rank, seq), 0u) << "rank " << rank << " seq " << seq;
    }
  });
}

// Send/Recv on a stream: queued, then completed by Synchronize.
TEST(P2PTest, SendRecvOnAStream) {
  ThreadComms comms = ThreadComms::InitRank(2);
  ASSERT_TRUE(comms.ok()) << comms.error();
  comms.Run([&](int rank, chorusComm_t comm) {
    chorusStream_t stream = nullptr;
    ASSERT_EQ(chorusStreamCreate(&stream), chorusSuccess);
    const int peer = 1 - rank;
    const std::vector<int32_t> out = MessageFor(rank, peer, 0, 4097);
    std::vector<int32_t> in(4097, -1);
    ASSERT_EQ(chorusGroupStart(), chorusSuccess);
    ASSERT_EQ(chorusSend(out.data(), out.size(), chorusInt32, peer, comm, stream), chorusSuccess);
    ASSERT_EQ(chorusRecv(in.data(), in.size(), chorusInt32, peer, comm, stream), chorusSuccess);
    ASSERT_EQ(chorusGroupEnd(), chorusSuccess);
    EXPECT_EQ(chorusStreamSynchronize(stream), chorusSuccess);
    EXPECT_EQ(CountWrong(in, peer, rank, 0), 0u) << "rank " << rank;
    EXPECT_EQ(chorusStreamDestroy(stream), chorusSuccess);
  });
}

}  // namespace
}  // namespace chorus_test
