// CHORUS_HEARTBEAT_MS: a rank that is stopped (SIGSTOP), not killed, keeps
// its connections open, so without the heartbeat its peers learn of it only
// at CHORUS_TIMEOUT_MS. With it, every survivor's call fails within a few
// periods naming the stopped rank, over shm and over TCP, in a collective or
// while idle (chorusCommGetAsyncError); ranks that end their communicators
// at different times raise nothing.
#include <gtest/gtest.h>

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "tests/api/harness.h"

namespace chorus_test {
namespace {

constexpr int kTimeoutMs = 60000;  // the heartbeat must beat it by far
constexpr int kHeartbeatMs = 200;
constexpr double kWithinSeconds = 15;  // 4 periods plus slack for a loaded host
constexpr int kRanks = 3;
constexpr int kVictim = 1;

enum Exit : int { kNamed = 0, kInitFailed = 10, kNeverFailed = 11, kWrongCode = 12, kNamesOther = 13, kTooSlow = 14 };

double SecondsSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

enum class Where { kInACollective, kIdle };

int Body(const chorusUniqueId& id, int rank, const char* transport, Where where) {
  setenv("CHORUS_TRANSPORT", transport, 1);
  setenv("CHORUS_HEARTBEAT_MS", std::to_string(kHeartbeatMs).c_str(), 1);
  chorusConfig_t config = MakeConfig(nullptr, kTimeoutMs);
  chorusComm_t comm = nullptr;
  if (chorusCommInitRankConfig(&comm, kRanks, id, rank, &config) != chorusSuccess) return kInitFailed;
  int32_t value = 1;
  if (chorusAllReduce(&value, &value, 1, chorusInt32, chorusSum, comm, nullptr) != chorusSuccess) return kInitFailed;
  if (rank == kVictim) raise(SIGSTOP);
  const auto start = std::chrono::steady_clock::now();
  chorusResult_t result = chorusSuccess;
  if (where == Where::kInACollective) {
    std::vector<float> data(1 << 16, 1.0f);
    while (result == chorusSuccess && SecondsSince(start) < 2 * kWithinSeconds) {
      result = chorusAllReduce(data.data(), data.data(), data.size(), chorusFloat32, chorusSum, comm, nullptr);
    }
  } else {
    while (result == chorusSuccess && SecondsSince(start) < 2 * kWithinSeconds) {
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
      if (chorusCommGetAsyncError(comm, &result) != chorusSuccess) return kWrongCode;
    }
  }
  const double seconds = SecondsSince(start);
  const std::string message = chorusGetLastError(comm);
  std::fprintf(stderr, "rank %d: after %.2f s: %s\n", rank, seconds, message.c_str());
  (void)chorusCommAbort(comm);
  if (result == chorusSuccess) return kNeverFailed;
  if (result != chorusTimeout) return kWrongCode;
  if (message.find("rank 1 sent no heartbeat") == std::string::npos) return kNamesOther;
  return seconds < kWithinSeconds ? kNamed : kTooSlow;
}

// Forks the ranks; once every survivor has exited, kills the stopped one.
std::vector<int> RunWithAStoppedRank(const char* transport, Where where) {
  // The root in a process of its own: this one stays single-threaded to fork.
  const RendezvousProcess rendezvous;
  EXPECT_TRUE(rendezvous.ok()) << rendezvous.error();
  const chorusUniqueId id = rendezvous.id();
  std::fflush(nullptr);
  std::vector<pid_t> pids(kRanks);
  for (int rank = 0; rank < kRanks; ++rank) {
    pids[rank] = fork();
    if (pids[rank] == 0) _exit(Body(id, rank, transport, where));
  }
  std::vector<int> exits(kRanks, -1);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(90);
  for (int rank = 0; rank < kRanks; ++rank) {
    if (rank == kVictim) continue;
    int status = 0;
    while (waitpid(pids[rank], &status, WNOHANG) == 0 && std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    if (std::chrono::steady_clock::now() >= deadline) {
      kill(pids[rank], SIGKILL);
      waitpid(pids[rank], &status, 0);
    }
    exits[rank] = WIFEXITED(status) ? WEXITSTATUS(status) : 100 + WTERMSIG(status);
  }
  kill(pids[kVictim], SIGKILL);
  waitpid(pids[kVictim], nullptr, 0);
  return exits;
}

void ExpectEverySurvivorNamedTheStoppedRank(const std::vector<int>& exits) {
  for (int rank = 0; rank < kRanks; ++rank) {
    if (rank == kVictim) continue;
    EXPECT_EQ(exits[rank], kNamed) << "rank " << rank
                                   << " (10 init failed, 11 never failed, 12 wrong code, 13 named another cause, "
                                      "14 too slow, 1xx killed by signal xx)";
  }
}

TEST(SilentPeerTest, AStoppedRankIsNamedInACollectiveOverShm) {
  ExpectEverySurvivorNamedTheStoppedRank(RunWithAStoppedRank("shm", Where::kInACollective));
}

TEST(SilentPeerTest, AStoppedRankIsNamedInACollectiveOverTcp) {
  ExpectEverySurvivorNamedTheStoppedRank(RunWithAStoppedRank("tcp", Where::kInACollective));
}

TEST(SilentPeerTest, AStoppedRankIsNamedWhileIdle) {
  ExpectEverySurvivorNamedTheStoppedRank(RunWithAStoppedRank("auto", Where::kIdle));
}

// Ranks ending their communicators at different times (the last one 10
// periods after the first) raise nothing: a rank that ends says goodbye.
TEST(SilentPeerTest, RanksEndingAtDifferentTimesRaiseNothing) {
  setenv("CHORUS_HEARTBEAT_MS", std::to_string(kHeartbeatMs).c_str(), 1);
  chorusConfig_t config = MakeConfig(nullptr, kTimeoutMs);
  ThreadComms comms = ThreadComms::InitRank(kRanks, &config);
  unsetenv("CHORUS_HEARTBEAT_MS");
  ASSERT_TRUE(comms.ok()) << comms.error();
  RunOnThreads(kRanks, [&](int rank) {
    chorusComm_t comm = comms.Release(rank);
    std::this_thread::sleep_for(std::chrono::milliseconds(rank * 5 * kHeartbeatMs));
    chorusResult_t async = chorusInternalError;
    EXPECT_EQ(chorusCommGetAsyncError(comm, &async), chorusSuccess);
    EXPECT_EQ(async, chorusSuccess) << "rank " << rank << ": " << chorusGetLastError(comm);
    EXPECT_EQ(chorusCommDestroy(comm), chorusSuccess) << "rank " << rank << ": " << chorusGetLastError(comm);
  });
}

TEST(SilentPeerTest, ABadPeriodIsRejected) {
  chorusUniqueId id;
  ASSERT_EQ(chorusGetUniqueId(&id), chorusSuccess);
  setenv("CHORUS_HEARTBEAT_MS", "-5", 1);
  chorusConfig_t config = MakeConfig(nullptr, kTimeoutMs);
  chorusComm_t comm = nullptr;
  EXPECT_EQ(chorusCommInitRankConfig(&comm, 1, id, 0, &config), chorusInvalidArgument);
  EXPECT_NE(std::string(chorusGetLastError(nullptr)).find("CHORUS_HEARTBEAT_MS"), std::string::npos);
  unsetenv("CHORUS_HEARTBEAT_MS");
}

}  // namespace
}  // namespace chorus_test
