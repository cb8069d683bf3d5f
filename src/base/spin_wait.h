// SpinThenYield: the first, bounded stage of a wait on another thread or
// process. Waking a sleeper costs microseconds (a futex syscall and a trip
// through the scheduler), more than a small collective takes, so a waiter
// first polls: a few microseconds of busy spinning, which wins when cores
// are idle, then sched_yield, which hands the core to whoever we wait for
// when ranks outnumber cores. Only then does the caller sleep.
//
// AdaptiveSpin remembers whether its spins pay off. A wait that is always
// long (a host stream's worker between the steps of a training loop, a
// synchronize issued while a 30 ms AllReduce runs) only burns CPU that other
// ranks on the same cores need, and each sched_yield is a syscall and often
// a context switch. After a few misses in a row it goes straight to sleep,
// spinning again on every kProbeEvery-th wait to notice when waits turn
// short again (back-to-back small collectives).
#pragma once

#include <sched.h>

#include <atomic>
#include <chrono>

namespace chorus {

struct SpinBudget {
  std::chrono::microseconds spin;         // busy polling with a CPU pause
  std::chrono::microseconds yield_until;  // then yielding the core, measured from the start
};

inline void CpuPause() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  asm volatile("yield");
#endif
}

// Returns true as soon as ready() holds, false when the budget ran out.
template <typename Ready>
bool SpinThenYield(const SpinBudget& budget, Ready&& ready) {
  using Clock = std::chrono::steady_clock;
  if (ready()) return true;
  const Clock::time_point start = Clock::now();
  for (;;) {
    // Reading the clock costs ~20 ns: poll a batch between readings.
    for (int i = 0; i < 16; ++i) {
      CpuPause();
      if (ready()) return true;
    }
    const Clock::duration waited = Clock::now() - start;
    if (waited >= budget.yield_until) return false;
    if (waited >= budget.spin) {
      ::sched_yield();
      if (ready()) return true;
    }
  }
}

// After this many waits in a row whose polling did not pay off, poll no
// more, except on every kProbeEvery-th wait.
constexpr unsigned kMissesBeforeSkipping = 4;
constexpr unsigned kProbeEvery = 16;

// The rule shared by AdaptiveSpin and the executor's idle polls: whether a
// wait that follows `misses` fruitless ones in a row should skip polling.
constexpr bool SkipPolling(unsigned misses) {
  return misses >= kMissesBeforeSkipping && (misses - kMissesBeforeSkipping) % kProbeEvery != kProbeEvery - 1;
}

class AdaptiveSpin {
 public:

  explicit constexpr AdaptiveSpin(SpinBudget budget) : budget_(budget) {}

  // SpinThenYield, or only one check of ready() while spinning does not pay.
  // Safe from several threads (the counters are a hint, never a guarantee).
  template <typename Ready>
  bool Wait(Ready&& ready) {
    const unsigned misses = misses_.load(std::memory_order_relaxed);
    if (SkipPolling(misses)) {
      misses_.store(misses + 1, std::memory_order_relaxed);
      return ready();
    }
    const bool paid = SpinThenYield(budget_, ready);
    misses_.store(paid ? 0 : misses + 1, std::memory_order_relaxed);
    return paid;
  }

  bool skipping() const { return misses_.load(std::memory_order_relaxed) >= kMissesBeforeSkipping; }

 private:
  SpinBudget budget_;
  std::atomic<unsigned> misses_{0};
};

}  // namespace chorus
