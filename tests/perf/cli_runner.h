// Runs a perf CLI as a child process under a deadline and captures its
// output, for the CLI tests.
#pragma once

#include <string>
#include <vector>

namespace chorus_perf_test {

struct CliRun {
  int exit_code = -1;  // 124: killed at the deadline
  std::string out;
  std::string err;
};

// Runs `command` (a shell command line) with `timeout`; env_prefix such as
// "WORLD_SIZE=2 " goes in front.
CliRun RunCommand(const std::string& command, int timeout_s = 60);

// <build>/perf/<name>_perf with `args`.
std::string PerfBinary(const std::string& name);
CliRun RunPerf(const std::string& name, const std::string& args, int timeout_s = 60);

std::vector<std::string> Lines(const std::string& text);
std::vector<std::string> Fields(const std::string& line);

// Result rows: lines that do not start with '#'.
std::vector<std::vector<std::string>> Rows(const std::string& out);

}  // namespace chorus_perf_test
