#include "perf/cli/progress.h"

#include <unistd.h>

#include <cstdio>

namespace chorus::perf {

ProgressLine::ProgressLine()
    : enabled_(isatty(STDOUT_FILENO) == 1 && isatty(STDERR_FILENO) == 1), start_(std::chrono::steady_clock::now()) {}

void ProgressLine::Show(const std::string& text) {
  if (!enabled_) return;
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  std::fprintf(stderr, "\r\033[K# %s (%.0f s)", text.c_str(), seconds);
  std::fflush(stderr);
  visible_ = true;
}

void ProgressLine::Clear() {
  if (!visible_) return;
  std::fprintf(stderr, "\r\033[K");
  std::fflush(stderr);
  visible_ = false;
}

}  // namespace chorus::perf
