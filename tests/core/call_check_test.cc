// CallChecker (core/call_check.h) over an in-memory exchange, ranks as
// threads: the verdicts and their text, call numbers staying alike after a
// rejected launch, exchange failures passed on as failures (not
// mismatches), a peer without the check named; and through communicators
// with CHORUS_CHECK=1: one board round per checked call on the board path,
// and no allocation by a warm checked call on the board or over TCP.
#include "core/call_check.h"

#include <gtest/gtest.h>

#include <condition_variable>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "allocation_counter.h"
#include "chorus/chorus.h"
#include "core/handles.h"

namespace chorus {
namespace {

// Every rank's bytes to every rank, as the communicator's exchange would.
class MemoryExchange {
 public:
  explicit MemoryExchange(int nranks) : nranks_(nranks) {}

  Status Share(int rank, const uint8_t* mine, size_t bytes, uint8_t* all) {
    std::unique_lock<std::mutex> lock(mutex_);
    const uint64_t generation = generation_;
    gathering_.resize(static_cast<size_t>(nranks_) * bytes);
    std::memcpy(gathering_.data() + static_cast<size_t>(rank) * bytes, mine, bytes);
    if (++arrived_ == nranks_) {
      shared_.swap(gathering_);
      arrived_ = 0;
      ++generation_;
      changed_.notify_all();
    } else {
      changed_.wait(lock, [&] { return generation_ != generation; });
    }
    std::memcpy(all, shared_.data(), static_cast<size_t>(nranks_) * bytes);
    return Status::Ok();
  }

