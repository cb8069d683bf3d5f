#include "transports/shm/shm_wait_policy.h"

#include <sched.h>

#include <cstring>

namespace chorus {
namespace shm {
namespace {

static_assert(sizeof(CpuMask) * 8 >= CPU_SETSIZE, "CpuMask must hold a cpu_set_t");

bool Empty(const CpuMask& mask) {
  for (uint64_t word : mask.words) {
    if (word != 0) return false;
  }
  return true;
}

// A mask that says nothing (a peer that could not read its own) may run anywhere.
CpuMask Effective(const CpuMask& mask) {
  if (!Empty(mask)) return mask;
  CpuMask all;
  for (uint64_t& word : all.words) word = ~uint64_t{0};
  return all;
}

// Every CPU of `inner` is in `outer`.
bool Within(const CpuMask& inner, const CpuMask& outer) {
  for (size_t i = 0; i < kCpuMaskWords; ++i) {
    if ((inner.words[i] & ~outer.words[i]) != 0) return false;
  }
  return true;
}

void Unite(const CpuMask& from, CpuMask* into) {
  for (size_t i = 0; i < kCpuMaskWords; ++i) into->words[i] |= from.words[i];
}

size_t Count(const CpuMask& mask) {
  size_t cpus = 0;
  for (uint64_t word : mask.words) cpus += static_cast<size_t>(__builtin_popcountll(word));
  return cpus;
}

}  // namespace

CpuMask CurrentCpuMask() {
  CpuMask mask;
  cpu_set_t set;
  CPU_ZERO(&set);
  if (::sched_getaffinity(0, sizeof(set), &set) != 0) return Effective(mask);
  for (size_t cpu = 0; cpu < CPU_SETSIZE; ++cpu) {
    if (CPU_ISSET(cpu, &set)) mask.words[cpu / 64] |= uint64_t{1} << (cpu % 64);
  }
  return mask;
}

bool RanksOutnumberCpus(const std::vector<CpuMask>& masks) {
  CpuMask all_cpus;
  for (const CpuMask& mask : masks) Unite(Effective(mask), &all_cpus);
  if (masks.size() > Count(all_cpus)) return true;
  // Hall's condition on the sets of ranks confined to one rank's CPUs.
  for (const CpuMask& outer : masks) {
    const CpuMask cpus = Effective(outer);
    size_t confined = 0;
    for (const CpuMask& inner : masks) confined += Within(Effective(inner), cpus);
    if (confined > Count(cpus)) return true;
  }
  return false;
}

}  // namespace shm
}  // namespace chorus
