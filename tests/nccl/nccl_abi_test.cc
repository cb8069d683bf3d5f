// libnccl.so.2 as a drop-in NCCL: its exported symbols are exactly nccl.h's
// entry points (nccl* and pnccl*), and an NCCL program linked with -lnccl
// runs on it through LD_LIBRARY_PATH, as 2 and 3 processes, as threads of
// ncclCommInitAll, and as ranks created by one thread in a group; and
// ncclCommShrink leaves a dead process out. Where NVIDIA's library is
// installed, the results of the calls that need no GPU are compared with it.
#include <gtest/gtest.h>
#include <unistd.h>

#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <string>

#include "tests/perf/cli_runner.h"

namespace {

using chorus_perf_test::CliRun;
using chorus_perf_test::Lines;
using chorus_perf_test::RunCommand;

constexpr int kTimeoutS = 120;
const std::string kLibrary = CHORUS_NCCL_LIB_DIR "/libnccl.so.2";

// The functions nccl.h declares: "ncclResult_t  ncclAllReduce(", "const
// char* pncclGetLastError(", "void  ncclResetDebugInit(" ...
std::set<std::string> DeclaredFunctions() {
  std::ifstream header(CHORUS_NCCL_HEADER);
  std::stringstream text;
  text << header.rdbuf();
  const std::string source = text.str();
  static const std::regex declaration(R"((?:ncclResult_t|const char\s*\*|void)\s+(p?nccl\w+)\s*\()");
  std::set<std::string> names;
  for (std::sregex_iterator it(source.begin(), source.end(), declaration), end; it != end; ++it) {
    names.insert((*it)[1]);
  }
  return names;
}

// name -> nm type letter of every defined dynamic symbol.
std::map<std::string, std::string> ExportedSymbols() {
  CliRun nm = RunCommand("nm -D --defined-only " + kLibrary, kTimeoutS);
  EXPECT_EQ(nm.exit_code, 0) << nm.err;
  std::map<std::string, std::string> symbols;
  for (const std::string& line : Lines(nm.out)) {
    std::istringstream fields(line);
    std::string address, type, name;
    fields >> address >> type >> name;
    if (!name.empty()) symbols[name] = type;
  }
  return symbols;
}

CliRun RunCheck(const std::string& mode, int nranks) {
  return RunCommand("env LD_LIBRARY_PATH=" CHORUS_NCCL_LIB_DIR " " CHORUS_NCCL_CHECK " " + mode + " " +
                        std::to_string(nranks),
                    kTimeoutS);
}

void ExpectPasses(const std::string& mode, int nranks) {
  CliRun run = RunCheck(mode, nranks);
  EXPECT_EQ(run.exit_code, 0) << run.out << run.err;
  EXPECT_NE(run.out.find("OK " + mode + " " + std::to_string(nranks) + ": "), std::string::npos)
      << run.out << run.err;
}

TEST(NcclAbi, ExportsEveryFunctionOfNcclHeaderAndNothingElse) {
  const std::set<std::string> declared = DeclaredFunctions();
  ASSERT_GE(declared.size(), 80u) << "nccl.h's functions were not found in " CHORUS_NCCL_HEADER;
  const std::map<std::string, std::string> exported = ExportedSymbols();
  for (const std::string& name : declared) {
    auto it = exported.find(name);
    EXPECT_TRUE(it != exported.end() && (it->second == "T" || it->second == "W"))
        << name << " is declared in nccl.h but not exported as a function";
  }
  for (const auto& [name, type] : exported) {
    EXPECT_TRUE(declared.count(name) == 1) << name << " (" << type << ") is exported but not in nccl.h";
  }
}

TEST(NcclAbi, SonameIsLibnccl2AndNoCudaLibraryIsNeeded) {
  CliRun readelf = RunCommand("readelf -d " + kLibrary, kTimeoutS);
  ASSERT_EQ(readelf.exit_code, 0) << readelf.err;
  EXPECT_NE(readelf.out.find("Library soname: [libnccl.so.2]"), std::string::npos) << readelf.out;
  EXPECT_EQ(readelf.out.find("libcuda"), std::string::npos) << readelf.out;
  // The check program needs libnccl.so.2 by soname, as a program linked
  // against NVIDIA's library does.
  CliRun check = RunCommand("readelf -d " CHORUS_NCCL_CHECK, kTimeoutS);
  EXPECT_NE(check.out.find("Shared library: [libnccl.so.2]"), std::string::npos) << check.out;
}

// The calls that need no GPU give the results NVIDIA's library gives
// (which runs them on a host without a driver).
TEST(NcclAbi, ResultsMatchNvidiaNcclWhereNoGpuIsNeeded) {
  CliRun chorus = RunCommand("env LD_LIBRARY_PATH=" CHORUS_NCCL_LIB_DIR " " CHORUS_NCCL_CODES, kTimeoutS);
  ASSERT_EQ(chorus.exit_code, 0) << chorus.out << chorus.err;
  ASSERT_GT(Lines(chorus.out).size(), 20u) << chorus.out;
  if (access(CHORUS_NVIDIA_NCCL_DIR "/libnccl.so.2", R_OK) != 0) {
    GTEST_SKIP() << "NVIDIA's libnccl.so.2 is not in " CHORUS_NVIDIA_NCCL_DIR;
  }
  CliRun nvidia = RunCommand("env LD_LIBRARY_PATH=" CHORUS_NVIDIA_NCCL_DIR " " CHORUS_NCCL_CODES, kTimeoutS);
  ASSERT_EQ(nvidia.exit_code, 0) << nvidia.out << nvidia.err;
  EXPECT_EQ(chorus.out, nvidia.out);
}

TEST(NcclAbi, TwoProcesses) { ExpectPasses("procs", 2); }
TEST(NcclAbi, ThreeProcesses) { ExpectPasses("procs", 3); }
TEST(NcclAbi, InitAllTwoThreads) { ExpectPasses("threads", 2); }
TEST(NcclAbi, InitAllThreeThreads) { ExpectPasses("threads", 3); }
TEST(NcclAbi, OneThreadCreatesThreeRanksInAGroup) { ExpectPasses("group", 3); }
TEST(NcclAbi, OneThreadCreatesTwoRanksInAGroup) { ExpectPasses("group", 2); }
TEST(NcclAbi, ShrinkExcludesADeadProcess) { ExpectPasses("shrink", 3); }

// CUDA builds: device buffers on CUDA streams, every result read back on the
// stream after a long copy queued before the inputs (skipped without a GPU).
TEST(NcclAbi, DeviceBuffersFollowTheirCudaStreams) {
#ifdef CHORUS_NCCL_DEVICE_CHECK
  for (int nranks : {2, 3}) {
    CliRun run = RunCommand("env LD_LIBRARY_PATH=" CHORUS_NCCL_LIB_DIR " " CHORUS_NCCL_DEVICE_CHECK " threads " +
                                std::to_string(nranks),
                            kTimeoutS);
    if (run.exit_code == 77) GTEST_SKIP() << run.out;
    EXPECT_EQ(run.exit_code, 0) << run.out << run.err;
    EXPECT_NE(run.out.find("OK threads " + std::to_string(nranks) + ": "), std::string::npos) << run.out << run.err;
  }
#else
  GTEST_SKIP() << "built without CUDA: no device-buffer NCCL program";
#endif
}

}  // namespace
