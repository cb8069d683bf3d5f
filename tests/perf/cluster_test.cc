// The emulated cluster of perf/cluster/: hosts as network namespaces with
// rate-limited links, one or two ranks per host, the hosts over TCP. Needs
// root (ip netns, tc); skipped without it.
#include <gtest/gtest.h>

#include <string>

#include "tests/perf/cli_runner.h"

namespace chorus_perf_test {
namespace {

std::string ClusterScript() { return std::string(CHORUS_SOURCE_DIR) + "/perf/cluster/cluster.sh"; }

// The namespaces of one run ("cluster: namespaces chorus123h0..." on
// stderr) must all be gone after it; other runs may be going on beside it.
void ExpectTornDown(const CliRun& run) {
  const std::string marker = "cluster: namespaces ";
  const size_t at = run.err.find(marker);
  ASSERT_NE(at, std::string::npos) << run.err;
  const size_t begin = at + marker.size();
  const std::string first = run.err.substr(begin, run.err.find_first_of(". \n", begin) - begin);
  const std::string prefix = first.substr(0, first.rfind('h'));
  ASSERT_FALSE(prefix.empty()) << run.err;
  const CliRun left = RunCommand("ip netns list | grep -c '^" + prefix + "' || true", 10);
  EXPECT_EQ(left.out.find_first_not_of("0\n"), std::string::npos) << prefix << ": " << left.out;
}

TEST(EmulatedClusterTest, AllReduceAcrossThreeHostsIsCorrectAndTornDown) {
  const CliRun run = RunCommand(ClusterScript() + " -n 3 -r 1gbit -t 60 -- " + PerfBinary("all_reduce") +
                                    " -b 8 -e 1M -f 32 -n 2 -w 1",
                                120);
  if (run.exit_code == 77) GTEST_SKIP() << "needs root with ip and tc: " << (run.out + run.err);
  ASSERT_EQ(run.exit_code, 0) << (run.out + run.err);
  EXPECT_NE(run.out.find("[host0] # chorus"), std::string::npos) << (run.out + run.err);
  EXPECT_NE(run.out.find("3 ranks in 3 processes"), std::string::npos) << (run.out + run.err);
  EXPECT_NE(run.out.find("[host0] # Out of bounds values : 0 OK"), std::string::npos) << (run.out + run.err);
  ExpectTornDown(run);
}

// Two ranks per host: each rank reaches its neighbour over shared memory and
// the other host over TCP, and waits on both at once (core/transport_mux.h).
TEST(EmulatedClusterTest, AllReduceOverSharedMemoryAndTcpTogetherIsCorrect) {
  const CliRun run = RunCommand("env CHORUS_DEBUG=INFO CHORUS_DEBUG_SUBSYS=INIT " + ClusterScript() +
                                    " -n 2 -p 2 -r 1gbit -t 60 -- " + PerfBinary("all_reduce") +
                                    " -b 8 -e 4M -f 8 -n 3 -w 1",
                                120);
  if (run.exit_code == 77) GTEST_SKIP() << "needs root with ip and tc: " << (run.out + run.err);
  ASSERT_EQ(run.exit_code, 0) << (run.out + run.err);
  EXPECT_NE(run.out.find("4 ranks in 4 processes"), std::string::npos) << (run.out + run.err);
  EXPECT_NE(run.out.find("[host0/0] # Out of bounds values : 0 OK"), std::string::npos) << (run.out + run.err);
  EXPECT_NE(run.out.find("rank 3/4 connected (0:tcp, 1:tcp, 2:shm;"), std::string::npos) << (run.out + run.err);
  ExpectTornDown(run);
}

TEST(EmulatedClusterTest, FailingRankMakesTheRunFailAndStillTearsDown) {
  const CliRun run = RunCommand(ClusterScript() + " -n 2 -t 30 -- sh -c 'exit {rank}'", 60);
  if (run.exit_code == 77) GTEST_SKIP() << "needs root with ip and tc: " << (run.out + run.err);
  EXPECT_EQ(run.exit_code, 1) << (run.out + run.err);
  ExpectTornDown(run);
}

}  // namespace
}  // namespace chorus_perf_test
