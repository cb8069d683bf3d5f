#include "schedule_checker.h"

#include <cstdint>
#include <sstream>

namespace chorus::testing {

namespace {

constexpr int kUserSpace = 0;     // real addresses: aliased user buffers overlap here
constexpr int kScratchSpace = 1;  // offsets into the rank's scratch

struct Access {
  int space = kUserSpace;
  uint64_t begin = 0;
  uint64_t end = 0;
  bool write = false;
};

bool IsMessage(StepKind kind) {
  return kind == StepKind::kSend || kind == StepKind::kRecv || kind == StepKind::kRecvReduce;
}

std::string StepLine(const Schedule& schedule, size_t index) {
  std::istringstream lines(DescribeSchedule(schedule));
  std::string line;
  for (size_t i = 0; i <= index + 1 && std::getline(lines, line); ++i) {
  }
  return line;
}

std::string Fail(int rank, const Schedule& schedule, const std::string& what) {
  std::ostringstream out;
  out << "rank " << rank << ": " << what << "\n" << DescribeSchedule(schedule);
  return out.str();
}

// Resolves one range; returns an error text or "".
std::string Resolve(const RankMemory& memory, const Schedule& schedule, BufferRange range, size_t bytes, bool write,
                    Access* out) {
  const uint8_t* base = nullptr;
  size_t size = 0;
  switch (range.buffer) {
    case BufferId::kSend:
      base = memory.send;
      size = memory.send_bytes;
      break;
    case BufferId::kRecv:
      base = memory.recv;
      size = memory.recv_bytes;
      break;
    case BufferId::kScratch:
      size = schedule.scratch_bytes;
      break;
  }
  if (range.buffer != BufferId::kScratch && base == nullptr) {
    return range.buffer == BufferId::kSend ? "touches the unbound send buffer" : "touches the unbound recv buffer";
  }
  if (range.offset > size || bytes > size - range.offset) {
    std::ostringstream text;
    text << "range [" << range.offset << ", +" << bytes << ") exceeds its buffer of " << size << " bytes";
    return text.str();
  }
  out->space = range.buffer == BufferId::kScratch ? kScratchSpace : kUserSpace;
  out->begin = (range.buffer == BufferId::kScratch ? 0 : reinterpret_cast<uintptr_t>(base)) + range.offset;
  out->end = out->begin + bytes;
  out->write = write;
  if (write && out->space == kUserSpace) {
    const auto recv_begin = reinterpret_cast<uintptr_t>(memory.recv);
    if (memory.recv == nullptr || out->begin < recv_begin || out->end > recv_begin + memory.recv_bytes) {
      return "writes outside the receive buffer (the send buffer is const)";
    }
  }
  return "";
}

std::string StepAccesses(const RankMemory& memory, const Schedule& schedule, const Step& step,
                         std::vector<Access>* accesses) {
  accesses->clear();
  auto add = [&](BufferRange range, bool write) {
    Access access;
    std::string error = Resolve(memory, schedule, range, step.bytes, write, &access);
    accesses->push_back(access);
    return error;
  };
  std::string error;
  if (step.kind != StepKind::kRecv && error.empty()) error = add(step.src, false);
  if (step.kind == StepKind::kReduce && error.empty()) error = add(step.src2, false);
  if (step.kind != StepKind::kSend && error.empty()) error = add(step.dst, true);
  return error;
}

bool Overlap(const Access& a, const Access& b) { return a.space == b.space && a.begin < b.end && b.begin < a.end; }

std::string CheckWellFormed(int rank, int nranks, const Schedule& schedule, const RankMemory& memory,
                            std::vector<std::vector<Access>>* accesses) {
  const size_t es = schedule.element_size;
  if (es == 0 || es != DataTypeSize(schedule.dtype)) {
    return Fail(rank, schedule, "element_size does not match dtype");
  }
  accesses->assign(schedule.steps.size(), {});
  for (size_t i = 0; i < schedule.steps.size(); ++i) {
    const Step& step = schedule.steps[i];
    auto fail = [&](const std::string& what) { return Fail(rank, schedule, "step " + std::to_string(i) + " " + what); };
    if (step.bytes == 0) return fail("moves zero bytes");
    if (step.bytes % es || step.src.offset % es || step.src2.offset % es || step.dst.offset % es) {
      return fail("is not aligned to the element size");
    }
    if (IsMessage(step.kind) && (step.peer < 0 || step.peer >= nranks || step.peer == rank)) {
      return fail("has an invalid peer " + std::to_string(step.peer));
    }
    for (uint32_t dep : step.deps) {
      if (dep >= i) return fail("depends on a later step " + std::to_string(dep));
    }
    std::string error = StepAccesses(memory, schedule, step, &(*accesses)[i]);
    if (!error.empty()) return fail(error);
    const std::vector<Access>& mine = (*accesses)[i];
    const Access& dst = mine.back();
    for (size_t j = 0; j + 1 < mine.size(); ++j) {
      if (Overlap(mine[j], dst) && mine[j].begin != dst.begin) {
        return fail("reads and writes partially overlapping ranges");
      }
    }
  }
  return "";
}

// Reachability through dependency paths: `equal` holds steps reached along
// equal-length (prefix) dependencies only, `full` those reached through at
// least one dependency of another length, i.e. waited for completely.
struct Reach {
  std::vector<std::vector<uint64_t>> equal;
  std::vector<std::vector<uint64_t>> full;
};

Reach ComputeReach(const Schedule& schedule) {
  const size_t n = schedule.steps.size();
  const size_t words = (n + 63) / 64;
  Reach reach;
  reach.equal.assign(n, std::vector<uint64_t>(words, 0));
  reach.full.assign(n, std::vector<uint64_t>(words, 0));
  for (size_t s = 0; s < n; ++s) {
    for (uint32_t d : schedule.steps[s].deps) {
      const bool prefix = schedule.steps[d].bytes == schedule.steps[s].bytes;
      for (size_t w = 0; w < words; ++w) {
        reach.full[s][w] |= reach.full[d][w];
        (prefix ? reach.equal : reach.full)[s][w] |= reach.equal[d][w];
      }
      (prefix ? reach.equal : reach.full)[s][d / 64] |= uint64_t{1} << (d % 64);
    }
  }
  return reach;
}

bool Has(const std::vector<uint64_t>& bits, size_t index) { return (bits[index / 64] >> (index % 64)) & 1; }

std::string CheckHazards(int rank, const Schedule& schedule, const std::vector<std::vector<Access>>& accesses) {
  const Reach reach = ComputeReach(schedule);
  for (size_t s = 0; s < schedule.steps.size(); ++s) {
    for (size_t t = 0; t < s; ++t) {
      if (Has(reach.full[s], t)) continue;
      const bool prefix_only = Has(reach.equal[s], t);
      for (const Access& a : accesses[s]) {
        for (const Access& b : accesses[t]) {
          if (!Overlap(a, b) || !(a.write || b.write)) continue;
          // A prefix path covers chunk k of s only if the conflicting bytes
          // sit no later within t than within s.
          if (prefix_only && a.begin <= b.begin) continue;
          std::ostringstream what;
          what << (prefix_only ? "only a prefix dependency orders" : "no dependency orders") << " conflicting steps ("
               << (b.write ? "write" : "read") << " then " << (a.write ? "write" : "read") << "):\n  "
               << StepLine(schedule, t) << "\n  " << StepLine(schedule, s);
          return Fail(rank, schedule, what.str());
        }
      }
    }
  }
  return "";
}

std::string CheckMessageMatching(const std::vector<Schedule>& schedules) {
  const size_t p = schedules.size();
  // lengths[from * p + to]: the message lengths as sender and as receiver.
  std::vector<std::vector<size_t>> sent(p * p);
  std::vector<std::vector<size_t>> received(p * p);
  for (size_t r = 0; r < p; ++r) {
    for (const Step& step : schedules[r].steps) {
      if (step.kind == StepKind::kSend) sent[r * p + step.peer].push_back(step.bytes);
      if (step.kind == StepKind::kRecv || step.kind == StepKind::kRecvReduce) {
        received[step.peer * p + r].push_back(step.bytes);
      }
    }
  }
  for (size_t from = 0; from < p; ++from) {
    for (size_t to = 0; to < p; ++to) {
      const auto& a = sent[from * p + to];
      const auto& b = received[from * p + to];
      if (a == b) continue;
      std::ostringstream what;
      what << "messages " << from << " -> " << to << " do not match: " << a.size() << " sends vs " << b.size()
           << " receives";
      for (size_t k = 0; k < a.size() && k < b.size(); ++k) {
        if (a[k] != b[k]) {
          what << "; message " << k << " is " << a[k] << " bytes sent but " << b[k] << " bytes received";
          break;
        }
      }
      what << "\nsender:\n" << DescribeSchedule(schedules[from]) << "receiver:\n" << DescribeSchedule(schedules[to]);
      return what.str();
    }
  }
  return "";
}

}  // namespace

std::string CheckSchedules(const std::vector<Schedule>& schedules, const std::vector<RankMemory>& memory) {
  const int p = static_cast<int>(schedules.size());
  std::vector<std::vector<Access>> accesses;
  for (int r = 0; r < p; ++r) {
    std::string error = CheckWellFormed(r, p, schedules[r], memory[r], &accesses);
    if (error.empty()) error = CheckHazards(r, schedules[r], accesses);
    if (!error.empty()) return error;
  }
  return CheckMessageMatching(schedules);
}

}  // namespace chorus::testing
