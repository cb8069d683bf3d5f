// The progress bar's text (examples/trainer/progress_bar.h): bar cells,
// counts, rate, ETA, clamping; and that it stays silent off a terminal.
#include <gtest/gtest.h>

#include <cstdio>
#include <string>

#include "examples/trainer/progress_bar.h"

namespace trainer_test {
namespace {

using trainer::FormatDuration;
using trainer::FormatProgress;
using trainer::ProgressBar;
using trainer::ProgressSnapshot;

TEST(TrainerProgress, Durations) {
  EXPECT_EQ(FormatDuration(0), "0:00");
  EXPECT_EQ(FormatDuration(59.4), "0:59");
  EXPECT_EQ(FormatDuration(59.6), "1:00");
  EXPECT_EQ(FormatDuration(754), "12:34");
  EXPECT_EQ(FormatDuration(3600 + 62), "1:01:02");
  EXPECT_EQ(FormatDuration(-5), "0:00");
}

TEST(TrainerProgress, HalfWay) {
  // 250 of 1000 steps of 64 images in 10 s: 1600 img/s, 30 s to go.
  const ProgressSnapshot s{/*epoch=*/1, /*epochs=*/5, /*done=*/250, /*total=*/1000, /*elapsed=*/10.0, 64};
  EXPECT_EQ(FormatProgress(s, 8), "epoch 2/5 [##......] 250/1000  1600 img/s  ETA 0:30");
}

TEST(TrainerProgress, StartAndEnd) {
  ProgressSnapshot s{0, 1, 0, 937, 0.0, 64};
  EXPECT_EQ(FormatProgress(s, 4), "epoch 1/1 [....] 0/937  -- img/s  ETA --");
  s.done = 937;
  s.elapsed_seconds = 46.85;
  EXPECT_EQ(FormatProgress(s, 4), "epoch 1/1 [####] 937/937  1280 img/s  ETA 0:00");
}

TEST(TrainerProgress, ClampsOutOfRangeCounts) {
  const ProgressSnapshot over{0, 2, 12, 10, 2.0, 10};  // done > total: shown as total
  EXPECT_EQ(FormatProgress(over, 5), "epoch 1/2 [#####] 10/10  50 img/s  ETA 0:00");
  const ProgressSnapshot empty{0, 2, 0, 0, 0.0, 10};  // no steps: no division by zero
  EXPECT_EQ(FormatProgress(empty, 5), "epoch 1/2 [.....] 0/1  -- img/s  ETA --");
}

TEST(TrainerProgress, SilentWhenNotATerminal) {
  std::FILE* file = std::tmpfile();
  ASSERT_NE(file, nullptr);
  {
    ProgressBar bar(file);
    EXPECT_FALSE(bar.enabled());
    bar.StartEpoch(0, 1, 10, 8);
    for (int done = 1; done <= 10; ++done) bar.Update(done);
    bar.Clear();
  }
  EXPECT_EQ(std::ftell(file), 0L);
  std::fclose(file);
}

}  // namespace
}  // namespace trainer_test
