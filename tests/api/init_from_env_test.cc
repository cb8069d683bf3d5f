// chorusCommInitFromEnv with ranks as forked processes. Each child first
// clears every launcher variable it inherited, then sets those of one
// launcher convention (torchrun, mpirun, srun, PMI), creates its
// communicator and checks an allreduce exactly. Also: a shared
// CHORUS_SECRET works, a rank with another secret fails in time, and a
// missing rank or rendezvous is rejected with a message naming the variables.
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "tests/api/harness.h"
#include "tests/common/free_port.h"

namespace chorus_test {
namespace {

using Environment = std::vector<std::pair<std::string, std::string>>;

// Every variable that selects a rank, a rendezvous or a secret.
const char* const kLauncherVariables[] = {
    "RANK",          "WORLD_SIZE",     "LOCAL_RANK",   "MASTER_ADDR",          "MASTER_PORT",
    "TORCHELASTIC_RUN_ID", "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "OMPI_MCA_ess_base_jobid",
    "PMI_RANK",      "PMI_SIZE",       "SLURM_PROCID", "SLURM_NTASKS",         "SLURM_JOB_ID",
    "SLURM_STEP_ID", "CHORUS_ROOT",    "CHORUS_SECRET", "CHORUS_TIMEOUT_MS"};

constexpr const char* kSecret = "0123456789abcdef0123456789ABCDEF";
constexpr const char* kOtherSecret = "fedcba9876543210fedcba9876543210";
// Every wait inside the library gives up well before the children's deadline.
constexpr const char* kTimeoutMs = "8000";
constexpr Millis kDeadline{20000};

// Child exit codes: 0 passed; kInitFailed + result when init failed.
enum ChildExit : int {
  kOk = 0,
  kWrongValue = 1,
  kCallFailed = 2,
  kInitFailed = 10,
};

int InitFailedCode(chorusResult_t result) { return kInitFailed + static_cast<int>(result); }

void ApplyEnvironment(const Environment& environment) {
  for (const char* name : kLauncherVariables) unsetenv(name);
  for (const auto& [name, value] : environment) setenv(name.c_str(), value.c_str(), 1);
}

using chorus_test::FreePort;

// In the child: init from `environment`, check rank, size and an allreduce.
int InitAndAllReduce(const Environment& environment, int rank, int nranks) {
  ApplyEnvironment(environment);
  chorusComm_t comm = nullptr;
  chorusResult_t result = chorusCommInitFromEnv(&comm, nullptr);
  if (result != chorusSuccess) {
    std::fprintf(stderr, "rank %d: chorusCommInitFromEnv: %s\n", rank, Describe(result, nullptr).c_str());
    return InitFailedCode(result);
  }
  int count = -1, user_rank = -1;
  if (chorusCommCount(comm, &count) != chorusSuccess || chorusCommUserRank(comm, &user_rank) != chorusSuccess ||
      count != nranks || user_rank != rank) {
    std::fprintf(stderr, "rank %d: count %d rank %d, expected %d %d\n", rank, count, user_rank, nranks, rank);
    return kWrongValue;
  }
  constexpr size_t kCount = 100003;
  std::vector<int32_t> values(kCount);
  for (size_t i = 0; i < kCount; ++i) values[i] = static_cast<int32_t>(i % 1000) * (rank + 1) - rank;
  result = chorusAllReduce(values.data(), values.data(), kCount, chorusInt32, chorusSum, comm, nullptr);
  if (result != chorusSuccess) {
    std::fprintf(stderr, "rank %d: allreduce: %s\n", rank, Describe(result, comm).c_str());
    return kCallFailed;
  }
  const int32_t factor = nranks * (nranks + 1) / 2;
  const int32_t offset = nranks * (nranks - 1) / 2;
  for (size_t i = 0; i < kCount; ++i) {
    if (values[i] != static_cast<int32_t>(i % 1000) * factor - offset) {
      std::fprintf(stderr, "rank %d: allreduce[%zu] = %d\n", rank, i, values[i]);
      return kWrongValue;
    }
  }
  result = chorusCommDestroy(comm);
  return result == chorusSuccess ? kOk : kCallFailed;
}

std::vector<ChildOutcome> RunRanks(int nranks, const std::function<Environment(int rank)>& environment_of) {
  return ForkRanks(
      nranks, [&](int rank) { return InitAndAllReduce(environment_of(rank), rank, nranks); }, kDeadline);
}

void ExpectAllPassed(const std::vector<ChildOutcome>& outcomes) {
  for (const ChildOutcome& outcome : outcomes) {
    EXPECT_TRUE(outcome.exited && outcome.exit_code == kOk) << Describe(outcome);
  }
}

TEST(InitFromEnvTest, TorchrunRankWorldSizeAndMasterAddress) {
  const int port = FreePort();
  ASSERT_GT(port, 0);
  ExpectAllPassed(RunRanks(3, [&](int rank) {
    return Environment{{"RANK", std::to_string(rank)},       {"WORLD_SIZE", "3"},
                       {"MASTER_ADDR", "127.0.0.1"},         {"MASTER_PORT", std::to_string(port)},
                       {"TORCHELASTIC_RUN_ID", "run-42"},    {"CHORUS_TIMEOUT_MS", kTimeoutMs}};
  }));
}

TEST(InitFromEnvTest, OpenMpiRankWithChorusRoot) {
  const int port = FreePort();
  ASSERT_GT(port, 0);
  ExpectAllPassed(RunRanks(4, [&](int rank) {
    return Environment{{"OMPI_COMM_WORLD_RANK", std::to_string(rank)},
                       {"OMPI_COMM_WORLD_SIZE", "4"},
                       {"OMPI_MCA_ess_base_jobid", "1234"},
                       {"CHORUS_ROOT", "127.0.0.1:" + std::to_string(port)},
                       {"CHORUS_TIMEOUT_MS", kTimeoutMs}};
  }));
}

TEST(InitFromEnvTest, SlurmRankWithChorusRoot) {
  const int port = FreePort();
  ASSERT_GT(port, 0);
  ExpectAllPassed(RunRanks(2, [&](int rank) {
    return Environment{{"SLURM_PROCID", std::to_string(rank)},
                       {"SLURM_NTASKS", "2"},
                       {"SLURM_JOB_ID", "777"},
                       {"CHORUS_ROOT", "127.0.0.1:" + std::to_string(port)},
                       {"CHORUS_TIMEOUT_MS", kTimeoutMs}};
  }));
}

TEST(InitFromEnvTest, PmiRankWithMasterAddress) {
  const int port = FreePort();
  ASSERT_GT(port, 0);
  ExpectAllPassed(RunRanks(3, [&](int rank) {
    return Environment{{"PMI_RANK", std::to_string(rank)},
                       {"PMI_SIZE", "3"},
                       {"MASTER_ADDR", "127.0.0.1"},
                       {"MASTER_PORT", std::to_string(port)},
                       {"CHORUS_TIMEOUT_MS", kTimeoutMs}};
  }));
}

TEST(InitFromEnvTest, SameSecretOnEveryRankWorks) {
  const int port = FreePort();
  ASSERT_GT(port, 0);
  ExpectAllPassed(RunRanks(3, [&](int rank) {
    return Environment{{"RANK", std::to_string(rank)},
                       {"WORLD_SIZE", "3"},
                       {"CHORUS_ROOT", "127.0.0.1:" + std::to_string(port)},
                       {"CHORUS_SECRET", kSecret},
                       {"CHORUS_TIMEOUT_MS", kTimeoutMs}};
  }));
}

// The rank with the other secret (the root, or one that connects to it) must
// fail, and no rank may hang: CHORUS_TIMEOUT_MS bounds every wait.
class WrongSecretTest : public testing::TestWithParam<int> {};

TEST_P(WrongSecretTest, RankWithAnotherSecretFailsInTime) {
  constexpr int kRanks = 3;
  const int odd_one = GetParam();
  const int port = FreePort();
  ASSERT_GT(port, 0);
  const std::vector<ChildOutcome> outcomes = RunRanks(kRanks, [&](int rank) {
    return Environment{{"RANK", std::to_string(rank)},
                       {"WORLD_SIZE", std::to_string(kRanks)},
                       {"CHORUS_ROOT", "127.0.0.1:" + std::to_string(port)},
                       {"CHORUS_SECRET", rank == odd_one ? kOtherSecret : kSecret},
                       {"CHORUS_TIMEOUT_MS", "3000"}};
  });
  for (const ChildOutcome& outcome : outcomes) {
    // None may hang; without every rank nobody can finish init.
    ASSERT_TRUE(outcome.exited) << Describe(outcome);
    EXPECT_GT(outcome.exit_code, InitFailedCode(chorusSuccess)) << Describe(outcome);
    EXPECT_LT(outcome.exit_code, InitFailedCode(chorusNumResults)) << Describe(outcome);
  }
  const int code = outcomes[odd_one].exit_code;
  EXPECT_TRUE(code == InitFailedCode(chorusRemoteError) || code == InitFailedCode(chorusTimeout) ||
              code == InitFailedCode(chorusInvalidUsage))
      << Describe(outcomes[odd_one]);
}

INSTANTIATE_TEST_SUITE_P(OddOne, WrongSecretTest, testing::Values(2, 0),
                         [](const testing::TestParamInfo<int>& info) {
                           return "rank" + std::to_string(info.param);
                         });

// A launcher bug: one rank sees another WORLD_SIZE. Every rank is refused at
// the rendezvous, none waits for its timeout.
TEST(InitFromEnvTest, RanksDisagreeingOnWorldSizeAllFail) {
  constexpr int kRanks = 3;
  const int port = FreePort();
  ASSERT_GT(port, 0);
  const auto start = std::chrono::steady_clock::now();
  const std::vector<ChildOutcome> outcomes = RunRanks(kRanks, [&](int rank) {
    return Environment{{"RANK", std::to_string(rank)},
                       {"WORLD_SIZE", rank == 2 ? "4" : "3"},
                       {"CHORUS_ROOT", "127.0.0.1:" + std::to_string(port)},
                       {"CHORUS_SECRET", kSecret},
                       {"CHORUS_TIMEOUT_MS", kTimeoutMs}};
  });
  for (const ChildOutcome& outcome : outcomes) {
    EXPECT_TRUE(outcome.exited && outcome.exit_code == InitFailedCode(chorusInvalidUsage)) << Describe(outcome);
  }
  EXPECT_LT(std::chrono::steady_clock::now() - start, Millis(std::atoi(kTimeoutMs)));
}

// In a child: init must fail with one of `allowed` and a message naming every
// one of `named`.
int ExpectRejected(const Environment& environment, const std::vector<chorusResult_t>& allowed,
                   const std::vector<std::string>& named) {
  ApplyEnvironment(environment);
  chorusComm_t comm = nullptr;
  const chorusResult_t result = chorusCommInitFromEnv(&comm, nullptr);
  const std::string message = chorusGetLastError(nullptr);
  bool ok = comm == nullptr;
  bool allowed_result = false;
  for (chorusResult_t expected : allowed) allowed_result |= result == expected;
  ok &= allowed_result;
  for (const std::string& name : named) ok &= message.find(name) != std::string::npos;
  if (!ok) std::fprintf(stderr, "unexpected: %s\n", Describe(result, nullptr).c_str());
  return ok ? kOk : kWrongValue;
}

void ExpectRejectedInChild(const Environment& environment, const std::vector<chorusResult_t>& allowed,
                           const std::vector<std::string>& named) {
  const std::vector<ChildOutcome> outcomes =
      ForkRanks(1, [&](int) { return ExpectRejected(environment, allowed, named); }, kDeadline);
  EXPECT_TRUE(outcomes[0].exited && outcomes[0].exit_code == kOk) << Describe(outcomes[0]);
}

TEST(InitFromEnvErrorsTest, NoRankVariablesIsInvalidUsageNamingThem) {
  ExpectRejectedInChild({{"MASTER_ADDR", "127.0.0.1"}, {"MASTER_PORT", "1"}}, {chorusInvalidUsage},
                        {"OMPI_COMM_WORLD_RANK", "PMI_RANK", "PMI_SIZE", "SLURM_PROCID", "SLURM_NTASKS", "RANK",
                         "WORLD_SIZE"});
}

TEST(InitFromEnvErrorsTest, RankWithoutSizeIsInvalidUsage) {
  ExpectRejectedInChild({{"RANK", "0"}, {"CHORUS_ROOT", "127.0.0.1:1"}}, {chorusInvalidUsage},
                        {"RANK", "WORLD_SIZE"});
}

TEST(InitFromEnvErrorsTest, NoRendezvousIsInvalidUsageNamingIt) {
  ExpectRejectedInChild({{"RANK", "0"}, {"WORLD_SIZE", "2"}}, {chorusInvalidUsage},
                        {"CHORUS_ROOT", "MASTER_ADDR", "MASTER_PORT"});
}

TEST(InitFromEnvErrorsTest, MasterAddressWithoutPortIsInvalidUsage) {
  ExpectRejectedInChild({{"RANK", "1"}, {"WORLD_SIZE", "2"}, {"MASTER_ADDR", "127.0.0.1"}}, {chorusInvalidUsage},
                        {"CHORUS_ROOT", "MASTER_PORT"});
}

TEST(InitFromEnvErrorsTest, MalformedSecretIsRejected) {
  ExpectRejectedInChild({{"RANK", "0"}, {"WORLD_SIZE", "2"}, {"CHORUS_ROOT", "127.0.0.1:1"}, {"CHORUS_SECRET", "xyz"}},
                        {chorusInvalidArgument, chorusInvalidUsage}, {"CHORUS_SECRET"});
}

TEST(InitFromEnvErrorsTest, RankOutOfRangeIsRejected) {
  ExpectRejectedInChild({{"RANK", "2"}, {"WORLD_SIZE", "2"}, {"CHORUS_ROOT", "127.0.0.1:1"}, {"CHORUS_SECRET", kSecret}},
                        {chorusInvalidArgument, chorusInvalidUsage}, {"RANK"});
}

}  // namespace
}  // namespace chorus_test
