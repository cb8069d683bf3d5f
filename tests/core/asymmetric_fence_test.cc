// base/asymmetric_fence.h: with LightFence on one side and HeavyFence on the
// other, two threads (or processes) that each store a flag and then load the
// other's never both miss the other's store, round after round. Without
// any fence, x86 lets both loads pass their stores (store buffering) and
// such a loop sees it within thousands of rounds.
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "base/asymmetric_fence.h"

namespace chorus {
namespace {

constexpr int kRounds = 20000;

// Lives in memory both sides share (a MAP_SHARED mapping for processes).
struct Handshake {
  std::atomic<int> arrived[2];        // rounds each side reached
  std::atomic<int> flag[2][kRounds];  // a fresh pair of flags per round
  int saw_other[2][kRounds];          // what each side loaded
};

// One side of every round: meet the other at the round's start, store its
// flag, fence, load the other's.
void RunSide(Handshake& shake, int side, FenceScope scope) {
  const int other = 1 - side;
  for (int round = 0; round < kRounds; ++round) {
    shake.arrived[side].store(round + 1, std::memory_order_release);
    while (shake.arrived[other].load(std::memory_order_acquire) < round + 1) {
    }
    shake.flag[side][round].store(1, std::memory_order_relaxed);
    if (side == 0) {
      LightFence(scope);
    } else {
      HeavyFence(scope);
    }
    shake.saw_other[side][round] = shake.flag[other][round].load(std::memory_order_relaxed);
  }
}

int RoundsWhereBothMissed(const Handshake& shake) {
  int missed = 0;
  for (int round = 0; round < kRounds; ++round) missed += shake.saw_other[0][round] == 0 && shake.saw_other[1][round] == 0;
  return missed;
}

Handshake* MapShared() {
  void* memory = ::mmap(nullptr, sizeof(Handshake), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  return memory == MAP_FAILED ? nullptr : new (memory) Handshake();
}

TEST(AsymmetricFenceTest, TheDecisionIsMadeOncePerScope) {
  for (FenceScope scope : {FenceScope::kProcess, FenceScope::kHost}) {
    const bool first = LightFenceIsCompilerBarrier(scope);
    EXPECT_EQ(LightFenceIsCompilerBarrier(scope), first);
  }
}

TEST(AsymmetricFenceTest, ThreadsNeverBothMissTheOthersStore) {
  for (FenceScope scope : {FenceScope::kProcess, FenceScope::kHost}) {
    auto shake = std::make_unique<Handshake>();
    std::thread light([&] { RunSide(*shake, 0, scope); });
    RunSide(*shake, 1, scope);
    light.join();
    EXPECT_EQ(RoundsWhereBothMissed(*shake), 0) << "scope " << static_cast<int>(scope);
  }
}

TEST(AsymmetricFenceTest, ProcessesOfOneHostNeverBothMissTheOthersStore) {
  Handshake* shake = MapShared();
  ASSERT_NE(shake, nullptr);
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    LightFenceIsCompilerBarrier(FenceScope::kHost);  // as a board does when made
    RunSide(*shake, 0, FenceScope::kHost);
    ::_exit(0);
  }
  RunSide(*shake, 1, FenceScope::kHost);
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  EXPECT_EQ(RoundsWhereBothMissed(*shake), 0);
  ::munmap(shake, sizeof(Handshake));
}

TEST(AsymmetricFenceTest, AForkedChildsHeavyFenceReturns) {
  LightFenceIsCompilerBarrier(FenceScope::kProcess);  // the parent registered first
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    HeavyFence(FenceScope::kProcess);
    HeavyFence(FenceScope::kHost);
    ::_exit(0);
  }
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

}  // namespace
}  // namespace chorus
