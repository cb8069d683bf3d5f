// How a shm waiter waits: for how long it busy-spins, then yields, before
// it sleeps on its futex, and whether an idle poll yields the core.
//
// Spinning wins while every rank has a core: the peer we wait for is running
// and answers within microseconds. When ranks outnumber the CPUs they may run
// on, the peer we wait for is often not running at all, and every
// microsecond we spin is a microsecond it cannot have; then the waiter yields
// at once (what Open MPI does when it detects oversubscription,
// mpi_yield_when_idle). The decision is taken at Connect from the CPU
// affinity masks every local rank publishes in its segment header
// (transports/cpu_sharing.h).
#pragma once

#include <chrono>

#include "base/spin_wait.h"
#include "transports/cpu_sharing.h"

namespace chorus {
namespace shm {

struct WaitPolicy {
  SpinBudget budget;     // from the start of a wait: busy polling, then sched_yield
  bool yield_when_idle;  // Progress(0) that found nothing yields the core; the
                         // transport's shares_cores, so core waits stop polling too
};

// Cores to spare: spin ~10 us, yield up to 100 us, then sleep.
constexpr WaitPolicy kDedicatedCoresPolicy = {{std::chrono::microseconds(10), std::chrono::microseconds(100)}, false};
// Ranks outnumber CPUs: never spin, yield on every idle poll and up to
// 20 us into a wait, then sleep (4 processes on 2 cores: an 8 B allreduce
// 81 -> 11 us, mostly from the idle-poll yield; sleeping after 20 us rather
// than 100 us freed the core sooner for 32-256 KiB; docs/design-notes.md).
constexpr WaitPolicy kSharedCoresPolicy = {{std::chrono::microseconds(0), std::chrono::microseconds(20)}, true};

}  // namespace shm
}  // namespace chorus
