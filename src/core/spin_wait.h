// SpinThenYield: the first, bounded stage of a wait on another thread or
// process. Waking a sleeper costs microseconds (a futex syscall and a trip
// through the scheduler), more than a small collective takes, so a waiter
// first polls: a few microseconds of busy spinning, which wins when cores
// are idle, then sched_yield, which hands the core to whoever we wait for
// when ranks outnumber cores. Only then does the caller sleep.
#pragma once

#include <sched.h>

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

}  // namespace chorus
