// Debian's HPC Challenge benchmark (the hpcc package: an unmodified MPI
// program built against Open MPI) under mpirun with libchorus_mpi.so
// preloaded, 2 ranks, a small input. hpcc checks its own results (HPL and
// PTRANS residuals, RandomAccess errors, STREAM validation, FFT error); this
// test reads those verdicts from hpccoutf.txt and, from CHORUS_DEBUG=INFO,
// that Chorus served hpcc's collectives.
#include <gtest/gtest.h>
#include <stdlib.h>
#include <unistd.h>

#include <cstdio>
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

constexpr char kHpcc[] = "/usr/bin/hpcc";
constexpr int kTimeoutS = 300;

// Debian's /usr/share/doc/hpcc/examples/_hpccinf.txt with a 1 x 2 process
// grid and N = 500: the whole suite in seconds.
constexpr char kInput[] = R"(HPLinpack benchmark input file
Innovative Computing Laboratory, University of Tennessee
HPL.out      output file name (if any)
8            device out (6=stdout,7=stderr,file)
1            # of problems sizes (N)
500          Ns
1            # of NBs
80           NBs
0            PMAP process mapping (0=Row-,1=Column-major)
1            # of process grids (P x Q)
1            Ps
2            Qs
16.0         threshold
1            # of panel fact
2            PFACTs (0=left, 1=Crout, 2=Right)
1            # of recursive stopping criterium
4            NBMINs (>= 1)
1            # of panels in recursion
2            NDIVs
1            # of recursive panel fact.
1            RFACTs (0=left, 1=Crout, 2=Right)
1            # of broadcast
1            BCASTs (0=1rg,1=1rM,2=2rg,3=2rM,4=Lng,5=LnM)
1            # of lookahead depth
1            DEPTHs (>=0)
2            SWAP (0=bin-exch,1=long,2=mix)
64           swapping threshold
0            L1 in (0=transposed,1=no-transposed) form
0            U  in (0=transposed,1=no-transposed) form
1            Equilibration (0=no,1=yes)
8            memory alignment in double (> 0)
##### This line (no. 32) is ignored (it serves as a separator). ######
0                      		Number of additional problem sizes for PTRANS
1200 10000 30000        	values of N
0                       	number of additional blocking sizes for PTRANS
40 9 8 13 13 20 16 32 64       	values of NB
)";

bool Has(const std::string& text, const std::string& needle) { return text.find(needle) != std::string::npos; }

int Count(const std::string& text, const std::string& needle) {
  int count = 0;
  for (size_t at = text.find(needle); at != std::string::npos; at = text.find(needle, at + 1)) ++count;
  return count;
}

// Lines of `text` that contain every one of `parts`.
int CountLinesWith(const std::string& text, const std::vector<std::string>& parts) {
  int count = 0;
  for (const std::string& line : Lines(text)) {
    bool all = true;
    for (const std::string& part : parts) all = all && Has(line, part);
    count += all;
  }
  return count;
}

std::string ReadFile(const std::string& path) {
  std::ifstream file(path);
  std::stringstream text;
  text << file.rdbuf();
  return text.str();
}

// The value of "key=value" in hpcc's summary section, or "" if absent.
std::string SummaryValue(const std::string& out, const std::string& key) {
  for (const std::string& line : Lines(out)) {
    if (line.rfind(key + "=", 0) == 0) return line.substr(key.size() + 1);
  }
  return "";
}

// Runs hpcc in a fresh directory (it reads hpccinf.txt and writes
// hpccoutf.txt in its working directory); returns the run and the file.
struct HpccRun {
  CliRun run;
  std::string out_file;
};

