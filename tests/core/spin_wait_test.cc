// AdaptiveSpin: spins until spinning stops paying, then only probes.
#include "base/spin_wait.h"

#include <gtest/gtest.h>

namespace chorus {
namespace {

constexpr SpinBudget kBudget{std::chrono::microseconds(2), std::chrono::microseconds(50)};

// Number of ready() calls one Wait makes when ready() never holds.
int CallsOfAMiss(AdaptiveSpin& spin) {
  int calls = 0;
  EXPECT_FALSE(spin.Wait([&] {
    ++calls;
    return false;
  }));
  return calls;
}

TEST(AdaptiveSpinTest, StopsSpinningAfterMissesAndProbesPeriodically) {
  AdaptiveSpin spin(kBudget);
  for (unsigned i = 0; i < kMissesBeforeSkipping; ++i) {
    EXPECT_FALSE(spin.skipping());
    EXPECT_GT(CallsOfAMiss(spin), 16) << "wait " << i << " should spin";
  }
  EXPECT_TRUE(spin.skipping());
  for (unsigned i = 0; i + 1 < kProbeEvery; ++i) {
    EXPECT_EQ(CallsOfAMiss(spin), 1) << "wait " << i << " after the misses should only check once";
  }
  EXPECT_GT(CallsOfAMiss(spin), 16) << "every kProbeEvery-th wait spins again";
  EXPECT_EQ(CallsOfAMiss(spin), 1);
}

TEST(AdaptiveSpinTest, ASpinThatPaysResumesSpinning) {
  AdaptiveSpin spin(kBudget);
  while (!spin.skipping()) CallsOfAMiss(spin);
  // Skip until the probe, which now succeeds on its third check.
  int probe_calls = 0;
  while (probe_calls == 0) {
    int calls = 0;
    const bool ready = spin.Wait([&] { return ++calls >= 3; });
    if (calls > 1) {
      EXPECT_TRUE(ready);
      probe_calls = calls;
    } else {
      EXPECT_FALSE(ready);
    }
  }
  EXPECT_EQ(probe_calls, 3);
  EXPECT_FALSE(spin.skipping());
  EXPECT_GT(CallsOfAMiss(spin), 16);
}

TEST(AdaptiveSpinTest, ReadyAtOnceReturnsTrueInEveryState) {
  AdaptiveSpin spin(kBudget);
  EXPECT_TRUE(spin.Wait([] { return true; }));
  while (!spin.skipping()) CallsOfAMiss(spin);
  int calls = 0;
  EXPECT_TRUE(spin.Wait([&] {
    ++calls;
    return true;
  }));
  EXPECT_EQ(calls, 1);
}

}  // namespace
}  // namespace chorus
