// chorusCommShrink with ranks that are alive but call it late: after the
// others' root stopped waiting for them, formed the smaller communicator and
// destroyed the old one (which is what the docs tell them to do). The late
// ranks must get an error naming the membership they were left out of, never
// a communicator of their own beside the one the others formed. Ranks are
// threads of this process; every rank has its own recovery listener, as
// processes do. Last, a rank stopped with SIGSTOP (alive, silent), with ranks
// as forked processes: the others leave it out as a majority.
#include <gtest/gtest.h>

#include <signal.h>
#include <sys/mman.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <fstream>
#include <functional>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "tests/api/harness.h"

namespace chorus_test {
namespace {

// The root stops waiting for callers at 3/4 of the timeout (6 s); the
// early ranks then have the last quarter to create their communicator,
// which on a loaded 2-core host took more than the 1 s a 4 s timeout left.
constexpr int kTimeoutMs = 8000;
constexpr Millis kLateBy{7000};  // when the late ranks call shrink (after the early ones finished)
constexpr Millis kLatchBound{30000};

// Counts down once per rank; waits are bounded so that a bug fails the test
// instead of hanging it.
class Latch {
 public:
  explicit Latch(int count) : count_(count) {}
  void CountDown() {
    std::lock_guard<std::mutex> lock(mutex_);
    if (--count_ <= 0) done_.notify_all();
  }
  bool Wait() {
    std::unique_lock<std::mutex> lock(mutex_);
    return done_.wait_for(lock, kLatchBound, [&] { return count_ <= 0; });
  }

