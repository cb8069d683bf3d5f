// scripts/slurm-local.sh as a test: it starts a private single-node Slurm
// (munged, slurmctld, slurmd), runs the nccl-tests CLIs, an MPI program with
// libchorus_mpi.so and the reference trainer under srun, and stops the
// daemons. The script runs once; each test reads one step's verdict and
// output. Without slurm-wlm or munge every test is skipped, saying so.
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "tests/perf/cli_runner.h"

namespace {

using chorus_perf_test::CliRun;
using chorus_perf_test::Fields;
using chorus_perf_test::Lines;
using chorus_perf_test::RunCommand;

// The script bounds itself (every srun, and all of them: 150 s, then at
// most 25 s to stop the daemons); it needs ~15-30 s.
constexpr int kScriptTimeoutS = 280;

bool Has(const std::string& text, const std::string& needle) { return text.find(needle) != std::string::npos; }

int Count(const std::string& text, const std::string& needle) {
  int count = 0;
  for (size_t at = text.find(needle); at != std::string::npos; at = text.find(needle, at + 1)) ++count;
  return count;
}

// Suite-wide state: the one run of the script that every test reads.
class SlurmLocalTest : public testing::Test {
 protected:
  static void SetUpTestSuite() {
    script_run_ =
        new CliRun(RunCommand(CHORUS_SOURCE_DIR "/scripts/slurm-local.sh " CHORUS_BUILD_DIR, kScriptTimeoutS));
  }
  static void TearDownTestSuite() {
    delete script_run_;
    script_run_ = nullptr;
  }

  static const std::string& out() { return script_run_->out; }

  // "slurm-local: <step>: PASS|FAIL: ...|SKIP: ..." (or the script's
  // "all: SKIP: ..." when Slurm is missing); "" when absent.
  static std::string Verdict(const std::string& step) {
    for (const std::string& prefix : {"slurm-local: " + step + ": ", std::string("slurm-local: all: ")}) {
      for (const std::string& line : Lines(out())) {
        if (line.rfind(prefix, 0) == 0) return line.substr(prefix.size());
      }
    }
    return "";
  }

  // Skips a skipped step (saying why) and fails a failed one.
  void ExpectPassed(const std::string& step) {
    const std::string verdict = Verdict(step);
    if (verdict.rfind("SKIP: ", 0) == 0) GTEST_SKIP() << verdict.substr(6);
    ASSERT_EQ(verdict, "PASS") << out() << script_run_->err;
  }

  static CliRun* script_run_;
};

CliRun* SlurmLocalTest::script_run_ = nullptr;

TEST_F(SlurmLocalTest, ScriptEndsWithASummary) {
  EXPECT_EQ(script_run_->exit_code, 0) << out() << script_run_->err;
  ASSERT_FALSE(Lines(out()).empty());
  const std::vector<std::string> last = Fields(Lines(out()).back());
  ASSERT_EQ(last.size(), 7u) << out();
  EXPECT_EQ(last[0], "slurm-local:");
  EXPECT_EQ(last[3] + " " + last[4], "0 failed,") << out();
}

// The nccl-tests CLIs under `srun -n 2`: one rank per task from
// SLURM_PROCID/SLURM_NTASKS, every result checked.
TEST_F(SlurmLocalTest, CliUnderSrun) {
  ExpectPassed("cli");
  for (const char* cli : {"all_reduce_perf", "all_gather_perf", "sendrecv_perf"}) {
    EXPECT_TRUE(Has(out(), std::string("# chorus 0.1.0 ") + cli + ": 2 ranks in 2 processes")) << cli << out();
  }
  EXPECT_EQ(Count(out(), "# Out of bounds values : 0 OK"), 3) << out();
}

// An MPI program with libchorus_mpi.so under srun's MPI plugin (PMIx).
TEST_F(SlurmLocalTest, MpiProgramUnderSrunPmix) {
  ExpectPassed("mpi");
  EXPECT_TRUE(Has(out(), "slurm-local: $ srun --mpi=pmix ")) << out();
  EXPECT_TRUE(Has(out(), "mpi_allreduce_loop: 200 allreduces of 1024 floats on 2 ranks, 0 wrong")) << out();
  EXPECT_EQ(Count(out(),
                  "MPI_Allreduce on MPI_COMM_WORLD (2 ranks): 1024 x MPI_FLOAT, MPI_SUM, MPI_IN_PLACE: "
                  "served by Chorus"),
            2)
      << out();
  EXPECT_EQ(Count(out(), ": Chorus served 201 calls"), 2) << out();
}

// The reference trainer under `srun -n 2`.
TEST_F(SlurmLocalTest, TrainerUnderSrun) {
  ExpectPassed("trainer");
  EXPECT_TRUE(Has(out(), "lenet on 1024 train / 512 test images, 2 rank(s), global batch 64 (32 per rank)")) << out();
}

// Every daemon the script started is gone, and so is its directory.
TEST_F(SlurmLocalTest, DaemonsStoppedAndDirectoryRemoved) {
  std::string daemons, cluster;
  for (const std::string& line : Lines(out())) {
    if (line.rfind("slurm-local: daemons: ", 0) == 0) daemons = line;
    if (line.rfind("slurm-local: cluster in ", 0) == 0) cluster = Fields(line).at(3);
  }
  if (cluster.empty()) {
    const std::string verdict = Verdict("all");
    if (verdict.rfind("SKIP: ", 0) == 0) GTEST_SKIP() << verdict.substr(6);
    FAIL() << "no cluster started\n" << out();
  }
  ASSERT_FALSE(cluster.empty());
  cluster.pop_back();  // "...XXXXXX:"
  EXPECT_FALSE(std::ifstream(cluster + "/slurm.conf").good()) << cluster << " still there";
  ASSERT_FALSE(daemons.empty()) << out();
  const std::vector<std::string> fields = Fields(daemons);  // ... munged pid N, slurmctld pid N, slurmd pid N
  int checked = 0;
  for (size_t i = 0; i + 2 < fields.size(); ++i) {
    if (fields[i + 1] != "pid") continue;
    std::string pid = fields[i + 2];
    if (!pid.empty() && pid.back() == ',') pid.pop_back();
    std::ifstream cmdline("/proc/" + pid + "/cmdline");
    std::stringstream text;
    text << cmdline.rdbuf();
    EXPECT_FALSE(Has(text.str(), fields[i])) << fields[i] << " (pid " << pid << ") still running";
    ++checked;
  }
  EXPECT_EQ(checked, 3) << daemons;
}

}  // namespace
