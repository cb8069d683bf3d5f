// How a shm waiter waits: for how long it busy-spins, then yields, before
// it sleeps on its futex, and whether an idle poll yields the core.
//
// Spinning wins while every rank has a core: the peer we wait for is running
// and answers within microseconds. When ranks outnumber the CPUs they may run
// on, the peer we wait for is often not running at all, and every
// microsecond we spin is a microsecond it cannot have; then the waiter yields
// at once (what Open MPI does when it detects oversubscription,
// mpi_yield_when_idle). The decision is taken at Connect from the CPU
// affinity masks every local rank publishes in its segment header.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "base/spin_wait.h"

namespace chorus {
namespace shm {

// CPU_SETSIZE bits, as sched_getaffinity fills them.
constexpr size_t kCpuMaskWords = 16;
struct CpuMask {
  uint64_t words[kCpuMaskWords] = {};
};

// This process's (calling thread's) affinity; all CPUs set if it cannot be read.
CpuMask CurrentCpuMask();

// True when the ranks of one host (one affinity mask each) cannot all run
// at once: all of them outnumber the CPUs in the union of their masks, or
// the ranks confined to some rank's CPUs outnumber those CPUs (two ranks
// pinned to one core). A necessary check of Hall's condition, cheap and
// the same on every rank, so all ranks of a host choose alike. A mask with
// no CPU (a peer that could not say) counts as every CPU.
bool RanksOutnumberCpus(const std::vector<CpuMask>& masks);

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
// than 100 us freed the core sooner for 32-256 KiB; docs/performance.md).
constexpr WaitPolicy kSharedCoresPolicy = {{std::chrono::microseconds(0), std::chrono::microseconds(20)}, true};

}  // namespace shm
}  // namespace chorus
