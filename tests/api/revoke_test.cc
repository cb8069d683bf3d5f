// chorusCommRevoke: one rank revokes, and every rank's pending and later
// operations fail with chorusRevoked (naming the revoking rank) long before
// their deadline, whether the rank is blocked in an allreduce or idle;
// shrink then works on the revoked communicator. Ranks as threads and as
// forked processes, over shared memory and TCP. Deadlines are 60 s and the
// bound asserted is 10 s: far from both, so a loaded host cannot fail it.
#include <gtest/gtest.h>

#include <dirent.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "tests/api/harness.h"

namespace chorus_test {
namespace {

constexpr int kTimeoutMs = 60000;
constexpr double kFailFastSeconds = 10;  // well under kTimeoutMs
constexpr size_t kCount = 1024;
constexpr Millis kParentDeadline{120000};

using Clock = std::chrono::steady_clock;

double SecondsSince(Clock::time_point start) { return std::chrono::duration<double>(Clock::now() - start).count(); }

bool Contains(const char* text, const std::string& part) { return std::string(text).find(part) != std::string::npos; }

// The transport every communicator of a test uses (read at creation).
class TransportScope {
 public:
  explicit TransportScope(const char* name) { setenv("CHORUS_TRANSPORT", name, 1); }
  ~TransportScope() { unsetenv("CHORUS_TRANSPORT"); }
};

chorusResult_t AllReduceOnce(chorusComm_t comm, std::vector<float>* data) {
  return chorusAllReduce(data->data(), data->data(), data->size(), chorusFloat32, chorusSum, comm, nullptr);
}

// A one-shot barrier of `count` threads. Revoking as soon as this rank's
// part of an operation is done could fail the same operation on ranks that
// are still in it (it is pending there), which these tests do not want.
void Arrive(std::atomic<int>* arrived, int count) {
  arrived->fetch_add(1);
  while (arrived->load() < count) std::this_thread::sleep_for(Millis(1));
}

// Shrinks `comm` and checks the new communicator by an allgather of the old
// ranks: `expected` in order, this rank at its index.
void ExpectShrinkTo(chorusComm_t comm, int old_rank, const std::vector<int>& expected) {
  chorusComm_t shrunk = nullptr;
  ASSERT_EQ(chorusCommShrink(comm, &shrunk), chorusSuccess) << chorusGetLastError(comm);
  int size = -1, rank = -1;
  ASSERT_EQ(chorusCommCount(shrunk, &size), chorusSuccess);
  ASSERT_EQ(chorusCommUserRank(shrunk, &rank), chorusSuccess);
  std::vector<int32_t> members(expected.size(), -1);
  const int32_t mine = old_rank;
  ASSERT_EQ(static_cast<size_t>(size), expected.size());
  EXPECT_EQ(chorusAllGather(&mine, members.data(), 1, chorusInt32, shrunk, nullptr), chorusSuccess)
      << chorusGetLastError(shrunk);
  EXPECT_EQ(std::vector<int>(members.begin(), members.end()), expected);
  EXPECT_EQ(members[static_cast<size_t>(rank)], old_rank);
  EXPECT_EQ(chorusCommDestroy(shrunk), chorusSuccess);
}

// The forked cases run first, while this process has no threads of its own.
// Forked processes: rank 3 revokes while ranks 0..2 wait for it in an
// allreduce; with `stopped`, rank 2 is stopped (SIGSTOP) instead and is
// resumed by rank 0 afterwards, so it finds the notice waiting; with `dead`,
// rank 2 is SIGKILLed before the revoke and the shrink leaves it out.
enum class Rank2 { kHealthy, kStopped, kDead };

enum ProcessExit : int {
  kShrunkTo = 100,  // + new size
  kInitFailed = 10,
  kFirstRoundFailed = 11,
  kWrongCode = 12,
  kTooSlow = 13,
  kRevokeFailed = 14,
  kShrinkFailed = 15,
  kBadNewComm = 16,
  kNotNamed = 17,
};

struct SharedPids {
  std::atomic<int> rank2_pid;
};

int ProcessBody(const chorusUniqueId& id, int rank, Rank2 rank2, SharedPids* shared) {
  constexpr int kRanks = 4, kRevoker = 3;
  chorusConfig_t config = MakeConfig(nullptr, kTimeoutMs);
  chorusComm_t comm = nullptr;
  if (chorusCommInitRankConfig(&comm, kRanks, id, rank, &config) != chorusSuccess) {
    std::fprintf(stderr, "rank %d: init: %s\n", rank, chorusGetLastError(nullptr));
    return kInitFailed;
  }
  std::vector<float> data(kCount, 1.0f);
  if (AllReduceOnce(comm, &data) != chorusSuccess) return kFirstRoundFailed;
  if (rank == 2 && rank2 == Rank2::kDead) raise(SIGKILL);
  if (rank == 2 && rank2 == Rank2::kStopped) {
    shared->rank2_pid.store(getpid());
    raise(SIGSTOP);  // rank 0 resumes it once the others have failed
  }
  if (rank == kRevoker) {
    std::this_thread::sleep_for(Millis(300));  // the others are blocked by now
    const Clock::time_point start = Clock::now();
    if (chorusCommRevoke(comm) != chorusSuccess) return kRevokeFailed;
    if (SecondsSince(start) > kFailFastSeconds) return kTooSlow;
  }
  const Clock::time_point start = Clock::now();
  const chorusResult_t result = AllReduceOnce(comm, &data);
  const double seconds = SecondsSince(start);
  std::fprintf(stderr, "rank %d: %.3f s: %s\n", rank, seconds, Describe(result, comm).c_str());
  // A survivor may hear of rank 2's death before the revoke.
  const bool death_first = rank2 == Rank2::kDead && result == chorusRemoteError;
  if (result != chorusRevoked && !death_first) return kWrongCode;
  if (!death_first && rank != kRevoker && !Contains(chorusGetLastError(comm), "revoked by rank 3")) return kNotNamed;
  if (seconds > kFailFastSeconds) return kTooSlow;
  if (rank == 0 && rank2 == Rank2::kStopped) {
    while (shared->rank2_pid.load() == 0) std::this_thread::sleep_for(Millis(1));
    kill(shared->rank2_pid.load(), SIGCONT);
  }
  chorusComm_t shrunk = nullptr;
  if (chorusCommShrink(comm, &shrunk) != chorusSuccess) {
    std::fprintf(stderr, "rank %d: shrink: %s\n", rank, chorusGetLastError(comm));
    return kShrinkFailed;
  }
  int size = -1;
  std::fill(data.begin(), data.end(), 1.0f);
  const bool good = chorusCommCount(shrunk, &size) == chorusSuccess &&
                    AllReduceOnce(shrunk, &data) == chorusSuccess && data[0] == static_cast<float>(size);
  (void)chorusCommDestroy(shrunk);
  (void)chorusCommDestroy(comm);
  return good ? kShrunkTo + size : kBadNewComm;
}

struct ProcessCase {
  const char* transport;
  Rank2 rank2;
};

class RevokeProcessesTest : public ::testing::TestWithParam<ProcessCase> {};

TEST_P(RevokeProcessesTest, EveryRankFailsFastThenShrinks) {
  const ProcessCase param = GetParam();
  TransportScope transport(param.transport);
  void* memory = mmap(nullptr, sizeof(SharedPids), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  ASSERT_NE(memory, MAP_FAILED);
  auto* shared = new (memory) SharedPids();
  shared->rank2_pid.store(0);
  // The root in a process of its own: this one stays single-threaded for
  // ForkRanks (tests/common/single_threaded_fork.h).
  const RendezvousProcess rendezvous;
  ASSERT_TRUE(rendezvous.ok()) << rendezvous.error();
  const chorusUniqueId id = rendezvous.id();
  const std::vector<ChildOutcome> outcomes =
      ForkRanks(4, [&](int rank) { return ProcessBody(id, rank, param.rank2, shared); }, kParentDeadline);
  munmap(memory, sizeof(SharedPids));
  const int survivors = param.rank2 == Rank2::kDead ? 3 : 4;
  for (const ChildOutcome& outcome : outcomes) {
    if (outcome.rank == 2 && param.rank2 == Rank2::kDead) {
      EXPECT_EQ(outcome.signal, SIGKILL) << Describe(outcome);
      continue;
    }
    EXPECT_TRUE(outcome.exited && outcome.exit_code == kShrunkTo + survivors) << Describe(outcome);
  }
}

INSTANTIATE_TEST_SUITE_P(Cases, RevokeProcessesTest,
                         ::testing::Values(ProcessCase{"shm", Rank2::kHealthy}, ProcessCase{"tcp", Rank2::kHealthy},
                                           ProcessCase{"shm", Rank2::kStopped}, ProcessCase{"tcp", Rank2::kStopped},
                                           ProcessCase{"shm", Rank2::kDead}, ProcessCase{"tcp", Rank2::kDead}),
                         [](const ::testing::TestParamInfo<ProcessCase>& info) {
                           const char* rank2 = info.param.rank2 == Rank2::kHealthy ? "Healthy"
                                               : info.param.rank2 == Rank2::kStopped ? "Rank2Stopped"
                                                                                    : "Rank2Dead";
                           return std::string(info.param.transport) + rank2;
                         });

TEST(RevokeTest, RejectsNullComm) {
  EXPECT_EQ(chorusCommRevoke(nullptr), chorusInvalidArgument);
  EXPECT_TRUE(Contains(chorusGetLastError(nullptr), "comm is NULL")) << chorusGetLastError(nullptr);
}

TEST(RevokeTest, HasItsOwnResultCode) {
  EXPECT_EQ(static_cast<int>(chorusRevoked), 8);
  EXPECT_EQ(static_cast<int>(chorusNumResults), 9);
  EXPECT_TRUE(Contains(chorusGetErrorString(chorusRevoked), "revoked")) << chorusGetErrorString(chorusRevoked);
}

TEST(RevokeTest, RevokedHandleStaysValidUntilDestroyed) {
  ThreadComms comms = ThreadComms::InitRank(1);
  ASSERT_TRUE(comms.ok()) << comms.error();
  chorusComm_t comm = comms[0];
  EXPECT_EQ(chorusCommRevoke(comm), chorusSuccess) << chorusGetLastError(comm);
  EXPECT_EQ(chorusCommRevoke(comm), chorusSuccess);  // idempotent
  std::vector<float> data(kCount, 1.0f);
  EXPECT_EQ(AllReduceOnce(comm, &data), chorusRevoked);
  EXPECT_TRUE(Contains(chorusGetLastError(comm), "revoked by this rank")) << chorusGetLastError(comm);
  chorusResult_t async = chorusSuccess;
  EXPECT_EQ(chorusCommGetAsyncError(comm, &async), chorusSuccess);
  EXPECT_EQ(async, chorusRevoked);
  int count = 0;
  EXPECT_EQ(chorusCommCount(comm, &count), chorusSuccess);
  EXPECT_EQ(count, 1);
  EXPECT_EQ(chorusCommDestroy(comms.Release(0)), chorusSuccess);
  EXPECT_EQ(chorusCommRevoke(comm), chorusInvalidUsage);  // the tombstone
}

class RevokeThreadsTest : public ::testing::TestWithParam<const char*> {};

// Ranks 0 and 2 wait in an allreduce for rank 1, which revokes instead of
// joining: both return chorusRevoked naming rank 1, far before the deadline.
TEST_P(RevokeThreadsTest, BlockedRanksFailFastAndShrink) {
  TransportScope transport(GetParam());
  chorusConfig_t config = MakeConfig(nullptr, kTimeoutMs);
  ThreadComms comms = ThreadComms::InitRank(3, &config);
  ASSERT_TRUE(comms.ok()) << comms.error();
  comms.Run([](int rank, chorusComm_t comm) {
    std::vector<float> data(kCount, 1.0f);
    ASSERT_EQ(AllReduceOnce(comm, &data), chorusSuccess) << chorusGetLastError(comm);
    if (rank == 1) {
      std::this_thread::sleep_for(Millis(200));  // let the others block
      EXPECT_EQ(chorusCommRevoke(comm), chorusSuccess) << chorusGetLastError(comm);
      EXPECT_EQ(AllReduceOnce(comm, &data), chorusRevoked);
    } else {
      const Clock::time_point start = Clock::now();
      EXPECT_EQ(AllReduceOnce(comm, &data), chorusRevoked) << chorusGetLastError(comm);
      EXPECT_LT(SecondsSince(start), kFailFastSeconds);
      EXPECT_TRUE(Contains(chorusGetLastError(comm), "revoked by rank 1")) << chorusGetLastError(comm);
    }
    // Every later call fails the same way, blocking, grouped or on a stream.
    EXPECT_EQ(AllReduceOnce(comm, &data), chorusRevoked);
    EXPECT_EQ(chorusGroupStart(), chorusSuccess);
    EXPECT_EQ(chorusSend(data.data(), 1, chorusFloat32, (rank + 1) % 3, comm, nullptr), chorusSuccess);
    EXPECT_EQ(chorusRecv(data.data() + 1, 1, chorusFloat32, (rank + 2) % 3, comm, nullptr), chorusSuccess);
    EXPECT_EQ(chorusGroupEnd(), chorusRevoked);
    chorusStream_t stream = nullptr;
    ASSERT_EQ(chorusStreamCreate(&stream), chorusSuccess);
    (void)chorusAllReduce(data.data(), data.data(), kCount, chorusFloat32, chorusSum, comm, stream);
    EXPECT_EQ(chorusStreamSynchronize(stream), chorusRevoked);
    EXPECT_EQ(chorusStreamDestroy(stream), chorusSuccess);
    ExpectShrinkTo(comm, rank, {0, 1, 2});
  });
}

// Rank 0 revokes while the others are idle: their next call fails at once
// with chorusRevoked; a second revoke anywhere changes nothing.
TEST_P(RevokeThreadsTest, IdleRanksNextCallFails) {
  TransportScope transport(GetParam());
  chorusConfig_t config = MakeConfig(nullptr, kTimeoutMs);
  ThreadComms comms = ThreadComms::InitRank(3, &config);
  ASSERT_TRUE(comms.ok()) << comms.error();
  std::atomic<int> revoked{0}, arrived{0};
  comms.Run([&](int rank, chorusComm_t comm) {
    std::vector<float> data(kCount, 1.0f);
    EXPECT_EQ(AllReduceOnce(comm, &data), chorusSuccess) << chorusGetLastError(comm);
    Arrive(&arrived, 3);
    if (rank == 0) {
      EXPECT_EQ(chorusCommRevoke(comm), chorusSuccess) << chorusGetLastError(comm);
      revoked.store(1);
    } else {
      while (revoked.load() == 0) std::this_thread::sleep_for(Millis(1));
      std::this_thread::sleep_for(Millis(50));  // the notice's way through the connections
    }
    const Clock::time_point start = Clock::now();
    EXPECT_EQ(AllReduceOnce(comm, &data), chorusRevoked) << chorusGetLastError(comm);
    EXPECT_LT(SecondsSince(start), kFailFastSeconds);
    if (rank != 0) {
      EXPECT_TRUE(Contains(chorusGetLastError(comm), "revoked by rank 0")) << chorusGetLastError(comm);
    }
    chorusResult_t async = chorusSuccess;
    EXPECT_EQ(chorusCommGetAsyncError(comm, &async), chorusSuccess);
    EXPECT_EQ(async, chorusRevoked);
    EXPECT_EQ(chorusCommRevoke(comm), chorusSuccess);
    ExpectShrinkTo(comm, rank, {0, 1, 2});
  });
}

// Another thread of rank 0 revokes while rank 0 itself is blocked in an
// allreduce that rank 1 never joins.
TEST_P(RevokeThreadsTest, RevokeFromAnotherThreadUnblocksTheCaller) {
  TransportScope transport(GetParam());
  chorusConfig_t config = MakeConfig(nullptr, kTimeoutMs);
  ThreadComms comms = ThreadComms::InitRank(2, &config);
  ASSERT_TRUE(comms.ok()) << comms.error();
  std::atomic<int> rank0_done{0};
  comms.Run([&](int rank, chorusComm_t comm) {
    std::vector<float> data(kCount, 1.0f);
    if (rank == 0) {
      std::thread revoker([comm] {
        std::this_thread::sleep_for(Millis(200));
        EXPECT_EQ(chorusCommRevoke(comm), chorusSuccess) << chorusGetLastError(comm);
      });
      const Clock::time_point start = Clock::now();
      EXPECT_EQ(AllReduceOnce(comm, &data), chorusRevoked) << chorusGetLastError(comm);
      EXPECT_LT(SecondsSince(start), kFailFastSeconds);
      revoker.join();
      rank0_done.store(1);
    } else {
      while (rank0_done.load() == 0) std::this_thread::sleep_for(Millis(1));
      // This call matches the one rank 0 started before revoking: it may
      // still complete where rank 0's part of it arrived before the notice
      // (TCP: the notice follows the messages already sent). The next fails.
      chorusResult_t result = AllReduceOnce(comm, &data);
      if (result == chorusSuccess) result = AllReduceOnce(comm, &data);
      EXPECT_EQ(result, chorusRevoked) << chorusGetLastError(comm);
      EXPECT_TRUE(Contains(chorusGetLastError(comm), "revoked by rank 0")) << chorusGetLastError(comm);
    }
  });
}

size_t OpenDescriptors() {
  size_t count = 0;
  if (DIR* dir = opendir("/proc/self/fd")) {
    while (readdir(dir) != nullptr) ++count;
    closedir(dir);
  }
  return count;
}

// Revoke a healthy communicator, destroy it: no descriptor stays open.
TEST_P(RevokeThreadsTest, RevokeThenDestroyLeaksNothing) {
  TransportScope transport(GetParam());
  const size_t before = OpenDescriptors();
  {
    chorusConfig_t config = MakeConfig(nullptr, kTimeoutMs);
    ThreadComms comms = ThreadComms::InitRank(3, &config);
    ASSERT_TRUE(comms.ok()) << comms.error();
    std::atomic<int> arrived{0};
    comms.Run([&](int rank, chorusComm_t comm) {
      std::vector<float> data(kCount, 1.0f);
      EXPECT_EQ(AllReduceOnce(comm, &data), chorusSuccess);
      Arrive(&arrived, 3);
      if (rank == 2) {
        EXPECT_EQ(chorusCommRevoke(comm), chorusSuccess);
      }
    });
  }  // destroyed on every rank
  // The rendezvous root (a detached thread) closes its listener on its own.
  const Clock::time_point start = Clock::now();
  while (OpenDescriptors() > before && SecondsSince(start) < kFailFastSeconds) std::this_thread::sleep_for(Millis(10));
  EXPECT_LE(OpenDescriptors(), before);
}

INSTANTIATE_TEST_SUITE_P(Transports, RevokeThreadsTest, ::testing::Values("shm", "tcp"),
                         [](const ::testing::TestParamInfo<const char*>& info) { return std::string(info.param); });

}  // namespace
}  // namespace chorus_test
