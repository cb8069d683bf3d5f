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

// Cores shared by more ranks than they can run: one check, no spin, and the
// adaptive state is left as it was for the waits that do poll.
TEST(AdaptiveSpinTest, CoresSharedChecksOnceAndKeepsTheMissCount) {
  AdaptiveSpin spin(kBudget);
  for (int i = 0; i < 10; ++i) {
    int calls = 0;
    EXPECT_FALSE(spin.Wait(
        [&] {
          ++calls;
          return false;
        },
        /*cores_shared=*/true));
    EXPECT_EQ(calls, 1);
  }
  EXPECT_FALSE(spin.skipping());
  EXPECT_EQ(spin.polls(), 10u);
  EXPECT_GT(CallsOfAMiss(spin), 16) << "a dedicated-cores wait still spins";
}

TEST(SpinThenYieldTest, NoPollingChecksOnce) {
  int calls = 0;
  EXPECT_FALSE(SpinThenYield(kNoPolling, [&] {
    ++calls;
    return false;
  }));
  EXPECT_EQ(calls, 1);
}

// No spin budget but time to yield: it keeps checking (after each
// sched_yield) until the budget runs out.
TEST(SpinThenYieldTest, ZeroSpinOnlyYields) {
  int calls = 0;
  const auto start = std::chrono::steady_clock::now();
  EXPECT_FALSE(SpinThenYield(SpinBudget{std::chrono::microseconds(0), std::chrono::microseconds(200)}, [&] {
    ++calls;
    return false;
  }));
  EXPECT_GE(std::chrono::steady_clock::now() - start, std::chrono::microseconds(200));
  EXPECT_GE(calls, 2);
}

}  // namespace
}  // namespace chorus
