// The nccl-tests-compatible CLIs, run as child processes with small sizes:
// output shape, validation, exit codes, -d/-o all, -J, launch modes.
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "tests/common/free_port.h"
#include "tests/perf/cli_runner.h"

namespace chorus_perf_test {
namespace {

constexpr const char* kSmallSweep = "-b 8 -e 64K -f 4 -n 2 -w 1";
// 8, 32, ..., 32768: seven sizes.
const std::vector<size_t> kSmallSweepSizes = {8, 32, 128, 512, 2048, 8192, 32768};
constexpr const char* kColumnHeader =
    "#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw "
    "#wrong";

bool HasLine(const std::string& out, const std::string& line) {
  const std::vector<std::string> lines = Lines(out);
  return std::find(lines.begin(), lines.end(), line) != lines.end();
}

bool HasLineStartingWith(const std::string& out, const std::string& prefix) {
  for (const std::string& line : Lines(out)) {
    if (line.rfind(prefix, 0) == 0) return true;
  }
  return false;
}

int CountLinesStartingWith(const std::string& out, const std::string& prefix) {
  int count = 0;
  for (const std::string& line : Lines(out)) count += line.rfind(prefix, 0) == 0;
  return count;
}

// A row: size count type redop root, then (time algbw busbw #wrong) twice.
void ExpectValidRow(const std::vector<std::string>& row) {
  ASSERT_EQ(row.size(), 13u);
  EXPECT_EQ(row[8], "0") << "out-of-place #wrong";
  EXPECT_EQ(row[12], "0") << "in-place #wrong";
  for (size_t i : {5u, 6u, 7u, 9u, 10u, 11u}) {
    EXPECT_GE(std::stod(row[i]), 0.0) << "field " << i;
  }
}

void ExpectSummaryOk(const std::string& out) {
  EXPECT_TRUE(HasLine(out, "# Out of bounds values : 0 OK")) << out;
  EXPECT_TRUE(HasLineStartingWith(out, "# Avg bus bandwidth    : ")) << out;
}

struct CliCase {
  std::string name;
  std::string root;  // root column of every row
  std::string op;    // redop column
};

class EveryCliTest : public ::testing::TestWithParam<CliCase> {};

TEST_P(EveryCliTest, TwoRanksSmallSweepPrintsValidatedRows) {
  const CliCase& cli = GetParam();
  const CliRun run = RunPerf(cli.name, std::string("-t 2 ") + kSmallSweep);
  ASSERT_EQ(run.exit_code, 0) << run.err << run.out;
  EXPECT_TRUE(HasLine(run.out,
                      "# nThread 2 nGpus 1 minBytes 8 maxBytes 65536 step: 4(factor) warmup iters: 1 iters: 2 "
                      "agg iters: 1 validation: 1 graph: 0"))
      << run.out;
  EXPECT_TRUE(HasLine(run.out, "# Using devices"));
  EXPECT_EQ(CountLinesStartingWith(run.out, "#  Rank  0 Group  0 Pid "), 1);
  EXPECT_EQ(CountLinesStartingWith(run.out, "#  Rank  1 Group  0 Pid "), 1);
  EXPECT_TRUE(HasLineStartingWith(run.out, "#                                                              out-of-place"));
  EXPECT_TRUE(HasLine(run.out, kColumnHeader)) << run.out;
  const auto rows = Rows(run.out);
  ASSERT_EQ(rows.size(), kSmallSweepSizes.size()) << run.out;
  for (const auto& row : rows) {
    ExpectValidRow(row);
    EXPECT_EQ(row[2], "float");
    EXPECT_EQ(row[3], cli.op);
    EXPECT_EQ(row[4], cli.root);
  }
  ExpectSummaryOk(run.out);
}

INSTANTIATE_TEST_SUITE_P(Clis, EveryCliTest,
                         ::testing::Values(CliCase{"all_reduce", "-1", "sum"}, CliCase{"all_gather", "-1", "none"},
                                           CliCase{"broadcast", "0", "none"}, CliCase{"reduce", "0", "sum"},
                                           CliCase{"reduce_scatter", "-1", "sum"},
                                           CliCase{"alltoall", "-1", "none"}, CliCase{"gather", "0", "none"},
                                           CliCase{"scatter", "0", "none"}, CliCase{"sendrecv", "-1", "none"}),
                         [](const auto& info) { return info.param.name; });

TEST(PerfCliTest, AllReduceSizesCountsAndBusBandwidthFollowNcclTests) {
  const CliRun run = RunPerf("all_reduce", std::string("-t 2 ") + kSmallSweep);
  ASSERT_EQ(run.exit_code, 0) << run.err;
  const auto rows = Rows(run.out);
  ASSERT_EQ(rows.size(), kSmallSweepSizes.size());
  for (size_t i = 0; i < rows.size(); ++i) {
    EXPECT_EQ(rows[i][0], std::to_string(kSmallSweepSizes[i]));
    EXPECT_EQ(rows[i][1], std::to_string(kSmallSweepSizes[i] / 4));
    // 2 ranks: busbw = algbw * 2(n-1)/n = algbw.
    EXPECT_EQ(rows[i][6], rows[i][7]);
  }
}

TEST(PerfCliTest, AllGatherCountIsPerRankAndSizeIsTotal) {
  // 3 ranks, 3 KiB of float: 768 elements, 256 per rank (16-byte aligned).
  const CliRun run = RunPerf("all_gather", "-t 3 -b 3K -e 3K -n 1 -w 0");
  ASSERT_EQ(run.exit_code, 0) << run.err;
  const auto rows = Rows(run.out);
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(rows[0][0], "3072");
  EXPECT_EQ(rows[0][1], "256");
  ExpectValidRow(rows[0]);
}

TEST(PerfCliTest, ThreeRanksAlltoAllAndReduceScatterValidate) {
  for (const char* name : {"alltoall", "reduce_scatter", "all_reduce"}) {
    const CliRun run = RunPerf(name, "-t 3 -b 1K -e 64K -f 8 -n 2 -w 1");
    ASSERT_EQ(run.exit_code, 0) << name << run.err;
    for (const auto& row : Rows(run.out)) ExpectValidRow(row);
    ExpectSummaryOk(run.out);
  }
}

TEST(PerfCliTest, AllTypesAndOpsGiveOneRowEach) {
  const CliRun run = RunPerf("all_reduce", "-t 3 -b 64 -e 256 -f 4 -n 1 -w 1 -d all -o all");
  ASSERT_EQ(run.exit_code, 0) << run.err;
  const auto rows = Rows(run.out);
  ASSERT_EQ(rows.size(), 10u * 6u * 2u);  // types x ops x sizes
  std::set<std::pair<std::string, std::string>> seen;
  for (const auto& row : rows) {
    ExpectValidRow(row);
    seen.insert({row[2], row[3]});
  }
  for (const char* type : {"int8", "uint8", "int32", "uint32", "int64", "uint64", "half", "float", "double", "bfloat16"}) {
    for (const char* op : {"sum", "prod", "max", "min", "avg", "mulsum"}) {
      EXPECT_EQ(seen.count({type, op}), 1u) << type << " " << op;
    }
  }
  ExpectSummaryOk(run.out);
}

TEST(PerfCliTest, ReductionsWithRootsValidateEveryTypeOpAndRoot) {
  for (const char* name : {"reduce", "reduce_scatter"}) {
    const CliRun run = RunPerf(name, "-t 3 -b 256 -e 256 -n 1 -w 0 -d all -o all -r all");
    ASSERT_EQ(run.exit_code, 0) << name << run.err;
    const auto rows = Rows(run.out);
    const size_t roots = std::string(name) == "reduce" ? 3 : 1;
    ASSERT_EQ(rows.size(), 10u * 6u * roots) << name;
    for (const auto& row : rows) ExpectValidRow(row);
  }
}

TEST(PerfCliTest, RootAllRunsEveryRootForRootedCollectives) {
  for (const char* name : {"broadcast", "gather", "scatter"}) {
    const CliRun run = RunPerf(name, "-t 3 -b 1K -e 1K -n 1 -w 0 -r all -d all");
    ASSERT_EQ(run.exit_code, 0) << name << run.err;
    const auto rows = Rows(run.out);
    ASSERT_EQ(rows.size(), 10u * 3u) << name;
    std::set<std::string> roots;
    for (const auto& row : rows) {
      ExpectValidRow(row);
      roots.insert(row[4]);
    }
    EXPECT_EQ(roots, (std::set<std::string>{"0", "1", "2"})) << name;
  }
}

TEST(PerfCliTest, JsonFileHoldsEverySize) {
  char path[] = "/tmp/perf_cli_test_json_XXXXXX";
  const int fd = mkstemp(path);
  ASSERT_GE(fd, 0);
  close(fd);
  const CliRun run = RunPerf("all_reduce", std::string("-t 2 ") + kSmallSweep + " -J " + path);
  ASSERT_EQ(run.exit_code, 0) << run.err;
  std::ifstream file(path);
  std::stringstream text;
  text << file.rdbuf();
  const std::string json = text.str();
  unlink(path);
  ASSERT_FALSE(json.empty());
  EXPECT_EQ(json.front(), '{');
  EXPECT_EQ(std::count(json.begin(), json.end(), '{'), std::count(json.begin(), json.end(), '}'));
  EXPECT_EQ(std::count(json.begin(), json.end(), '['), std::count(json.begin(), json.end(), ']'));
  EXPECT_NE(json.find("\"benchmark\": \"all_reduce_perf\""), std::string::npos);
  EXPECT_NE(json.find("\"nranks\": 2"), std::string::npos);
  EXPECT_NE(json.find("\"outOfBounds\": 0"), std::string::npos);
  for (size_t size : kSmallSweepSizes) {
    EXPECT_NE(json.find("{\"size\": " + std::to_string(size) + ","), std::string::npos) << size;
  }
  EXPECT_EQ(json.find("nan"), std::string::npos);
  EXPECT_EQ(json.find("inf"), std::string::npos);
}

TEST(PerfCliTest, BlockingAggregatedAndAverageModesWork) {
  const CliRun run = RunPerf("all_reduce", "-t 2 -b 1K -e 4K -f 2 -n 2 -w 1 -z 1 -m 2 -a 3 -N 2");
  ASSERT_EQ(run.exit_code, 0) << run.err;
  EXPECT_TRUE(HasLineStartingWith(run.out, "# Blocking Enabled"));
  EXPECT_TRUE(HasLineStartingWith(run.out, "# nThread 2 nGpus 1 minBytes 1024 maxBytes 4096 step: 2(factor)"));
  const auto rows = Rows(run.out);
  EXPECT_EQ(rows.size(), 2u * 3u);  // two cycles of three sizes
  for (const auto& row : rows) ExpectValidRow(row);
}

TEST(PerfCliTest, RegisteredBuffersValidate) {
  // -R 1: the buffers are registered with chorusCommRegister; every row
  // validates and the run deregisters them cleanly.
  for (const char* kind : {"all_reduce", "sendrecv", "all_gather"}) {
    const CliRun run = RunPerf(kind, "-t 2 -b 8 -e 256K -f 8 -n 2 -w 1 -R 1");
    ASSERT_EQ(run.exit_code, 0) << kind << ": " << run.err;
    const auto rows = Rows(run.out);
    EXPECT_EQ(rows.size(), 6u) << kind;
    for (const auto& row : rows) ExpectValidRow(row);
    ExpectSummaryOk(run.out);
  }
}

TEST(PerfCliTest, LinearStepsAndRanksPerThread) {
  // -i: 1 KiB steps; -t 1 -g 2: two ranks in this process.
  const CliRun run = RunPerf("all_reduce", "-t 1 -g 2 -b 1K -e 3K -i 1K -n 1 -w 0 -A ring");
  ASSERT_EQ(run.exit_code, 0) << run.err;
  EXPECT_TRUE(HasLineStartingWith(run.out, "# nThread 1 nGpus 2 minBytes 1024 maxBytes 3072 step: 1024(bytes)"));
  const auto rows = Rows(run.out);
  ASSERT_EQ(rows.size(), 3u);
  EXPECT_EQ(rows[0][0], "1024");
  EXPECT_EQ(rows[1][0], "2048");
  EXPECT_EQ(rows[2][0], "3072");
}

TEST(PerfCliTest, NoCheckPrintsNotAvailable) {
  const CliRun run = RunPerf("all_reduce", "-t 2 -b 64 -e 64 -n 1 -w 0 -c 0");
  ASSERT_EQ(run.exit_code, 0) << run.err;
  const auto rows = Rows(run.out);
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(rows[0][8], "N/A");
  EXPECT_EQ(rows[0][12], "N/A");
}

TEST(PerfCliTest, BadFlagsGiveUsageAndNonZeroExit) {
  for (const char* args : {"-q", "-d nosuchtype", "-o nosuchop", "-b 1X", "-b 2K -e 1K", "-a 7", "-R 3", "-G 2", "extra"}) {
    const CliRun run = RunPerf("all_reduce", args);
    EXPECT_EQ(run.exit_code, 2) << args;
    EXPECT_NE(run.err.find("USAGE: all_reduce_perf"), std::string::npos) << args << ": " << run.err;
    EXPECT_TRUE(Rows(run.out).empty()) << args;
  }
}

// -G 1 puts the buffers in CUDA device memory. With a GPU every row
// validates; without one (or without CUDA in the build) the run fails at
// set-up with the reason, before any row.
TEST(PerfCliTest, DeviceBuffersValidateOrFailWithTheReason) {
  const CliRun run = RunPerf("all_reduce", "-t 2 -b 1K -e 64K -f 8 -G 1");
  if (run.exit_code == 0) {
    const auto rows = Rows(run.out);
    ASSERT_EQ(rows.size(), 3u) << run.out;
    for (const auto& row : rows) {
      EXPECT_EQ(row[8], "0") << run.out;
      EXPECT_EQ(row[12], "0") << run.out;
    }
    GTEST_SKIP() << "a CUDA device is present: device buffers validated";
  }
  EXPECT_EQ(run.exit_code, 2) << run.err;
  EXPECT_NE(run.err.find("-G 1 (device buffers): "), std::string::npos) << run.err;
  EXPECT_TRUE(run.err.find("no CUDA driver or device") != std::string::npos ||
              run.err.find("no CUDA support") != std::string::npos)
      << run.err;
  EXPECT_TRUE(Rows(run.out).empty()) << run.out;
  // nccl-tests' --cudagraph is accepted and ignored.
  const CliRun graph = RunPerf("all_reduce", "-t 2 -b 8 -e 8 --cudagraph 2 -G 0");
  EXPECT_EQ(graph.exit_code, 0) << graph.err;
  EXPECT_EQ(Rows(graph.out).size(), 1u);
}

TEST(PerfCliTest, HelpPrintsUsageAndSucceeds) {
  const CliRun run = RunPerf("sendrecv", "-h");
  EXPECT_EQ(run.exit_code, 0);
  EXPECT_NE(run.out.find("USAGE: sendrecv_perf"), std::string::npos);
  EXPECT_NE(run.out.find("-J,--output_file"), std::string::npos);
}

TEST(PerfCliTest, FailedCallsExitNonZeroWithTheLibraryMessage) {
  const CliRun bad_algo = RunPerf("all_reduce", "-t 2 -b 8 -e 8 -A nosuchalgo");
  EXPECT_EQ(bad_algo.exit_code, 2);
  EXPECT_NE(bad_algo.err.find("nosuchalgo"), std::string::npos) << bad_algo.err;
  const CliRun bad_root = RunPerf("broadcast", "-t 2 -b 8 -e 8 -r 5");
  EXPECT_EQ(bad_root.exit_code, 2);
  EXPECT_NE(bad_root.err.find("invalid root 5"), std::string::npos) << bad_root.err;
}

TEST(PerfCliTest, LauncherEnvironmentRunsOneRankPerProcess) {
  const int free_port = chorus_test::FreePort();
  ASSERT_GT(free_port, 0);
  const std::string port = std::to_string(free_port);
  const std::string env = "CHORUS_SECRET=0123456789abcdef0123456789abcdef WORLD_SIZE=2 MASTER_ADDR=127.0.0.1 "
                          "MASTER_PORT=" + port + " ";
  const std::string binary = PerfBinary("all_reduce") + " -b 8 -e 1K -f 4 -n 2 -w 1";
  // Rank 1 in the background (its output discarded), rank 0 in front.
  const CliRun run = RunCommand("sh -c '" + env + "RANK=1 " + binary + " >/dev/null 2>&1 & " + env + "RANK=0 " + binary +
                                "; code=$?; wait $! || code=3; exit $code'");
  ASSERT_EQ(run.exit_code, 0) << run.err << run.out;
  EXPECT_TRUE(HasLineStartingWith(run.out, "# chorus ")) << run.out;
  EXPECT_NE(run.out.find("2 ranks in 2 processes"), std::string::npos) << run.out;
  EXPECT_EQ(Rows(run.out).size(), 4u);
  ExpectSummaryOk(run.out);
}

TEST(PerfCliTest, LauncherEnvironmentRejectsThreads) {
  const CliRun run = RunCommand("env WORLD_SIZE=2 RANK=0 " + PerfBinary("all_reduce") + " -t 2 -b 8 -e 8");
  EXPECT_EQ(run.exit_code, 2);
  EXPECT_NE(run.err.find("-t/-g > 1 needs mpirun"), std::string::npos) << run.err;
}

#if CHORUS_PERF_HAVE_MPI
TEST(PerfCliTest, MpirunSharesTheIdThroughMpi) {
  if (RunCommand("which mpirun").exit_code != 0) GTEST_SKIP() << "mpirun not installed";
  const CliRun run = RunCommand("mpirun --allow-run-as-root --oversubscribe -np 2 " + PerfBinary("all_gather") +
                                " -t 2 -b 1K -e 16K -f 4 -n 2 -w 1");
  ASSERT_EQ(run.exit_code, 0) << run.err << run.out;
  EXPECT_NE(run.out.find("4 ranks in 2 processes"), std::string::npos) << run.out;
  for (const char* rank : {"#  Rank  0 ", "#  Rank  1 ", "#  Rank  2 ", "#  Rank  3 "}) {
    EXPECT_EQ(CountLinesStartingWith(run.out, rank), 1) << rank;
  }
  const auto rows = Rows(run.out);
  ASSERT_EQ(rows.size(), 3u);
  for (const auto& row : rows) ExpectValidRow(row);
  ExpectSummaryOk(run.out);
}
#endif

}  // namespace
}  // namespace chorus_perf_test
