// chorusCommShrink: ranks as forked processes, one SIGKILLed in the middle of
// an allreduce (rank 0 too); the survivors see the failure, shrink, agree on
// the new size and ranks (dense, in old-rank order) and run an exact
// allreduce on the new communicator. A second rank dying before or during the
// shrink still ends, in time, with one consistent membership or a clear
// error. A shrink of a healthy communicator keeps every rank.
#include <gtest/gtest.h>

#include <signal.h>
#include <unistd.h>

#include <cstdlib>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "tests/api/harness.h"

namespace chorus_test {
namespace {

constexpr int kTimeoutMs = 3000;
constexpr double kSlackSeconds = 8;  // 2 shared cores, several processes
constexpr Millis kParentDeadline{60000};
constexpr size_t kCount = size_t{1} << 20;  // 4 MiB of int32 per allreduce
constexpr int kMaxRounds = 400;

// A survivor's exit code: kJoined + 10 * new size + new rank on success.
enum SurvivorExit : int {
  kInitFailed = 10,
  kNeverFailed = 11,
  kWrongFailureCode = 12,
  kShrinkFailedClearly = 13,  // chorusRemoteError/chorusTimeout from shrink
  kShrinkWrongCode = 14,
  kShrinkTooSlow = 15,
  kBadNewComm = 16,
  kWrongSum = 17,
  kJoined = 100,
};

enum class SecondDeath {
  kNone,
  kInsteadOfShrinking,  // rank `second` dies when it would call shrink
  kWhileShrinking,      // rank `second` dies a few ms into its shrink
};

struct Scenario {
  int nranks;
  int victim;
  SecondDeath second_death = SecondDeath::kNone;
  int second = -1;
};

double SecondsSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

[[noreturn]] void DieNow() {
  raise(SIGKILL);
  for (;;) pause();
}

void DieAfter(int ms) {
  std::thread([ms] {
    std::this_thread::sleep_for(Millis(ms));
    DieNow();
  }).detach();
}

// Sum of (old rank + 1) over the ranks that are in `survivors`.
int32_t ExpectedSum(const std::vector<int>& survivors) {
  int32_t sum = 0;
  for (int rank : survivors) sum += rank + 1;
  return sum;
}

// Runs the allreduce on the shrunk communicator and checks the sum of the
// survivors' old ranks + 1, which proves who the members are.
int CheckNewComm(chorusComm_t comm, int old_rank, int* new_rank, int* new_size) {
  if (chorusCommUserRank(comm, new_rank) != chorusSuccess || chorusCommCount(comm, new_size) != chorusSuccess) {
    return kBadNewComm;
  }
  std::vector<int32_t> data(kCount, old_rank + 1);
  std::vector<int32_t> ranks(static_cast<size_t>(*new_size), 0);
  int32_t mine = old_rank;
  if (chorusAllReduce(data.data(), data.data(), kCount, chorusInt32, chorusSum, comm, nullptr) != chorusSuccess ||
      chorusAllGather(&mine, ranks.data(), 1, chorusInt32, comm, nullptr) != chorusSuccess) {
    std::fprintf(stderr, "rank %d: collective on the new comm: %s\n", old_rank, chorusGetLastError(comm));
    return kBadNewComm;
  }
  std::vector<int> survivors(ranks.begin(), ranks.end());
  for (size_t i = 1; i < survivors.size(); ++i) {
    if (survivors[i] <= survivors[i - 1]) return kBadNewComm;  // dense, in old-rank order
  }
  if (survivors[static_cast<size_t>(*new_rank)] != old_rank) return kBadNewComm;
  const int32_t expected = ExpectedSum(survivors);
  for (int32_t value : data) {
    if (value != expected) return kWrongSum;
  }
  return 0;
}

int SurvivorBody(const chorusUniqueId& id, const Scenario& scenario, int rank) {
  // A rank killed inside communicator creation, after making its shared
  // memory segment and before its peers mapped (and so unlinked) it, leaves
  // the segment in /dev/shm (a limit of the shm transport, not of shrink):
  // the scenario that kills the root in the middle of the shrink (and so,
  // often, in the new communicator's creation) runs over TCP only.
  if (scenario.second_death == SecondDeath::kWhileShrinking) setenv("CHORUS_TRANSPORT", "tcp", 1);
  chorusConfig_t config = MakeConfig(nullptr, kTimeoutMs);
  chorusComm_t comm = nullptr;
  if (chorusCommInitRankConfig(&comm, scenario.nranks, id, rank, &config) != chorusSuccess) {
    std::fprintf(stderr, "rank %d: init: %s\n", rank, chorusGetLastError(nullptr));
    return kInitFailed;
  }
  std::vector<float> data(kCount, 1.0f);
  if (rank == scenario.victim) DieAfter(30);
  chorusResult_t result = chorusSuccess;
  for (int round = 0; round < kMaxRounds && result == chorusSuccess; ++round) {
    result = chorusAllReduce(data.data(), data.data(), kCount, chorusFloat32, chorusMax, comm, nullptr);
  }
  if (rank == scenario.victim) DieNow();
  if (result == chorusSuccess) return kNeverFailed;
  if (result != chorusRemoteError && result != chorusTimeout) return kWrongFailureCode;

  if (rank == scenario.second && scenario.second_death == SecondDeath::kInsteadOfShrinking) DieNow();
  if (rank == scenario.second && scenario.second_death == SecondDeath::kWhileShrinking) DieAfter(5 + rank);
  const auto start = std::chrono::steady_clock::now();
  chorusComm_t shrunk = nullptr;
  result = chorusCommShrink(comm, &shrunk);
  if (result != chorusSuccess && scenario.second_death == SecondDeath::kWhileShrinking) {
    // The root died after answering: the documented remedy is to try again.
    std::fprintf(stderr, "rank %d: shrink failed (%s), retrying\n", rank, chorusGetLastError(comm));
    result = chorusCommShrink(comm, &shrunk);
  }
  const double seconds = SecondsSince(start);
  std::fprintf(stderr, "rank %d: shrink took %.2f s: %s\n", rank, seconds,
               result == chorusSuccess ? "ok" : Describe(result, comm).c_str());
  if (seconds > 4.0 * kTimeoutMs / 1000 + kSlackSeconds) return kShrinkTooSlow;
  (void)chorusCommAbort(comm);
  if (result != chorusSuccess) {
    return result == chorusRemoteError || result == chorusTimeout ? kShrinkFailedClearly : kShrinkWrongCode;
  }
  int new_rank = -1, new_size = -1;
  const int checked = CheckNewComm(shrunk, rank, &new_rank, &new_size);
  if (chorusCommDestroy(shrunk) != chorusSuccess && checked == 0) return kBadNewComm;
  return checked != 0 ? checked : kJoined + 10 * new_size + new_rank;
}

// Segments created during the test that nobody maps a while after it: their
// creator died before its peers unlinked them. (Other programs running at
// the same time have live segments of their own, mapped by their creator.)
std::vector<std::string> LeakedSegments(const std::set<std::string>& before) {
  std::vector<std::string> leaked;
  std::this_thread::sleep_for(Millis(500));
  for (const std::string& name : SharedMemorySegments()) {
    if (before.count(name) == 0 && !MappedByAnyone(name)) leaked.push_back(name);
  }
  return leaked;
}

std::vector<ChildOutcome> RunScenario(const Scenario& scenario) {
  const RendezvousProcess rendezvous;  // this process stays single-threaded for ForkRanks
  EXPECT_TRUE(rendezvous.ok()) << rendezvous.error();
  const chorusUniqueId id = rendezvous.id();
  const auto start = std::chrono::steady_clock::now();
  std::vector<ChildOutcome> outcomes =
      ForkRanks(scenario.nranks, [&](int rank) { return SurvivorBody(id, scenario, rank); }, kParentDeadline);
  std::printf("shrink scenario (%d ranks, victim %d): %.1f s\n", scenario.nranks, scenario.victim,
              SecondsSince(start));
  return outcomes;
}

bool Dies(const Scenario& scenario, int rank) {
  return rank == scenario.victim || (rank == scenario.second && scenario.second_death != SecondDeath::kNone);
}

class ShrinkAfterDeathTest : public testing::TestWithParam<Scenario> {};

// The survivors (all but the victim and, where it dies first, the second)
// must each end as rank (index in old-rank order) of the survivor count.
TEST_P(ShrinkAfterDeathTest, SurvivorsAgreeAndReduceExactly) {
  const Scenario scenario = GetParam();
  const std::set<std::string> segments_before = SharedMemorySegments();
  const std::vector<ChildOutcome> outcomes = RunScenario(scenario);
  std::vector<int> survivors;
  for (int rank = 0; rank < scenario.nranks; ++rank) {
    if (!Dies(scenario, rank)) survivors.push_back(rank);
  }
  for (const ChildOutcome& outcome : outcomes) {
    EXPECT_FALSE(outcome.killed_at_deadline) << "hang: " << Describe(outcome);
    if (Dies(scenario, outcome.rank)) {
      EXPECT_EQ(outcome.signal, SIGKILL) << Describe(outcome);
      continue;
    }
    const int new_rank = static_cast<int>(std::find(survivors.begin(), survivors.end(), outcome.rank) -
                                          survivors.begin());
    EXPECT_TRUE(outcome.exited && outcome.exit_code == kJoined + 10 * static_cast<int>(survivors.size()) + new_rank)
        << Describe(outcome) << " (expected exit " << kJoined + 10 * survivors.size() + new_rank
        << "; 11 never failed, 12 wrong failure code, 13/14 shrink failed, 15 too slow, 16 bad new comm, "
           "17 wrong sum)";
  }
  EXPECT_TRUE(LeakedSegments(segments_before).empty());
}

std::string ScenarioName(const testing::TestParamInfo<Scenario>& info) {
  std::string name = std::to_string(info.param.nranks) + "ranks_kill" + std::to_string(info.param.victim);
  if (info.param.second_death == SecondDeath::kInsteadOfShrinking) {
    name += "_then" + std::to_string(info.param.second) + "_skips_shrink";
  }
  return name;
}

INSTANTIATE_TEST_SUITE_P(Deaths, ShrinkAfterDeathTest,
                         testing::Values(Scenario{3, 1}, Scenario{3, 0}, Scenario{4, 2}, Scenario{4, 0},
                                         Scenario{4, 1, SecondDeath::kInsteadOfShrinking, 3},
                                         Scenario{4, 1, SecondDeath::kInsteadOfShrinking, 0}),
                         ScenarioName);

// The lowest survivor (the shrink root) dies a few milliseconds into the
// shrink: the others must end in time, and those that succeed must agree.
TEST(ShrinkTest, RootDyingDuringShrinkEndsConsistentlyOrClearly) {
  const Scenario scenario{4, 1, SecondDeath::kWhileShrinking, 0};
  const std::set<std::string> segments_before = SharedMemorySegments();
  const std::vector<ChildOutcome> outcomes = RunScenario(scenario);
  std::set<int> sizes, new_ranks;
  int joined = 0;
  for (const ChildOutcome& outcome : outcomes) {
    EXPECT_FALSE(outcome.killed_at_deadline) << "hang: " << Describe(outcome);
    if (outcome.rank == scenario.victim) {
      EXPECT_EQ(outcome.signal, SIGKILL) << Describe(outcome);
      continue;
    }
    if (outcome.rank == scenario.second && outcome.signal == SIGKILL) continue;
    ASSERT_TRUE(outcome.exited) << Describe(outcome);
    if (outcome.exit_code >= kJoined) {
      std::printf("old rank %d: new rank %d of %d\n", outcome.rank, (outcome.exit_code - kJoined) % 10,
                  (outcome.exit_code - kJoined) / 10);
      ++joined;
      sizes.insert((outcome.exit_code - kJoined) / 10);
      new_ranks.insert((outcome.exit_code - kJoined) % 10);
    } else {
      EXPECT_EQ(outcome.exit_code, kShrinkFailedClearly) << Describe(outcome);
    }
  }
  std::printf("%d survivors joined a new communicator\n", joined);
  if (joined > 0) {
    EXPECT_EQ(sizes.size(), 1u) << "survivors disagree on the new size";
    EXPECT_EQ(static_cast<int>(new_ranks.size()), joined) << "two survivors got the same new rank";
  }
  EXPECT_TRUE(LeakedSegments(segments_before).empty());
}

// Every rank of a healthy communicator calls shrink: nobody is left out.
TEST(ShrinkTest, HealthyCommunicatorKeepsEveryRank) {
  constexpr int kRanks = 3;
  chorusConfig_t config = MakeConfig(nullptr, kTimeoutMs);
  ThreadComms comms = ThreadComms::InitRank(kRanks, &config);
  ASSERT_TRUE(comms.ok()) << comms.error();
  std::vector<int> results(kRanks, -1);
  comms.Run([&](int rank, chorusComm_t comm) {
    chorusComm_t shrunk = nullptr;
    if (chorusCommShrink(comm, &shrunk) != chorusSuccess) {
      std::fprintf(stderr, "rank %d: shrink: %s\n", rank, chorusGetLastError(comm));
      return;
    }
    int new_rank = -1, new_size = -1;
    const int checked = CheckNewComm(shrunk, rank, &new_rank, &new_size);
    results[rank] = checked != 0 ? checked : kJoined + 10 * new_size + new_rank;
    // The old communicator is still usable.
    int32_t value = 1;
    if (chorusAllReduce(&value, &value, 1, chorusInt32, chorusSum, comm, nullptr) != chorusSuccess || value != kRanks) {
      results[rank] = kBadNewComm;
    }
    EXPECT_EQ(chorusCommDestroy(shrunk), chorusSuccess);
  });
  for (int rank = 0; rank < kRanks; ++rank) EXPECT_EQ(results[rank], kJoined + 10 * kRanks + rank) << rank;
}

TEST(ShrinkTest, RejectsBadArguments) {
  chorusComm_t out = nullptr;
  EXPECT_EQ(chorusCommShrink(nullptr, &out), chorusInvalidArgument);
  chorusConfig_t config = MakeConfig(nullptr, kTimeoutMs);
  ThreadComms comms = ThreadComms::InitRank(1, &config);
  ASSERT_TRUE(comms.ok()) << comms.error();
  EXPECT_EQ(chorusCommShrink(comms[0], nullptr), chorusInvalidArgument);
  // A single rank shrinks to itself.
  ASSERT_EQ(chorusCommShrink(comms[0], &out), chorusSuccess) << chorusGetLastError(comms[0]);
  int size = 0;
  EXPECT_EQ(chorusCommCount(out, &size), chorusSuccess);
  EXPECT_EQ(size, 1);
  EXPECT_EQ(chorusCommDestroy(out), chorusSuccess);
}

}  // namespace
}  // namespace chorus_test
