#include "examples/trainer/progress_bar.h"

#include <unistd.h>

#include <algorithm>
#include <cmath>

namespace trainer {

std::string FormatDuration(double seconds) {
  const long total = std::max(0l, std::lround(seconds));
  char text[32];
  if (total >= 3600) {
    std::snprintf(text, sizeof(text), "%ld:%02ld:%02ld", total / 3600, total / 60 % 60, total % 60);
  } else {
    std::snprintf(text, sizeof(text), "%ld:%02ld", total / 60, total % 60);
  }
  return text;
}

std::string FormatProgress(const ProgressSnapshot& s, int bar_width) {
  const int total = std::max(1, s.total);
  const int done = std::clamp(s.done, 0, total);
  const int filled = static_cast<int>(static_cast<long long>(bar_width) * done / total);
  std::string line = "epoch " + std::to_string(s.epoch + 1) + "/" + std::to_string(s.epochs) + " [";
  line.append(filled, '#');
  line.append(bar_width - filled, '.');
  line += "] " + std::to_string(done) + "/" + std::to_string(total);
  if (done == 0 || s.elapsed_seconds <= 0) return line + "  -- img/s  ETA --";
  char rate[32];
  std::snprintf(rate, sizeof(rate), "  %.0f img/s", done * static_cast<double>(s.images_per_step) / s.elapsed_seconds);
  const double remaining = s.elapsed_seconds / done * (total - done);
  return line + rate + "  ETA " + FormatDuration(remaining);
}

ProgressBar::ProgressBar(std::FILE* stream) : stream_(stream), enabled_(isatty(fileno(stream)) == 1) {}

void ProgressBar::StartEpoch(int epoch, int epochs, int total_steps, int images_per_step) {
  snapshot_ = ProgressSnapshot{epoch, epochs, 0, total_steps, 0.0, images_per_step};
  epoch_start_ = Clock::now();
  last_draw_ = Clock::time_point{};
}

void ProgressBar::Update(int steps_done) {
  if (!enabled_) return;
  const Clock::time_point now = Clock::now();
  if (steps_done < snapshot_.total && now - last_draw_ < std::chrono::milliseconds(100)) return;
  last_draw_ = now;
  snapshot_.done = steps_done;
  snapshot_.elapsed_seconds = std::chrono::duration<double>(now - epoch_start_).count();
  std::fprintf(stream_, "\r%s\033[K", FormatProgress(snapshot_).c_str());
  std::fflush(stream_);
  drawn_ = true;
}

void ProgressBar::Clear() {
  if (!drawn_) return;
  std::fputs("\r\033[K", stream_);
  std::fflush(stream_);
  drawn_ = false;
}

}  // namespace trainer
