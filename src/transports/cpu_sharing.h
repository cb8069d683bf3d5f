// Whether the ranks of one host can all run at once: each rank's CPU
// affinity, and the rule that decides from all of them alike on every rank
// (the shm segment header and the UCX address carry a rank's mask). Where
// they cannot, a waiting thread must not spin: the rank it waits for needs
// the core (TransportCapabilities::shares_cores).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace chorus {

// CPU_SETSIZE bits, as sched_getaffinity fills them.
constexpr size_t kCpuMaskWords = 16;
struct CpuMask {
  uint64_t words[kCpuMaskWords] = {};
};

// This process's (calling thread's) affinity; all CPUs set if it cannot be read.
CpuMask CurrentCpuMask();

// The CPUs set in `mask`.
size_t CpuCount(const CpuMask& mask);

// True when the ranks of one host (one affinity mask each) cannot all run
// at once: all of them outnumber the CPUs in the union of their masks, or
// the ranks confined to some rank's CPUs outnumber those CPUs (two ranks
// pinned to one core). A necessary check of Hall's condition, cheap and
// the same on every rank, so all ranks of a host choose alike. A mask with
// no CPU (a peer that could not say) counts as every CPU.
bool RanksOutnumberCpus(const std::vector<CpuMask>& masks);

// A mask as text: its words in hex, lowest first, separated by '.', up to
// the last non-zero one ("3" for CPUs 0 and 1; "" for no CPU).
std::string EncodeCpuMask(const CpuMask& mask);
// False for text that EncodeCpuMask cannot have written.
bool DecodeCpuMask(const std::string& text, CpuMask* mask);

}  // namespace chorus
