// A one-line progress indicator on stderr for long sweeps, shown only when
// stdout is a terminal (never in captured or piped output), erased before
// each result row and at the end.
#pragma once

#include <chrono>
#include <string>

namespace chorus::perf {

class ProgressLine {
 public:
  ProgressLine();
  ~ProgressLine() { Clear(); }
  ProgressLine(const ProgressLine&) = delete;
  ProgressLine& operator=(const ProgressLine&) = delete;

  // Replaces the line with `text` plus the time since construction.
  void Show(const std::string& text);
  void Clear();

 private:
  bool enabled_;
  bool visible_ = false;
  std::chrono::steady_clock::time_point start_;
};

}  // namespace chorus::perf
