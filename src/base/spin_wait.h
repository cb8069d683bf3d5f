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
//
// Where the ranks of a host outnumber its CPUs (the transport says so:
// TransportCapabilities::shares_cores) the thread we wait for is often not
// running, and every microsecond we poll is one it cannot have: such waits
// do not poll at all (kNoPolling, AdaptiveSpin::Wait's cores_shared), they
// check once and sleep, as Open MPI's mpi_yield_when_idle does.
#pragma once

#include <sched.h>

#include <atomic>
#include <chrono>
#include <cstdint>

namespace chorus {

struct SpinBudget {
  std::chrono::microseconds spin;         // busy polling with a CPU pause
  std::chrono::microseconds yield_until;  // then yielding the core, measured from the start
};

// One check of ready(), then the caller sleeps: for cores shared by more
// ranks than they can run.
constexpr SpinBudget kNoPolling{std::chrono::microseconds(0), std::chrono::microseconds(0)};

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
  if (budget.yield_until.count() <= 0) return false;
  const Clock::time_point start = Clock::now();
  const bool spins = budget.spin.count() > 0;  // no spin: only yield, never burn the core
  for (;;) {
    // Reading the clock costs ~20 ns: poll a batch between readings.
    for (int i = 0; spins && i < 16; ++i) {
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

  // SpinThenYield, or only one check of ready() while spinning does not pay
  // or when `cores_shared` (more ranks than CPUs: polling only delays the
  // thread we wait for; such waits leave the miss count alone).
  // Safe from several threads (the counters are a hint, never a guarantee).
  template <typename Ready>
  bool Wait(Ready&& ready, bool cores_shared = false) {
    unsigned calls = 0;
    auto counted = [&] {
      ++calls;
      return ready();
    };
    const unsigned misses = misses_.load(std::memory_order_relaxed);
    bool done;
    if (cores_shared) {
      done = counted();
    } else if (SkipPolling(misses)) {
      misses_.store(misses + 1, std::memory_order_relaxed);
      done = counted();
    } else {
      done = SpinThenYield(budget_, counted);
      misses_.store(done ? 0 : misses + 1, std::memory_order_relaxed);
    }
    polls_.fetch_add(calls, std::memory_order_relaxed);
    return done;
  }

  bool skipping() const { return misses_.load(std::memory_order_relaxed) >= kMissesBeforeSkipping; }
  // ready() calls made by all waits so far (tests, diagnostics).
  uint64_t polls() const { return polls_.load(std::memory_order_relaxed); }

 private:
  SpinBudget budget_;
  std::atomic<unsigned> misses_{0};
  std::atomic<uint64_t> polls_{0};
};

}  // namespace chorus
