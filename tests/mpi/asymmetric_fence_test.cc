// interpose/mpi/asymmetric_fence.h: with LightFence on one side and
// HeavyFence on the other, two threads that each store a flag and then load
// the other's never both miss the other's store, round after round. Without
// any fence, x86 lets both loads pass their stores (store buffering) and
// such a loop sees it within thousands of rounds.
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "interpose/mpi/asymmetric_fence.h"

namespace chorus_mpi {
namespace {

constexpr int kRounds = 20000;

struct Handshake {
  std::atomic<int> arrived[2];        // rounds each side reached
  std::atomic<int> flag[2][kRounds];  // a fresh pair of flags per round
  int saw_other[2][kRounds];          // what each side loaded
};

// One side of every round: meet the other at the round's start, store its
// flag, fence, load the other's.
void RunSide(Handshake& shake, int side) {
  const int other = 1 - side;
  for (int round = 0; round < kRounds; ++round) {
    shake.arrived[side].store(round + 1, std::memory_order_release);
    while (shake.arrived[other].load(std::memory_order_acquire) < round + 1) {
    }
    shake.flag[side][round].store(1, std::memory_order_relaxed);
    if (side == 0) {
      LightFence();
    } else {
      HeavyFence();
    }
    shake.saw_other[side][round] = shake.flag[other][round].load(std::memory_order_relaxed);
  }
}

int RoundsWhereBothMissed(const Handshake& shake) {
  int missed = 0;
  for (int round = 0; round < kRounds; ++round) missed += shake.saw_other[0][round] == 0 && shake.saw_other[1][round] == 0;
  return missed;
}

TEST(AsymmetricFenceTest, TheDecisionIsMadeOnce) {
  const bool first = LightFenceIsCompilerBarrier();
  EXPECT_EQ(LightFenceIsCompilerBarrier(), first);
}

TEST(AsymmetricFenceTest, ThreadsNeverBothMissTheOthersStore) {
  auto shake = std::make_unique<Handshake>();
  std::thread light([&] { RunSide(*shake, 0); });
  RunSide(*shake, 1);
  light.join();
  EXPECT_EQ(RoundsWhereBothMissed(*shake), 0);
}

TEST(AsymmetricFenceTest, AForkedChildsHeavyFenceReturns) {
  LightFenceIsCompilerBarrier();  // the parent registered first
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    HeavyFence();
    ::_exit(0);
  }
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

}  // namespace
}  // namespace chorus_mpi
