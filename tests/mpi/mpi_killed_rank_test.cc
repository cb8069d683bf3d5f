// A rank that dies mid-run under the real launcher: mpirun runs
// mpi_allreduce_loop on 3 ranks with libchorus_mpi.so preloaded, and rank 2
// sends itself SIGKILL before one of its allreduces. The survivors, waiting
// in that allreduce on Chorus, must get an MPI error (or the job must end
// saying why) within a bounded time, never hang. Both the shared-memory
// board (small allreduces) and the executor's rings (large ones) notice a
// dead peer.
#include <gtest/gtest.h>

#include <chrono>
#include <string>

#include "tests/perf/cli_runner.h"

namespace {

using chorus_perf_test::CliRun;
using chorus_perf_test::Lines;
using chorus_perf_test::RunCommand;

// mpirun must be back well within this; the test's own limit is longer so
// that a hang shows as a failed bound rather than a killed test binary.
constexpr int kBoundS = 60;
constexpr int kKillAt = 20;

struct TimedRun {
  CliRun run;
  double seconds = 0;
};

TimedRun MpirunLoop(const std::string& mpirun_options, long count, const std::string& loop_options) {
  const std::string command =
      "mpirun --allow-run-as-root --oversubscribe -np 3 " + mpirun_options +
      " -x LD_PRELOAD=" CHORUS_MPI_PRELOAD " " CHORUS_MPI_ALLREDUCE_LOOP " --iterations 1000000 --count " +
      std::to_string(count) + " --kill-rank 2 --kill-at " + std::to_string(kKillAt) + " " + loop_options;
  const auto start = std::chrono::steady_clock::now();
  TimedRun timed;
  timed.run = RunCommand(command, kBoundS + 30);
  timed.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return timed;
}

bool Has(const std::string& text, const std::string& needle) { return text.find(needle) != std::string::npos; }

// Rank 2's pid as the program printed it ("rank 2 pid P").
std::string PidOfRank2(const std::string& out) {
  for (const std::string& line : Lines(out)) {
    if (line.rfind("rank 2 pid ", 0) == 0) return line.substr(11);
  }
  return "";
}

void SkipWithoutMpirun() {
  static const bool have = RunCommand("which mpirun").exit_code == 0;
  if (!have) GTEST_SKIP() << "mpirun not installed (Debian: openmpi-bin)";
}

// [name, floats per allreduce]: 256 floats go through the shared-memory
// board, 1M floats (4 MiB) through the executor's shared-memory rings.
struct Size {
  const char* name;
  long count;
};

class KilledRankTest : public testing::TestWithParam<Size> {
 protected:
  void SetUp() override { SkipWithoutMpirun(); }
};

// As users run it: MPI_ERRORS_ARE_FATAL, and Open MPI ends the job when a
// process dies. Whichever comes first (a survivor's Chorus error, or
// mpirun noticing the signal), mpirun returns promptly, non-zero, naming
// the killed rank.
TEST_P(KilledRankTest, JobEndsWithAReasonWithinTheBound) {
  const TimedRun timed = MpirunLoop("", GetParam().count, "");
  const CliRun& run = timed.run;
  const std::string all = run.out + run.err;
  EXPECT_LT(timed.seconds, kBoundS) << all;
  EXPECT_NE(run.exit_code, 0) << all;
  EXPECT_NE(run.exit_code, 124) << "timed out\n" << all;
  ASSERT_TRUE(Has(run.out, "rank 2: killing itself (SIGKILL) before allreduce #" + std::to_string(kKillAt))) << all;
  const std::string pid = PidOfRank2(run.out);
  ASSERT_FALSE(pid.empty()) << all;
  const bool mpirun_says = Has(run.err, "process rank 2 with PID") && Has(run.err, "exited on signal 9 (Killed)");
  const bool chorus_says = Has(run.err, "peer 2 (pid " + pid + ") died");
  EXPECT_TRUE(mpirun_says || chorus_says) << all;
  EXPECT_FALSE(Has(run.out, " wrong")) << all;
}

// With Open MPI told to keep the survivors running (orte_enable_recovery,
// as plain Open MPI they would then wait in the allreduce forever), each
// survivor gets the MPI error itself: MPI_ERRORS_RETURN hands it to the
// program, whose message is MPI_Error_string's, and Chorus's WARN line
// names the dead peer.
TEST_P(KilledRankTest, EverySurvivorGetsAnMpiError) {
  const TimedRun timed = MpirunLoop("--mca orte_enable_recovery 1 --mca orte_abort_on_non_zero_status 0",
                                    GetParam().count, "--errors-return");
  const CliRun& run = timed.run;
  const std::string all = run.out + run.err;
  EXPECT_LT(timed.seconds, kBoundS) << all;
  EXPECT_NE(run.exit_code, 124) << "timed out\n" << all;
  ASSERT_TRUE(Has(run.out, "rank 2: killing itself (SIGKILL) before allreduce #" + std::to_string(kKillAt))) << all;
  for (const char* survivor : {"rank 0: MPI_Allreduce #", "rank 1: MPI_Allreduce #"}) {
    bool reported = false;
    for (const std::string& line : Lines(run.out)) {
      reported =
          reported || (line.rfind(survivor, 0) == 0 &&
                       Has(line, " failed: Chorus collective failed: remote error (a peer failed or disconnected)"));
    }
    EXPECT_TRUE(reported) << survivor << "\n" << all;
  }
  const std::string pid = PidOfRank2(run.out);
  ASSERT_FALSE(pid.empty()) << all;
  EXPECT_TRUE(Has(run.err, "MPI_Allreduce failed: remote error")) << all;
  EXPECT_TRUE(Has(run.err, "peer 2 (pid " + pid + ") died")) << all;
  EXPECT_FALSE(Has(run.out, " wrong")) << all;
}

INSTANTIATE_TEST_SUITE_P(Sizes, KilledRankTest, testing::Values(Size{"Board", 256}, Size{"Rings", 1L << 20}),
                         [](const testing::TestParamInfo<Size>& info) { return std::string(info.param.name); });

}  // namespace
