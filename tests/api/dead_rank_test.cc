// A rank dies (SIGKILL, no goodbye) just before or in the middle of a 64 MiB
// allreduce, or stalls (alive, connections open, never joins). Every survivor
// must fail with chorusRemoteError or chorusTimeout within CHORUS_TIMEOUT_MS
// (+ slack), name the peer in chorusGetLastError (a killed one as refusing
// connections), and abort cleanly; nothing may hang (the parent kills
// children at its own deadline and fails the test).
#include <gtest/gtest.h>

#include <signal.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cstdio>
#include <string>
#include <thread>
#include <vector>

#include "tests/api/harness.h"

namespace chorus_test {
namespace {

constexpr int kTimeoutMs = 5000;
constexpr double kSlackSeconds = 10;  // 2 shared cores, several processes
constexpr Millis kParentDeadline{90000};
constexpr size_t kCount = size_t{64} << 20 >> 2;  // 64 MiB of float32
constexpr int kMaxRounds = 20;

enum class Death { kBeforeAllReduce, kDuringAllReduce, kStalls };

// Exit codes of a survivor.
enum SurvivorExit : int {
  kReportedDeath = 0,
  kInitFailed = 10,
  kNeverFailed = 11,
  kWrongCode = 12,
  kMessageNamesNoPeer = 13,
  kTooSlow = 14,
  kAbortTooSlow = 15,
  kDeadRankNotReportedGone = 16,
};

double SecondsSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

bool NamesAPeer(std::string message) {
  std::transform(message.begin(), message.end(), message.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return message.find("peer") != std::string::npos || message.find("rank") != std::string::npos;
}

// Whether `message` says that `rank` refuses connections (the reachability
// probe after a failure: core/comm_factory.cc), e.g. "...; rank 1 refuses
// connections: ..." or "...; rank 1 and rank 3 refuse connections: ...".
bool SaysRefused(const std::string& message, int rank) {
  const size_t verb = message.find(" refuse");
  if (verb == std::string::npos) return false;
  const size_t clause = message.rfind("; ", verb);
  if (clause == std::string::npos) return false;
  const std::string ranks = message.substr(clause, verb - clause) + " ";
  const std::string wanted = "rank " + std::to_string(rank);
  for (size_t at = ranks.find(wanted); at != std::string::npos; at = ranks.find(wanted, at + 1)) {
    if (!std::isdigit(static_cast<unsigned char>(ranks[at + wanted.size()]))) return true;
  }
  return false;
}

[[noreturn]] void DieNow() {
  raise(SIGKILL);
  for (;;) pause();
}

int RankBody(const chorusUniqueId& id, int nranks, int rank, int victim, Death death) {
  chorusConfig_t config = MakeConfig(nullptr, kTimeoutMs);
  chorusComm_t comm = nullptr;
  chorusResult_t result = chorusCommInitRankConfig(&comm, nranks, id, rank, &config);
  if (result != chorusSuccess) {
    std::fprintf(stderr, "rank %d: init: %s\n", rank, Describe(result, nullptr).c_str());
    return kInitFailed;
  }
  std::vector<float> data(kCount, 1.0f);
  if (rank == victim) {
    if (death == Death::kBeforeAllReduce) DieNow();
    if (death == Death::kStalls) {
      // Only the survivors' deadline can end their wait.
      std::this_thread::sleep_for(std::chrono::milliseconds(kTimeoutMs + 3000));
      return 0;
    }
    std::thread([] {
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
      DieNow();
    }).detach();
    for (int round = 0; round + 1 < kMaxRounds; ++round) {
      (void)chorusAllReduce(data.data(), data.data(), kCount, chorusFloat32, chorusMax, comm, nullptr);
    }
    DieNow();  // at the latest before the survivors' last round
  }
  for (int round = 0; round < kMaxRounds; ++round) {
    const auto start = std::chrono::steady_clock::now();
    result = chorusAllReduce(data.data(), data.data(), kCount, chorusFloat32, chorusMax, comm, nullptr);
    if (result == chorusSuccess) continue;
    const double seconds = SecondsSince(start);
    const std::string message = chorusGetLastError(comm);
    std::fprintf(stderr, "rank %d: round %d failed after %.2f s: %s\n", rank, round, seconds,
                 Describe(result, comm).c_str());
    if (result != chorusRemoteError && result != chorusTimeout) return kWrongCode;
    if (!NamesAPeer(message)) return kMessageNamesNoPeer;
    // A killed rank's listener is closed with its process.
    if (death != Death::kStalls && !SaysRefused(message, victim)) return kDeadRankNotReportedGone;
    if (seconds > kTimeoutMs / 1000.0 + kSlackSeconds) return kTooSlow;
    const auto abort_start = std::chrono::steady_clock::now();
    (void)chorusCommAbort(comm);
    if (SecondsSince(abort_start) > kSlackSeconds) return kAbortTooSlow;
    return kReportedDeath;
  }
  return kNeverFailed;
}

struct DeadRankParam {
  int nranks;
  Death death;
};

std::string DeadRankParamName(const testing::TestParamInfo<DeadRankParam>& info) {
  switch (info.param.death) {
    case Death::kBeforeAllReduce:
      return std::to_string(info.param.nranks) + "ranks_die_before";
    case Death::kDuringAllReduce:
      return std::to_string(info.param.nranks) + "ranks_die_during";
    default:
      return std::to_string(info.param.nranks) + "ranks_one_stalls";
  }
}

class DeadRankTest : public testing::TestWithParam<DeadRankParam> {};

TEST_P(DeadRankTest, EverySurvivorReportsThePeerInTime) {
  const int nranks = GetParam().nranks;
  const int victim = 1;
  const RendezvousProcess rendezvous;  // this process stays single-threaded for ForkRanks
  ASSERT_TRUE(rendezvous.ok()) << rendezvous.error();
  const chorusUniqueId id = rendezvous.id();
  const auto start = std::chrono::steady_clock::now();
  const std::vector<ChildOutcome> outcomes = ForkRanks(
      nranks, [&](int rank) { return RankBody(id, nranks, rank, victim, GetParam().death); }, kParentDeadline);
  std::printf("dead rank test: %.1f s\n", SecondsSince(start));
  for (const ChildOutcome& outcome : outcomes) {
    EXPECT_FALSE(outcome.killed_at_deadline) << "hang: " << Describe(outcome);
    if (outcome.rank == victim && GetParam().death == Death::kStalls) {
      EXPECT_TRUE(outcome.exited) << Describe(outcome);
    } else if (outcome.rank == victim) {
      EXPECT_EQ(outcome.signal, SIGKILL) << Describe(outcome);
    } else {
      EXPECT_TRUE(outcome.exited && outcome.exit_code == kReportedDeath)
          << Describe(outcome) << " (codes: 11 never failed, 12 wrong code, 13 message names no "
          << "peer, 14 too slow, 15 abort too slow, 16 the dead rank not reported as refusing connections)";
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Deaths, DeadRankTest,
                         testing::Values(DeadRankParam{3, Death::kBeforeAllReduce},
                                         DeadRankParam{4, Death::kDuringAllReduce}, DeadRankParam{3, Death::kStalls}),
                         DeadRankParamName);

}  // namespace
}  // namespace chorus_test