 private:
  const int nranks_;
  std::mutex mutex_;
  std::condition_variable changed_;
  std::vector<uint8_t> gathering_, shared_;
  int arrived_ = 0;
  uint64_t generation_ = 0;
};

Operation MakeCollective(Collective coll, size_t count, DataType dtype, ReduceOp op = ReduceOp::kSum, int root = 0) {
  Operation operation;
  operation.kind = Operation::Kind::kCollective;
  operation.args.coll = coll;
  operation.args.count = count;
  operation.args.dtype = dtype;
  operation.args.op = op;
  operation.args.root = root;
  return operation;
}

// Runs one launch per rank (launches[rank]) through a checker per rank
// (kept across calls in `checkers`); the status and mismatch flag of each.
struct Verdict {
  Status status;
  bool mismatch = false;
};

std::vector<Verdict> CheckLaunches(std::vector<CallChecker>& checkers, MemoryExchange& exchange,
                                   const std::vector<std::vector<Operation>>& launches) {
  std::vector<Verdict> verdicts(checkers.size());
  std::vector<std::thread> threads;
  for (size_t rank = 0; rank < checkers.size(); ++rank) {
    threads.emplace_back([&, rank] {
      const CheckExchange share = [&](const uint8_t* mine, size_t bytes, uint8_t* all) {
        return exchange.Share(static_cast<int>(rank), mine, bytes, all);
      };
      verdicts[rank].status = checkers[rank].Check(launches[rank].data(), launches[rank].size(), share,
                                                   &verdicts[rank].mismatch);
    });
  }
  for (std::thread& thread : threads) thread.join();
  return verdicts;
}

std::vector<CallChecker> Checkers(int nranks) {
  std::vector<CallChecker> checkers;
  checkers.reserve(nranks);
  for (int rank = 0; rank < nranks; ++rank) checkers.emplace_back(rank, nranks);
  return checkers;
}

TEST(CallCheckFormatTest, NamesEveryCollectiveAsTheApiDoes) {
  EXPECT_EQ(FormatCall(DescribeCall(MakeCollective(Collective::kAllReduce, 1024, chorusFloat32))),
            "AllReduce(count=1024, float32, sum)");
  EXPECT_EQ(FormatCall(DescribeCall(MakeCollective(Collective::kBroadcast, 8, chorusUint8, ReduceOp::kSum, 3))),
            "Broadcast(count=8, uint8, root 3)");
  EXPECT_EQ(FormatCall(DescribeCall(MakeCollective(Collective::kReduce, 2, chorusBfloat16, ReduceOp::kMax, 1))),
            "Reduce(count=2, bfloat16, max, root 1)");
  EXPECT_EQ(FormatCall(DescribeCall(MakeCollective(Collective::kAllToAll, 5, chorusFloat16))), "AlltoAll(count=5, float16)");
  Operation average = MakeCollective(Collective::kReduceScatter, 4, chorusFloat64);
  average.average = true;
  EXPECT_EQ(FormatCall(DescribeCall(average)), "ReduceScatter(count=4, float64, avg)");
  Operation premul = MakeCollective(Collective::kAllReduce, 4, chorusFloat32);
  premul.premultiply = true;
  EXPECT_EQ(FormatCall(DescribeCall(premul)), "AllReduce(count=4, float32, premulsum)");
  // What does not take part in a collective is not compared: a root of a
  // rootless call, an op of a call that does not reduce.
  EXPECT_EQ(DescribeCall(MakeCollective(Collective::kAllGather, 4, chorusInt32, ReduceOp::kMax, 2)),
            DescribeCall(MakeCollective(Collective::kAllGather, 4, chorusInt32)));
  const CallEntry entry = DescribeCall(MakeCollective(Collective::kGather, 1ull << 40, chorusInt64, ReduceOp::kSum, 7));
  uint8_t bytes[kCallEntryBytes];
  EncodeCall(entry, bytes);
  EXPECT_EQ(DecodeCall(bytes), entry);
}

TEST(CallCheckerTest, MatchedLaunchesPassAndNumberTheirCalls) {
  std::vector<CallChecker> checkers = Checkers(3);
  MemoryExchange exchange(3);
  const std::vector<Operation> group = {MakeCollective(Collective::kAllReduce, 10, chorusFloat32),
                                        MakeCollective(Collective::kAllGather, 3, chorusInt8)};
  for (const Verdict& verdict : CheckLaunches(checkers, exchange, {group, group, group})) {
    EXPECT_TRUE(verdict.status.ok()) << verdict.status.message();
    EXPECT_FALSE(verdict.mismatch);
  }
  for (const CallChecker& checker : checkers) EXPECT_EQ(checker.next_call(), 3u);
  // A launch without collectives is not exchanged at all (point-to-point).
  Operation send;
  send.kind = Operation::Kind::kSend;
  std::vector<Verdict> verdicts = CheckLaunches(checkers, exchange, {{send}, {}, {send}});
  for (const Verdict& verdict : verdicts) EXPECT_TRUE(verdict.status.ok());
  for (const CallChecker& checker : checkers) EXPECT_EQ(checker.next_call(), 3u);
}

TEST(CallCheckerTest, ARejectedLaunchKeepsCallNumbersAlike) {
  std::vector<CallChecker> checkers = Checkers(2);
  MemoryExchange exchange(2);
  const Operation one = MakeCollective(Collective::kAllReduce, 10, chorusFloat32);
  std::vector<Verdict> verdicts = CheckLaunches(checkers, exchange, {{one, one, one}, {one}});
  for (const Verdict& verdict : verdicts) {
    EXPECT_EQ(verdict.status.code(), chorusInvalidUsage);
    EXPECT_TRUE(verdict.mismatch);
    EXPECT_NE(verdict.status.message().find("rank 1 called nothing more (its group holds 1 collective) as call #2; "
                                            "rank 0 called AllReduce(count=10, float32, sum) (2 of a group of 3)"),
              std::string::npos)
        << verdict.status.message();
  }
  // Both advanced by the longer launch: the next calls match.
  EXPECT_EQ(checkers[0].next_call(), 4u);
  EXPECT_EQ(checkers[1].next_call(), 4u);
  for (const Verdict& verdict : CheckLaunches(checkers, exchange, {{one}, {one}})) EXPECT_TRUE(verdict.status.ok());
}

TEST(CallCheckerTest, AFailedExchangeIsAFailureNotAMismatch) {
  CallChecker checker(0, 2);
  const Operation one = MakeCollective(Collective::kBroadcast, 10, chorusFloat32);
  bool mismatch = true;
  const Status status = checker.Check(
      &one, 1, [](const uint8_t*, size_t, uint8_t*) { return RemoteError("peer 1 died"); }, &mismatch);
  EXPECT_EQ(status.code(), chorusRemoteError);
  EXPECT_FALSE(mismatch);
  EXPECT_NE(status.message().find("CHORUS_CHECK: rank 0 sharing call #1 (Broadcast(count=10, float32, root 0)) with "
                                  "the other ranks: peer 1 died"),
            std::string::npos)
      << status.message();
}

TEST(CallCheckerTest, APeerWithoutTheCheckIsNamed) {
  CallChecker checker(0, 2);
  const Operation one = MakeCollective(Collective::kAllReduce, 10, chorusFloat32);
  bool mismatch = true;
  const Status status = checker.Check(
      &one, 1,
      [](const uint8_t* mine, size_t bytes, uint8_t* all) {
        std::memcpy(all, mine, bytes);
        std::memset(all + bytes, 0, bytes);  // what a rank moving data instead would send
        return Status::Ok();
      },
      &mismatch);
  EXPECT_EQ(status.code(), chorusInternalError);
  EXPECT_FALSE(mismatch);
  EXPECT_NE(status.message().find("rank 1 sent a malformed call summary (is CHORUS_CHECK=1 set on every rank?)"),
            std::string::npos)
      << status.message();
}

// ---- Through communicators ----

// Sets CHORUS_CHECK=1 (and `transport`) for one test.
class CheckedComms : public ::testing::Test {
 protected:
  void TearDown() override {
    unsetenv("CHORUS_CHECK");
    unsetenv("CHORUS_TRANSPORT");
  }

