// Runs c_api_program (plain C against chorus.h, ranks as forked processes,
// every API call checked exactly) for several process counts and expects it
// to exit with 0. The program prints what was wrong to stderr, which this
// test inherits.
#include <gtest/gtest.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <string>
#include <thread>
#include <vector>

extern char** environ;

namespace chorus_test {
namespace {

// Per run: the program kills its own ranks at its deadline, this one covers
// the program itself.
constexpr int kProgramDeadlineSeconds = 30;
constexpr auto kRunnerDeadline = std::chrono::seconds(kProgramDeadlineSeconds + 15);

struct ProgramEnd {
  bool exited = false;
  int exit_code = -1;
  std::string what;  // how it ended, for failure messages
};

ProgramEnd RunProgram(const std::vector<std::string>& args) {
  ProgramEnd end;
  std::vector<char*> argv;
  std::string path = CHORUS_C_API_PROGRAM;
  argv.push_back(path.data());
  std::vector<std::string> copies = args;
  for (std::string& arg : copies) argv.push_back(arg.data());
  argv.push_back(nullptr);
  std::fflush(nullptr);
  pid_t pid = -1;
  const int spawned = posix_spawn(&pid, path.c_str(), nullptr, nullptr, argv.data(), environ);
  if (spawned != 0) {
    end.what = "posix_spawn " + path + " failed: error " + std::to_string(spawned);
    return end;
  }
  const auto give_up_at = std::chrono::steady_clock::now() + kRunnerDeadline;
  int status = 0;
  while (waitpid(pid, &status, WNOHANG) == 0) {
    if (std::chrono::steady_clock::now() >= give_up_at) {
      kill(pid, SIGKILL);
      waitpid(pid, &status, 0);
      end.what = "still running at the deadline, killed";
      return end;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  end.exited = WIFEXITED(status);
  end.exit_code = end.exited ? WEXITSTATUS(status) : -1;
  end.what = end.exited ? "exit code " + std::to_string(end.exit_code)
                        : "killed by signal " + std::to_string(WIFSIGNALED(status) ? WTERMSIG(status) : 0);
  return end;
}

class CApiProgramTest : public testing::TestWithParam<int> {};

TEST_P(CApiProgramTest, EveryCallChecksOutAcrossForkedProcesses) {
  const ProgramEnd end = RunProgram({std::to_string(GetParam()), std::to_string(kProgramDeadlineSeconds)});
  EXPECT_TRUE(end.exited && end.exit_code == 0) << CHORUS_C_API_PROGRAM << " " << GetParam() << ": " << end.what;
}

INSTANTIATE_TEST_SUITE_P(Processes, CApiProgramTest, testing::Values(1, 2, 3, 4, 8),
                         [](const testing::TestParamInfo<int>& info) {
                           return std::to_string(info.param) + "processes";
                         });

// Bad usage is reported with exit status 2, not run.
TEST(CApiProgramUsageTest, RejectsBadProcessCounts) {
  for (const char* nranks : {"0", "17", "x"}) {
    const ProgramEnd end = RunProgram({nranks});
    EXPECT_TRUE(end.exited && end.exit_code == 2) << "NRANKS " << nranks << ": " << end.what;
  }
}

}  // namespace
}  // namespace chorus_test