HpccRun RunHpcc(const std::string& mpirun_options) {
  char dir[] = "/tmp/chorus_hpcc_XXXXXX";
  HpccRun result;
  if (mkdtemp(dir) == nullptr) return result;
  const std::string path(dir);
  std::ofstream(path + "/hpccinf.txt") << kInput;
  result.run = RunCommand("sh -c 'cd " + path +
                              " && exec mpirun --allow-run-as-root --oversubscribe -np 2"
                              " -x LD_PRELOAD=" CHORUS_MPI_PRELOAD " " +
                              mpirun_options + " " + kHpcc + "'",
                          kTimeoutS);
  result.out_file = ReadFile(path + "/hpccoutf.txt");
  for (const char* name : {"hpccinf.txt", "hpccoutf.txt"}) unlink((path + "/" + name).c_str());
  rmdir(dir);
  return result;
}

TEST(HpccTest, PassesItsOwnChecksWithChorusServingTheCollectives) {
  if (RunCommand("which mpirun").exit_code != 0) GTEST_SKIP() << "mpirun not installed (Debian: openmpi-bin)";
  if (access(kHpcc, X_OK) != 0) GTEST_SKIP() << kHpcc << " not installed (Debian: hpcc)";

  const HpccRun hpcc = RunHpcc("-x CHORUS_DEBUG=INFO -x CHORUS_DEBUG_SUBSYS=MPI");
  ASSERT_EQ(hpcc.run.exit_code, 0) << hpcc.run.out << hpcc.run.err;
  const std::string& out = hpcc.out_file;
  ASSERT_TRUE(Has(out, "End of Summary section.")) << out;

  // hpcc's verdicts: overall, HPL and PTRANS residuals, RandomAccess,
  // STREAM, and the per-test count of nodes that saw an error.
  EXPECT_EQ(SummaryValue(out, "Success"), "1") << out;
  EXPECT_EQ(SummaryValue(out, "CommWorldProcs"), "2") << out;
  EXPECT_EQ(CountLinesWith(out, {"||Ax-b||_oo/(eps*(||A||_oo*||x||_oo+||b||_oo)*N)=", "PASSED"}), 1) << out;
  EXPECT_FALSE(Has(out, "FAILED")) << out;
  int passed_lines = 0;
  for (const std::string& line : Lines(out)) {
    const std::vector<std::string> fields = Fields(line);
    if (Has(line, "tests completed and passed residual checks")) {
      ++passed_lines;
      EXPECT_GE(std::stoi(fields.at(0)), 1) << line;
    }
    if (Has(line, "tests completed and failed residual checks")) EXPECT_EQ(fields.at(0), "0") << line;
    if (line.rfind("Node(s) with error ", 0) == 0) EXPECT_EQ(fields.back(), "0") << line;
  }
  EXPECT_EQ(passed_lines, 2) << "HPL and PTRANS\n" << out;
  EXPECT_GE(Count(out, "Node(s) with error 0"), 1) << out;
  EXPECT_GE(Count(out, "locations (passed)."), 1) << out;
  EXPECT_FALSE(Has(out, "locations (failed).")) << out;
  EXPECT_TRUE(Has(out, "Solution Validates")) << out;
  // hpcc prints the FFT's error without a verdict; a double FFT of this
  // size is accurate to ~1e-15, a corrupted exchange is off by O(1).
  const std::string fft_error = SummaryValue(out, "MPIFFT_maxErr");
  ASSERT_FALSE(fft_error.empty()) << out;
  EXPECT_LT(std::stod(fft_error), 1e-10) << out;

  // Chorus served hpcc's collectives (per call shape, both ranks) ...
  const std::string& err = hpcc.run.err;
  for (const char* call : {"MPI_Allreduce", "MPI_Bcast", "MPI_Reduce", "MPI_Alltoall", "MPI_Barrier"}) {
    EXPECT_GE(CountLinesWith(err, {std::string(call) + " on ", "(2 ranks)", ": served by Chorus"}), 2) << call << err;
  }
  // ... and each rank's summary at MPI_Finalize says how many.
  int summaries = 0;
  for (const std::string& line : Lines(err)) {
    const size_t at = line.find(": Chorus served ");
    if (at == std::string::npos) continue;
    ++summaries;
    EXPECT_GE(std::stol(line.substr(at + 16)), 100) << line;
  }
  EXPECT_EQ(summaries, 2) << err;
  EXPECT_FALSE(Has(err, "WARN")) << err;
}

}  // namespace
