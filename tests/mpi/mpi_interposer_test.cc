// libchorus_mpi.so under mpirun, as users run it: LD_PRELOAD on unmodified
// MPI programs. mpi_interposer_check compares every intercepted call with
// Open MPI's result (PMPI_) in the same run; the Fortran programs and the
// mpi4py script check closed-form results. These tests also read the
// CHORUS_DEBUG=INFO lines to see which calls Chorus served and which passed
// to MPI, and look for Chorus segments left in /dev/shm.
#include <dirent.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "tests/perf/cli_runner.h"

namespace {

using chorus_perf_test::CliRun;
using chorus_perf_test::Lines;
using chorus_perf_test::RunCommand;

constexpr int kTimeoutS = 120;

// mpirun with the interposer preloaded and `env` (NAME=value ...) exported.
CliRun Mpirun(int nranks, const std::vector<std::string>& env, const std::string& program) {
  std::string command = "mpirun --allow-run-as-root --oversubscribe -np " + std::to_string(nranks) +
                        " -x LD_PRELOAD=" CHORUS_MPI_PRELOAD;
  for (const std::string& variable : env) command += " -x " + variable;
  return RunCommand(command + " " + program, kTimeoutS);
}

int Count(const std::string& text, const std::string& needle) {
  int count = 0;
  for (size_t at = text.find(needle); at != std::string::npos; at = text.find(needle, at + 1)) ++count;
  return count;
}

bool Has(const std::string& text, const std::string& needle) { return text.find(needle) != std::string::npos; }

// Chorus segments in /dev/shm created by any of the pids the program
// printed ("rank R pid P").
std::vector<std::string> SegmentsOf(const std::string& out) {
  std::vector<std::string> pids;
  for (const std::string& line : Lines(out)) {
    const size_t at = line.find(" pid ");
    if (line.rfind("rank ", 0) != 0 || at == std::string::npos) continue;
    std::string pid = "-";
    pid.append(line, at + 5, std::string::npos);
    pid.push_back('-');
    pids.push_back(pid);
  }
  std::vector<std::string> left;
  if (DIR* dir = opendir("/dev/shm")) {
    while (dirent* entry = readdir(dir)) {
      const std::string name = entry->d_name;
      if (name.rfind("chorus-shm-", 0) != 0) continue;
      for (const std::string& pid : pids) {
        if (Has(name, pid)) left.push_back(name);
      }
    }
    closedir(dir);
  }
  return left;
}

void SkipWithoutMpirun() {
  static const bool have = RunCommand("which mpirun").exit_code == 0;
  if (!have) GTEST_SKIP() << "mpirun not installed (Debian: openmpi-bin)";
}

class InterposerTest : public testing::Test {
 protected:
  void SetUp() override { SkipWithoutMpirun(); }
};

class InterposerCheckTest : public testing::TestWithParam<int> {
 protected:
  void SetUp() override { SkipWithoutMpirun(); }
};

TEST_P(InterposerCheckTest, EveryCallMatchesOpenMpi) {
  const int nranks = GetParam();
  const CliRun run = Mpirun(nranks, {"CHORUS_DEBUG=INFO"}, CHORUS_MPI_CHECK " all");
  ASSERT_EQ(run.exit_code, 0) << run.out << run.err;
  EXPECT_TRUE(Has(run.out, ", 0 failed")) << run.out;
  EXPECT_EQ(Count(run.out, " 0 Chorus segments left after MPI_Finalize"), nranks) << run.out;
  EXPECT_TRUE(SegmentsOf(run.out).empty());

  // Chorus served each intercepted call ...
  for (const char* call : {"MPI_Allreduce", "MPI_Bcast", "MPI_Reduce", "MPI_Allgather", "MPI_Reduce_scatter_block",
                           "MPI_Alltoall", "MPI_Gather", "MPI_Scatter", "MPI_Barrier", "MPI_Iallreduce",
                           "MPI_Ibcast"}) {
    EXPECT_TRUE(Has(run.err, std::string(call) + " on MPI_COMM_WORLD (" + std::to_string(nranks) + " ranks)")) << call;
  }
  EXPECT_TRUE(Has(run.err, "x MPI_FLOAT, MPI_SUM, MPI_IN_PLACE: served by Chorus")) << run.err;
  EXPECT_TRUE(Has(run.err, "x MPI_C_FLOAT_COMPLEX, MPI_SUM: served by Chorus")) << run.err;
  // ... and passed these to MPI, saying why.
  for (const char* reason : {"(user-defined op)", "(op without a Chorus equivalent)",
                             "(datatype has no Chorus reduction type)", "(inter-communicator)",
                             "(single-rank communicator)", "(derived or unsupported datatype)"}) {
    EXPECT_TRUE(Has(run.err, std::string(": passed to MPI ") + reason)) << reason;
  }
  // One summary per rank, with calls on both sides.
  EXPECT_EQ(Count(run.err, ": Chorus served "), nranks) << run.err;
  EXPECT_EQ(Count(run.err, ") passed to MPI; "), nranks) << run.err;
  EXPECT_FALSE(Has(run.err, "WARN")) << run.err;
}

INSTANTIATE_TEST_SUITE_P(Ranks, InterposerCheckTest, testing::Values(2, 3),
                         [](const testing::TestParamInfo<int>& info) { return std::to_string(info.param) + "ranks"; });

TEST_F(InterposerTest, ChorusMpi0PassesEverythingThrough) {
  const CliRun run = Mpirun(2, {"CHORUS_DEBUG=INFO", "CHORUS_MPI=0"}, CHORUS_MPI_CHECK " all");
  ASSERT_EQ(run.exit_code, 0) << run.out << run.err;
  EXPECT_TRUE(Has(run.out, ", 0 failed")) << run.out;
  EXPECT_FALSE(Has(run.err, "served by Chorus")) << run.err;
  EXPECT_FALSE(Has(run.err, "Chorus communicator of")) << run.err;
  EXPECT_EQ(Count(run.err, "CHORUS_MPI=0, every call passed to MPI unchanged"), 2) << run.err;
}

// With room for two Chorus communicators per process, ranks that belong to
// different communicators reach the limit at different times; they still
// agree, per communicator, on whether Chorus serves it.
TEST_F(InterposerTest, CommunicatorLimitPassesTheRestToMpi) {
  const CliRun run = Mpirun(3, {"CHORUS_DEBUG=INFO", "CHORUS_MPI_MAX_COMMS=2"}, CHORUS_MPI_CHECK " all");
  ASSERT_EQ(run.exit_code, 0) << run.out << run.err;
  EXPECT_TRUE(Has(run.out, ", 0 failed")) << run.out;
  EXPECT_TRUE(Has(run.err, "passed to MPI (CHORUS_MPI_MAX_COMMS Chorus communicators alive)")) << run.err;
  EXPECT_TRUE(Has(run.err, "MPI_Allreduce on MPI_COMM_WORLD (3 ranks): 3000 x MPI_FLOAT, MPI_SUM: served by Chorus"))
      << run.err;
}

// MPI_THREAD_MULTIPLE: three threads per rank, each on its own
// communicator at the same time.
TEST_F(InterposerTest, ThreadsEachOnTheirOwnCommunicator) {
  const CliRun run = Mpirun(3, {"CHORUS_DEBUG=INFO"}, CHORUS_MPI_CHECK " threads");
  ASSERT_EQ(run.exit_code, 0) << run.out << run.err;
  if (Has(run.out, "threads skipped")) GTEST_SKIP() << "Open MPI without MPI_THREAD_MULTIPLE";
  EXPECT_TRUE(Has(run.out, ", 0 failed")) << run.out;
  EXPECT_EQ(Count(run.err, "passed to MPI; 3 Chorus communicators"), 3) << run.err;
}

// A rank that arrives after CHORUS_TIMEOUT_MS: the one that waited gets an
// MPI error (class MPI_ERR_OTHER, "Chorus ..." string) through
// MPI_ERRORS_RETURN instead of hanging; the program then finalizes cleanly.
TEST_F(InterposerTest, LateRankIsAnErrorNotAHang) {
  const CliRun run = Mpirun(2, {"CHORUS_TIMEOUT_MS=1000"}, CHORUS_MPI_CHECK " errors");
  ASSERT_EQ(run.exit_code, 0) << run.out << run.err;
  EXPECT_EQ(Count(run.out, "late-rank Allreduce returned"), 2) << run.out;
  EXPECT_TRUE(Has(run.out, "rank 0: late-rank Allreduce returned")) << run.out;
  EXPECT_TRUE(Has(run.err, "MPI_Allreduce failed: timeout")) << run.err;
  EXPECT_TRUE(SegmentsOf(run.out).empty());
}

void ExpectFortranServed(const char* program, const char* summary) {
  if (std::string(program).empty()) GTEST_SKIP() << "no Fortran compiler or Fortran MPI";
  const CliRun run = Mpirun(2, {"CHORUS_DEBUG=INFO"}, program);
  ASSERT_EQ(run.exit_code, 0) << run.out << run.err;
  EXPECT_TRUE(Has(run.out, summary)) << run.out;
  for (const char* call : {"MPI_Allreduce", "MPI_Bcast", "MPI_Barrier"}) {
    EXPECT_GE(Count(run.err, std::string(call) + " on MPI_COMM_WORLD (2 ranks)"), 2) << call << "\n" << run.err;
  }
  EXPECT_FALSE(Has(run.err, "passed to MPI (")) << run.err;
}

// mpif.h / use mpi: libmpi_mpifh calls PMPI_ directly, so these go through
// the interposer's mpi_allreduce_ etc.
TEST_F(InterposerTest, FortranUseMpiIsServed) { ExpectFortranServed(CHORUS_MPI_FORTRAN, "fortran: 0 failed"); }

// use mpi_f08: libmpi_usempif08 calls ompi_allreduce_f etc.
TEST_F(InterposerTest, FortranUseMpiF08IsServed) { ExpectFortranServed(CHORUS_MPI_F08, "f08: 0 failed"); }

TEST_F(InterposerTest, Mpi4pySmoke) {
  if (RunCommand("/usr/bin/python3 -c 'import mpi4py'").exit_code != 0) {
    GTEST_SKIP() << "/usr/bin/python3 has no mpi4py (Debian: python3-mpi4py)";
  }
  const CliRun run = Mpirun(2, {"CHORUS_DEBUG=INFO"}, "/usr/bin/python3 " CHORUS_MPI_SMOKE_PY);
  ASSERT_EQ(run.exit_code, 0) << run.out << run.err;
  EXPECT_TRUE(Has(run.out, "mpi4py: ok")) << run.out;
  EXPECT_TRUE(Has(run.err, "MPI_Allreduce on MPI_COMM_WORLD (2 ranks): 1000 x MPI_DOUBLE, MPI_SUM: served by Chorus"))
      << run.err;
  EXPECT_TRUE(Has(run.err, "MPI_Iallreduce on MPI_COMM_WORLD (2 ranks): 1000 x MPI_DOUBLE, MPI_MAX: served by Chorus"))
      << run.err;
}

// malloc under the interposer, fork included (heap_malloc_check.c), with the
// shared heap on and off. Sanitizer builds leave malloc to their runtimes
// (the program then checks the C library's malloc the same way).
TEST_F(InterposerTest, MallocServesLargeBlocksFromTheSharedHeapAcrossFork) {
  const bool sanitized = Has(CHORUS_MPI_PRELOAD, "libasan") || Has(CHORUS_MPI_PRELOAD, "libtsan");
  for (const char* setting : {"CHORUS_SHARED_HEAP=1", "CHORUS_SHARED_HEAP=0", "CHORUS_MPI=0"}) {
    SCOPED_TRACE(setting);
    const CliRun run = RunCommand(std::string("env ") + setting + " LD_PRELOAD=" CHORUS_MPI_PRELOAD " "
                                  CHORUS_HEAP_MALLOC_CHECK, kTimeoutS);
    ASSERT_EQ(run.exit_code, 0) << run.out << run.err;
    EXPECT_TRUE(Has(run.out, "heap malloc check: ok")) << run.out;
    const bool on = !sanitized && std::string(setting) == "CHORUS_SHARED_HEAP=1";
    EXPECT_TRUE(Has(run.out, on ? "heap: on" : "heap: off")) << run.out;
  }
}

// The same with numpy and Python's multiprocessing fork (heap_fork.py): the
// forked child once freed the C library's memory lying between its fresh
// heap and the inherited one through the heap's error path, which allocated
// and freed again, without end.
TEST_F(InterposerTest, NumpyArraysSurviveAForkedChild) {
  if (Has(CHORUS_MPI_PRELOAD, "libasan") || Has(CHORUS_MPI_PRELOAD, "libtsan")) {
    GTEST_SKIP() << "sanitizer builds leave malloc to their runtimes";
  }
  if (RunCommand("/usr/bin/python3 -c 'import numpy'").exit_code != 0) {
    GTEST_SKIP() << "/usr/bin/python3 has no numpy (Debian: python3-numpy)";
  }
  const CliRun run =
      RunCommand("env LD_PRELOAD=" CHORUS_MPI_PRELOAD " /usr/bin/python3 " CHORUS_HEAP_FORK_PY, kTimeoutS);
  ASSERT_EQ(run.exit_code, 0) << run.out << run.err;
  EXPECT_TRUE(Has(run.out, "heap fork: ok")) << run.out;
}

}  // namespace