  // Runs body(rank, comm) on 2 rank threads of a checked communicator.
  void Run(const char* transport, const char* algo, const std::function<void(int, chorusComm_t)>& body) {
    setenv("CHORUS_CHECK", "1", 1);
    setenv("CHORUS_TRANSPORT", transport, 1);
    chorusUniqueId id;
    ASSERT_EQ(chorusGetUniqueId(&id), chorusSuccess);
    std::vector<std::thread> threads;
    for (int rank = 0; rank < 2; ++rank) {
      threads.emplace_back([&, rank] {
        chorusConfig_t config = CHORUS_CONFIG_INITIALIZER;
        config.algo = algo;
        config.timeoutMs = 30000;
        chorusComm_t comm = nullptr;
        ASSERT_EQ(chorusCommInitRankConfig(&comm, 2, id, rank, &config), chorusSuccess);
        body(rank, comm);
        chorusCommDestroy(comm);
      });
    }
    for (std::thread& thread : threads) thread.join();
  }
};

TEST_F(CheckedComms, TheBoardPathTakesOneCheckRoundPerCallAndAllocatesNothingWarm) {
  std::vector<long> allocations(2, -1);
  Run("auto", "allreduce:oneshot", [&](int rank, chorusComm_t comm) {
    ASSERT_TRUE(comm->impl->checks_calls());
    float send[2] = {1.0f + rank, 2.0f}, recv[2] = {0, 0};
    const uint64_t before = comm->impl->board_rounds();
    for (int i = 0; i < 2000; ++i) {
      if (i == 1000) testing::ResetThreadAllocations();
      ASSERT_EQ(chorusAllReduce(send, recv, 2, chorusFloat32, chorusSum, comm, nullptr), chorusSuccess);
    }
    allocations[rank] = testing::ThreadAllocations();
    EXPECT_EQ(recv[0], 3.0f);
    EXPECT_EQ(comm->impl->board_rounds() - before, 2u * 2000);  // the check's round and the allreduce's
  });
  EXPECT_EQ(allocations, std::vector<long>({0, 0}));
}

TEST_F(CheckedComms, AWarmCheckedCallOverTcpAllocatesNothing) {
  std::vector<long> allocations(2, -1);
  Run("tcp", "allreduce:ring", [&](int rank, chorusComm_t comm) {
    float send[256], recv[256];
    for (float& value : send) value = 1.0f + rank;
    for (int i = 0; i < 400; ++i) {
      if (i == 200) testing::ResetThreadAllocations();
      ASSERT_EQ(chorusAllReduce(send, recv, 256, chorusFloat32, chorusSum, comm, nullptr), chorusSuccess);
    }
    allocations[rank] = testing::ThreadAllocations();
    EXPECT_EQ(recv[255], 3.0f);
  });
  EXPECT_EQ(allocations, std::vector<long>({0, 0}));
}

}  // namespace
}  // namespace chorus