 private:
  std::mutex mutex_;
  std::condition_variable done_;
  int count_;
};

struct Scenario {
  int nranks;
  std::set<int> late;     // call shrink 7 s in, after the others destroyed the old communicator
  std::set<int> leavers;  // early ranks that also destroy the new communicator at once (they are gone)
};

struct RankEnd {
  chorusResult_t result = chorusInternalError;
  std::string error;
  int new_rank = -1;
  int new_size = -1;
  bool reduced = false;  // an allreduce over the new communicator gave the members' sum
};

// Sum of (old rank + 1) over the members, which names who they are.
int32_t AllReduceOldRanks(chorusComm_t comm, int old_rank) {
  int32_t value = old_rank + 1;
  if (chorusAllReduce(&value, &value, 1, chorusInt32, chorusSum, comm, nullptr) != chorusSuccess) return -1;
  return value;
}

std::vector<RankEnd> RunLateScenario(const Scenario& scenario) {
  chorusConfig_t config = MakeConfig(nullptr, kTimeoutMs);
  ThreadComms comms = ThreadComms::InitRank(scenario.nranks, &config);
  EXPECT_TRUE(comms.ok()) << comms.error();
  if (!comms.ok()) return {};
  const int early_count = scenario.nranks - static_cast<int>(scenario.late.size());
  int32_t early_sum = 0;
  for (int rank = 0; rank < scenario.nranks; ++rank) {
    if (scenario.late.count(rank) == 0) early_sum += rank + 1;
  }
  Latch early_done(early_count), late_done(static_cast<int>(scenario.late.size()));
  std::vector<RankEnd> ends(scenario.nranks);
  const auto start = std::chrono::steady_clock::now();
  comms.Run([&](int rank, chorusComm_t comm) {
    RankEnd& end = ends[rank];
    const bool late = scenario.late.count(rank) > 0;
    if (late) {
      EXPECT_TRUE(early_done.Wait()) << "rank " << rank << ": the early ranks never finished";
      std::this_thread::sleep_until(start + kLateBy);
    }
    chorusComm_t shrunk = nullptr;
    end.result = chorusCommShrink(comm, &shrunk);
    end.error = chorusGetLastError(comm);
    std::printf("rank %d%s: shrink after %.2f s: %s\n", rank, late ? " (late)" : "",
                std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(),
                end.result == chorusSuccess ? "ok" : end.error.c_str());
    if (end.result == chorusSuccess) {
      (void)chorusCommUserRank(shrunk, &end.new_rank);
      (void)chorusCommCount(shrunk, &end.new_size);
      if (!late) end.reduced = AllReduceOldRanks(shrunk, rank) == early_sum;
    }
    // As the docs say: the old communicator goes once shrink has answered.
    EXPECT_EQ(chorusCommDestroy(comms.Release(rank)), chorusSuccess);
    if (late) {
      if (shrunk != nullptr) {
        EXPECT_EQ(chorusCommDestroy(shrunk), chorusSuccess);
      }
      late_done.CountDown();
      return;
    }
    if (scenario.leavers.count(rank) > 0 && shrunk != nullptr) {
      EXPECT_EQ(chorusCommDestroy(shrunk), chorusSuccess);
      shrunk = nullptr;
    }
    early_done.CountDown();
    // Still working on the new communicator while the late ranks shrink.
    EXPECT_TRUE(late_done.Wait()) << "rank " << rank << ": the late ranks never finished";
    if (shrunk != nullptr) {
      EXPECT_EQ(chorusCommDestroy(shrunk), chorusSuccess);
    }
  });
  return ends;
}

void ExpectEarlyRanksFormed(const Scenario& scenario, const std::vector<RankEnd>& ends) {
  int index = 0;
  for (int rank = 0; rank < scenario.nranks; ++rank) {
    if (scenario.late.count(rank) > 0) continue;
    const RankEnd& end = ends[rank];
    ASSERT_EQ(end.result, chorusSuccess) << "rank " << rank << ": " << end.error;
    EXPECT_EQ(end.new_size, scenario.nranks - static_cast<int>(scenario.late.size())) << "rank " << rank;
    EXPECT_EQ(end.new_rank, index++) << "rank " << rank;
    EXPECT_TRUE(end.reduced) << "rank " << rank << ": allreduce over the new communicator";
  }
}

void ExpectLateRanksRefused(const Scenario& scenario, const std::vector<RankEnd>& ends) {
  for (int rank : scenario.late) {
    const RankEnd& end = ends[rank];
    EXPECT_NE(end.result, chorusSuccess) << "late rank " << rank << " formed a communicator of " << end.new_size
                                         << " rank(s) beside the one the others formed";
    EXPECT_EQ(end.result, chorusRemoteError) << "late rank " << rank << ": " << end.error;
    EXPECT_NE(end.error.find("left out"), std::string::npos) << "late rank " << rank << ": " << end.error;
  }
}

// Ranks 0 and 1 form {0,1} and destroy the old communicator; ranks 2 and 3,
// alive all along, come 7 s into the 8 s timeout. They used to find 0 and
// 1's listeners closed, take them for dead and form {2,3}.
TEST(ShrinkLateTest, LateRanksAreRefusedInsteadOfFormingTheirOwn) {
  const Scenario scenario{4, {2, 3}, {}};
  const std::vector<RankEnd> ends = RunLateScenario(scenario);
  ASSERT_EQ(ends.size(), 4u);
  ExpectEarlyRanksFormed(scenario, ends);
  ExpectLateRanksRefused(scenario, ends);
  for (int rank : scenario.late) {
    EXPECT_NE(ends[rank].error.find("{0,1}"), std::string::npos) << "late rank " << rank << ": " << ends[rank].error;
  }
}

// Three ranks, one late: it used to get a communicator of size 1.
TEST(ShrinkLateTest, OneLateRankOfThreeIsRefused) {
  const Scenario scenario{3, {2}, {}};
  const std::vector<RankEnd> ends = RunLateScenario(scenario);
  ASSERT_EQ(ends.size(), 3u);
  ExpectEarlyRanksFormed(scenario, ends);
  ExpectLateRanksRefused(scenario, ends);
}

// {0,3} forms; rank 0 then leaves altogether (its listeners close). The late
// ranks 1 and 2 find every rank below 1 gone, so rank 1 serves as their root:
// it must learn from rank 3 that a shrink completed without them.
TEST(ShrinkLateTest, LateRootBelowTheSurvivingMembersIsRefused) {
  const Scenario scenario{4, {1, 2}, {0}};
  const std::vector<RankEnd> ends = RunLateScenario(scenario);
  ASSERT_EQ(ends.size(), 4u);
  ExpectEarlyRanksFormed(scenario, ends);
  ExpectLateRanksRefused(scenario, ends);
}

// Shared by the forked ranks of the next test (an anonymous shared page).
struct StopState {
  std::atomic<pid_t> stopped_pid{0};
  std::atomic<int> shrunk{0};        // ranks 1 and 2 that formed {1,2}
  std::atomic<int> resumed_done{0};  // rank 0 finished its shrink after resuming
};

// Exit codes of a rank of the next test.
enum StopExit : int {
  kStopOk = 0,
  kStopInitFailed = 10,
  kNeverStopped = 11,
  kShrinkFailed = 12,       // ranks 1 and 2 could not form {1,2}
  kWrongCommunicator = 13,  // wrong size, rank or sum on it
  kResumedNotRefused = 14,  // rank 0 formed a communicator of its own, or erred unclearly
  kNeverResumed = 15,
};

bool IsStopped(pid_t pid) {
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string line;
  std::getline(stat, line);
  const size_t end = line.rfind(") ");
  return end != std::string::npos && end + 2 < line.size() && line[end + 2] == 'T';
}

bool WaitFor(const std::function<bool()>& done, Millis bound) {
  const auto give_up = std::chrono::steady_clock::now() + bound;
  while (!done()) {
    if (std::chrono::steady_clock::now() > give_up) return false;
    std::this_thread::sleep_for(Millis(5));
  }
  return true;
}

int StoppedRankBody(const chorusUniqueId& id, StopState* state, int rank) {
  // Long enough to create the shrunk communicator on a loaded host after
  // the gather deadline (3/4 of it).
  constexpr int kStopTimeoutMs = 6000;
  chorusConfig_t config = MakeConfig(nullptr, kStopTimeoutMs);
  chorusComm_t comm = nullptr;
  if (chorusCommInitRankConfig(&comm, 3, id, rank, &config) != chorusSuccess) return kStopInitFailed;
  if (rank == 0) {
    state->stopped_pid.store(getpid());
    raise(SIGSTOP);  // resumed once ranks 1 and 2 formed {1,2}
    chorusComm_t shrunk = nullptr;
    const chorusResult_t late = chorusCommShrink(comm, &shrunk);
    std::fprintf(stderr, "rank 0: shrink after resuming: %s\n", Describe(late, comm).c_str());
    const bool refused =
        late == chorusRemoteError &&
        std::string(chorusGetLastError(comm)).find("left out of a shrink that ranks {1,2}") != std::string::npos;
    if (late == chorusSuccess) (void)chorusCommDestroy(shrunk);
    state->resumed_done.store(1);
    (void)chorusCommDestroy(comm);
    return refused ? kStopOk : kResumedNotRefused;
  }
  if (!WaitFor([&] { return state->stopped_pid.load() != 0 && IsStopped(state->stopped_pid.load()); }, Millis(10000))) {
    return kNeverStopped;
  }
  chorusComm_t shrunk = nullptr;
  const chorusResult_t result = chorusCommShrink(comm, &shrunk);
  if (result != chorusSuccess) {
    std::fprintf(stderr, "rank %d: shrink beside the stopped rank 0: %s\n", rank, Describe(result, comm).c_str());
    return kShrinkFailed;
  }
  (void)chorusCommDestroy(comm);  // the shrunk communicator keeps the lineage
  int new_rank = -1, new_size = -1;
  (void)chorusCommUserRank(shrunk, &new_rank);
  (void)chorusCommCount(shrunk, &new_size);
  int32_t value = rank + 1;
  const bool reduced = chorusAllReduce(&value, &value, 1, chorusInt32, chorusSum, shrunk, nullptr) == chorusSuccess;
  int code = reduced && value == 5 && new_size == 2 && new_rank == rank - 1 ? kStopOk : kWrongCommunicator;
  if (state->shrunk.fetch_add(1) + 1 == 2) kill(state->stopped_pid.load(), SIGCONT);
  // Members answer rank 0 while they hold the shrunk communicator.
  if (!WaitFor([&] { return state->resumed_done.load() != 0; }, Millis(15000)) && code == kStopOk) {
    code = kNeverResumed;
  }
  (void)chorusCommDestroy(shrunk);
  return code;
}

// Rank 0 is stopped (SIGSTOP), not dead: its kernel still completes
// connections, so it is not taken for gone. Ranks 1 and 2 pass over it
// halfway to their gather deadline and, as a majority of the three, form
// {1,2}, which reduces exactly. Resumed, rank 0 shrinks too and is told it
// was left out: never a communicator of its own beside {1,2}.
TEST(ShrinkLateTest, StoppedLowestRankIsLeftOutByTheMajority) {
  void* page = mmap(nullptr, sizeof(StopState), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  ASSERT_NE(page, MAP_FAILED);
  auto* state = new (page) StopState();
  const RendezvousProcess rendezvous;  // this process stays single-threaded for ForkRanks
  ASSERT_TRUE(rendezvous.ok()) << rendezvous.error();
  const chorusUniqueId id = rendezvous.id();
  const std::vector<ChildOutcome> outcomes = ForkRanks(
      3, [&](int rank) { return StoppedRankBody(id, state, rank); }, Millis(40000));
  for (const ChildOutcome& outcome : outcomes) {
    EXPECT_FALSE(outcome.killed_at_deadline) << "hang: " << Describe(outcome);
    EXPECT_TRUE(outcome.exited && outcome.exit_code == kStopOk)
        << Describe(outcome) << " (11 never stopped, 12 ranks 1 and 2 could not shrink, 13 wrong communicator, "
        << "14 rank 0 not refused after resuming, 15 rank 0 never finished)";
  }
  state->~StopState();
  munmap(page, sizeof(StopState));
}

}  // namespace
}  // namespace chorus_test
