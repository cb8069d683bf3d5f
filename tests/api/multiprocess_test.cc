// Ranks as processes: a rendezvous process makes the unique id, then the
// parent forks (single-threaded); each child creates its communicator, runs
// collectives, checks them exactly and exits with 0 (or a code saying what
// went wrong). The parent kills children that pass the deadline.
#include <gtest/gtest.h>

#include <cstdio>
#include <future>
#include <thread>
#include <vector>

#include "tests/api/harness.h"

namespace chorus_test {
namespace {

constexpr Millis kDeadline{60000};

// Exit codes of a child.
enum ChildExit : int {
  kOk = 0,
  kInitFailed = 10,
  kCallFailed = 11,
  kWrongValue = 12,
};

int Fail(int rank, ChildExit code, const char* what, chorusResult_t result, chorusComm_t comm) {
  std::fprintf(stderr, "rank %d: %s: %s\n", rank, what, Describe(result, comm).c_str());
  return code;
}

int CollectivesInChild(const chorusUniqueId& id, int nranks, int rank) {
  chorusComm_t comm = nullptr;
  chorusResult_t result = chorusCommInitRank(&comm, nranks, id, rank);
  if (result != chorusSuccess) return Fail(rank, kInitFailed, "init", result, nullptr);

  constexpr size_t kCount = 1 << 20;
  std::vector<int32_t> ints(kCount);
  for (size_t i = 0; i < kCount; ++i) ints[i] = static_cast<int32_t>(i % 1000) * (rank + 1);
  result = chorusAllReduce(ints.data(), ints.data(), kCount, chorusInt32, chorusSum, comm, nullptr);
  if (result != chorusSuccess) return Fail(rank, kCallFailed, "allreduce", result, comm);
  const int32_t factor = nranks * (nranks + 1) / 2;
  for (size_t i = 0; i < kCount; ++i) {
    if (ints[i] != static_cast<int32_t>(i % 1000) * factor) {
      std::fprintf(stderr, "rank %d: allreduce[%zu] = %d\n", rank, i, ints[i]);
      return kWrongValue;
    }
  }

  std::vector<double> gathered(nranks * 3, -1);
  const double mine[3] = {rank * 1.5, -rank * 1.0, 7.0};
  result = chorusAllGather(mine, gathered.data(), 3, chorusFloat64, comm, nullptr);
  if (result != chorusSuccess) return Fail(rank, kCallFailed, "allgather", result, comm);
  for (int from = 0; from < nranks; ++from) {
    if (gathered[from * 3] != from * 1.5 || gathered[from * 3 + 1] != -from * 1.0 || gathered[from * 3 + 2] != 7.0) {
      std::fprintf(stderr, "rank %d: allgather block %d wrong\n", rank, from);
      return kWrongValue;
    }
  }

  std::vector<uint8_t> bytes(100001, rank == nranks - 1 ? 0 : 0xFF);
  if (rank == nranks - 1) {
    for (size_t i = 0; i < bytes.size(); ++i) bytes[i] = static_cast<uint8_t>(i * 13);
  }
  result = chorusBroadcast(bytes.data(), bytes.data(), bytes.size(), chorusUint8, nranks - 1, comm, nullptr);
  if (result != chorusSuccess) return Fail(rank, kCallFailed, "broadcast", result, comm);
  for (size_t i = 0; i < bytes.size(); ++i) {
    if (bytes[i] != static_cast<uint8_t>(i * 13)) {
      std::fprintf(stderr, "rank %d: broadcast[%zu] = %u\n", rank, i, bytes[i]);
      return kWrongValue;
    }
  }

  // Ring of Send/Recv in a group.
  const int right = (rank + 1) % nranks;
  const int left = (rank + nranks - 1) % nranks;
  std::vector<int64_t> out(5000, rank * 100 + right);
  std::vector<int64_t> in(5000, -1);
  (void)chorusGroupStart();
  (void)chorusRecv(in.data(), in.size(), chorusInt64, left, comm, nullptr);
  (void)chorusSend(out.data(), out.size(), chorusInt64, right, comm, nullptr);
  result = chorusGroupEnd();
  if (result != chorusSuccess) return Fail(rank, kCallFailed, "send/recv ring", result, comm);
  for (int64_t value : in) {
    if (value != left * 100 + rank) return Fail(rank, kWrongValue, "ring value", result, comm);
  }

  result = chorusCommDestroy(comm);
  if (result != chorusSuccess) return Fail(rank, kCallFailed, "destroy", result, nullptr);
  return kOk;
}

class MultiprocessTest : public testing::TestWithParam<int> {};

TEST_P(MultiprocessTest, CollectivesAcrossForkedProcesses) {
  const int nranks = GetParam();
  const RendezvousProcess rendezvous;  // this process stays single-threaded for ForkRanks
  ASSERT_TRUE(rendezvous.ok()) << rendezvous.error();
  const chorusUniqueId id = rendezvous.id();
  const std::vector<ChildOutcome> outcomes = ForkRanks(
      nranks, [&](int rank) { return CollectivesInChild(id, nranks, rank); }, kDeadline);
  for (const ChildOutcome& outcome : outcomes) {
    EXPECT_TRUE(outcome.exited && outcome.exit_code == kOk) << Describe(outcome);
  }
}

// The id comes from another process, so this one has no root thread that
// a forked rank could inherit mid-allocation; chorusGetUniqueId here would start one.
TEST(SingleThreadedForkTest, ARendezvousProcessLeavesThisProcessSingleThreaded) {
  const RendezvousProcess rendezvous;
  ASSERT_TRUE(rendezvous.ok()) << rendezvous.error();
  EXPECT_EQ(WaitUntilSingleThreaded(Millis(0)), 1);
}

TEST(SingleThreadedForkTest, AnotherRunningThreadIsSeenUntilItEnds) {
  std::promise<void> release;
  std::thread other([done = release.get_future()] { done.wait(); });
  EXPECT_EQ(WaitUntilSingleThreaded(Millis(50)), 2);
  release.set_value();
  other.join();
  EXPECT_EQ(WaitUntilSingleThreaded(Millis(5000)), 1);
}

INSTANTIATE_TEST_SUITE_P(Processes, MultiprocessTest, testing::Values(3, 2, 4),
                         [](const testing::TestParamInfo<int>& info) {
                           return std::to_string(info.param) + "processes";
                         });

}  // namespace
}  // namespace chorus_test
