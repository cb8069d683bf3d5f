#include "tests/perf/cli_runner.h"

#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>

namespace chorus_perf_test {

namespace {

std::string ReadFile(const std::string& path) {
  std::ifstream file(path);
  std::stringstream text;
  text << file.rdbuf();
  return text.str();
}

}  // namespace

CliRun RunCommand(const std::string& command, int timeout_s) {
  char err_path[] = "/tmp/perf_cli_test_err_XXXXXX";
  const int fd = mkstemp(err_path);
  if (fd >= 0) close(fd);
  const std::string shell = "timeout -k 5 " + std::to_string(timeout_s) + " " + command + " 2>" + err_path;
  CliRun run;
  FILE* pipe = popen(shell.c_str(), "r");
  if (pipe == nullptr) return run;
  char buffer[4096];
  size_t got = 0;
  while ((got = fread(buffer, 1, sizeof(buffer), pipe)) > 0) run.out.append(buffer, got);
  const int status = pclose(pipe);
  run.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  run.err = ReadFile(err_path);
  unlink(err_path);
  return run;
}

std::string PerfBinary(const std::string& name) { return std::string(CHORUS_PERF_BIN_DIR) + "/" + name + "_perf"; }

CliRun RunPerf(const std::string& name, const std::string& args, int timeout_s) {
  return RunCommand(PerfBinary(name) + " " + args, timeout_s);
}

std::vector<std::string> Lines(const std::string& text) {
  std::vector<std::string> lines;
  std::stringstream stream(text);
  std::string line;
  while (std::getline(stream, line)) lines.push_back(line);
  return lines;
}

std::vector<std::string> Fields(const std::string& line) {
  std::vector<std::string> fields;
  std::stringstream stream(line);
  std::string field;
  while (stream >> field) fields.push_back(field);
  return fields;
}

std::vector<std::vector<std::string>> Rows(const std::string& out) {
  std::vector<std::vector<std::string>> rows;
  for (const std::string& line : Lines(out)) {
    if (!line.empty() && line[0] != '#') rows.push_back(Fields(line));
  }
  return rows;
}

}  // namespace chorus_perf_test
