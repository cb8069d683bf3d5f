// ProgressBar: one self-overwriting line on a terminal per epoch (steps done
// of the epoch, images/s, ETA). Draws nothing when the stream is not a
// terminal, so logs and CSV-driven runs stay clean.
#pragma once

#include <chrono>
#include <cstdio>
#include <string>

namespace trainer {

struct ProgressSnapshot {
  int epoch = 0;  // 0-based
  int epochs = 1;
  int done = 0;   // steps finished in this epoch
  int total = 1;  // steps in the epoch
  double elapsed_seconds = 0.0;  // since the epoch started
  int images_per_step = 0;       // global batch
};

// "epoch 2/5 [#######.............] 312/937  1316 img/s  ETA 0:28" with a
// bar of `bar_width` cells; rate and ETA are "--" until a step is done.
std::string FormatProgress(const ProgressSnapshot& snapshot, int bar_width = 24);
// Seconds as m:ss, or h:mm:ss from an hour on.
std::string FormatDuration(double seconds);

class ProgressBar {
 public:
  // Enabled only when `stream` is a terminal (isatty).
  explicit ProgressBar(std::FILE* stream);
  ProgressBar(const ProgressBar&) = delete;
  ProgressBar& operator=(const ProgressBar&) = delete;
  ~ProgressBar() { Clear(); }

  bool enabled() const { return enabled_; }
  void StartEpoch(int epoch, int epochs, int total_steps, int images_per_step);
  // Redraws at most every 100 ms, and always at the last step.
  void Update(int steps_done);
  // Erases the line (before the epoch's row is printed).
  void Clear();

 private:
  using Clock = std::chrono::steady_clock;
  std::FILE* stream_;
  bool enabled_;
  bool drawn_ = false;
  ProgressSnapshot snapshot_;
  Clock::time_point epoch_start_;
  Clock::time_point last_draw_;
};

}  // namespace trainer
