#include "transports/cpu_sharing.h"

#include <sched.h>

#include <cstdio>
#include <cstdlib>

namespace chorus {
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

}  // namespace

size_t CpuCount(const CpuMask& mask) {
  size_t cpus = 0;
  for (uint64_t word : mask.words) cpus += static_cast<size_t>(__builtin_popcountll(word));
  return cpus;
}

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
  if (masks.size() > CpuCount(all_cpus)) return true;
  // Hall's condition on the sets of ranks confined to one rank's CPUs.
  for (const CpuMask& outer : masks) {
    const CpuMask cpus = Effective(outer);
    size_t confined = 0;
    for (const CpuMask& inner : masks) confined += Within(Effective(inner), cpus);
    if (confined > CpuCount(cpus)) return true;
  }
  return false;
}

std::string EncodeCpuMask(const CpuMask& mask) {
  size_t words = kCpuMaskWords;
  while (words > 0 && mask.words[words - 1] == 0) --words;
  std::string text;
  for (size_t i = 0; i < words; ++i) {
    char word[20];
    std::snprintf(word, sizeof(word), "%s%llx", i == 0 ? "" : ".", static_cast<unsigned long long>(mask.words[i]));
    text += word;
  }
  return text;
}

bool DecodeCpuMask(const std::string& text, CpuMask* mask) {
  *mask = CpuMask();
  if (text.empty()) return true;
  size_t word = 0, begin = 0;
  while (true) {
    const size_t end = text.find('.', begin);
    const std::string part = text.substr(begin, end == std::string::npos ? std::string::npos : end - begin);
    if (word == kCpuMaskWords || part.empty() || part.size() > 16 ||
        part.find_first_not_of("0123456789abcdef") != std::string::npos) {
      return false;
    }
    mask->words[word++] = std::strtoull(part.c_str(), nullptr, 16);
    if (end == std::string::npos) return true;
    begin = end + 1;
  }
}

}  // namespace chorus
