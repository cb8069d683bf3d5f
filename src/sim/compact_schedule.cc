#include "sim/compact_schedule.h"

#include <algorithm>
#include <utility>

namespace chorus::sim {

namespace {

bool IsTransfer(StepKind kind) {
  return kind == StepKind::kSend || kind == StepKind::kRecv || kind == StepKind::kRecvReduce;
}

bool SameStep(const CompactStep& a, const CompactStep& b) {
  return a.kind == b.kind && a.relative_peer == b.relative_peer && a.bytes == b.bytes && a.chunks == b.chunks &&
         a.first_chunk == b.first_chunk && a.send_ordinal == b.send_ordinal && a.channel == b.channel &&
         a.deps_begin == b.deps_begin && a.deps_end == b.deps_end &&
         a.dependents_begin == b.dependents_begin && a.dependents_end == b.dependents_end;
}

uint64_t Mix(uint64_t hash, uint64_t value) {
  hash ^= value + 0x9e3779b97f4a7c15ULL + (hash << 6) + (hash >> 2);
  return hash;
}

uint64_t HashOf(const CompactSchedule& schedule) {
  uint64_t hash = Mix(schedule.steps.size(), schedule.chunk_bytes);
  for (const CompactStep& step : schedule.steps) {
    hash = Mix(hash, static_cast<uint64_t>(step.kind) | (static_cast<uint64_t>(step.relative_peer) << 8));
    hash = Mix(hash, step.bytes);
    hash = Mix(hash, step.deps_end - step.deps_begin);
  }
  for (uint32_t dep : schedule.deps) hash = Mix(hash, dep);
  return hash;
}

}  // namespace

bool CompactSchedule::operator==(const CompactSchedule& other) const {
  if (steps.size() != other.steps.size() || deps != other.deps || chunk_bytes != other.chunk_bytes ||
      total_chunks != other.total_chunks) {
    return false;
  }
  for (size_t i = 0; i < steps.size(); ++i) {
    if (!SameStep(steps[i], other.steps[i])) return false;
  }
  // dependents and the channels follow from steps and deps.
  return true;
}

CompactSchedule Compact(const Schedule& schedule, int rank, int nranks, size_t chunk_bytes) {
  CompactSchedule out;
  const uint64_t element = std::max<size_t>(1, schedule.element_size);
  out.chunk_bytes = chunk_bytes == 0 ? 0 : std::max<uint64_t>(element, chunk_bytes / element * element);
  out.steps.resize(schedule.steps.size());

  std::vector<uint32_t> dependent_count(schedule.steps.size(), 0);
  std::unordered_map<int32_t, uint32_t> send_channel_of;
  std::vector<uint32_t> send_chunks;  // per send channel
  for (size_t i = 0; i < schedule.steps.size(); ++i) {
    const Step& step = schedule.steps[i];
    CompactStep& compact = out.steps[i];
    compact.kind = step.kind;
    compact.bytes = step.bytes;
    if (IsTransfer(step.kind)) {
      compact.relative_peer = ((step.peer - rank) % nranks + nranks) % nranks;
      if (step.kind == StepKind::kSend) {
        auto [it, added] = send_channel_of.emplace(compact.relative_peer, static_cast<uint32_t>(out.send_peers.size()));
        if (added) {
          out.send_peers.push_back(compact.relative_peer);
          send_chunks.push_back(0);
        }
        compact.channel = it->second;
      } else {
        auto [it, added] =
            out.recv_channel_of.emplace(compact.relative_peer, static_cast<uint32_t>(out.recv_channels.size()));
        if (added) out.recv_channels.push_back({compact.relative_peer, {}});
        compact.channel = it->second;
        out.recv_channels[it->second].steps.push_back(static_cast<uint32_t>(i));
      }
    }
    compact.chunks = out.chunk_bytes == 0 || step.bytes == 0
                         ? 1
                         : static_cast<uint32_t>((step.bytes + out.chunk_bytes - 1) / out.chunk_bytes);
    compact.first_chunk = out.total_chunks;
    if (step.kind == StepKind::kSend) {
      uint32_t& sent = send_chunks[compact.channel];
      compact.send_ordinal = sent;
      sent += compact.chunks;
    }
    out.total_chunks += compact.chunks;
    compact.deps_begin = static_cast<uint32_t>(out.deps.size());
    for (uint32_t dep : step.deps) {
      out.deps.push_back(dep);
      ++dependent_count[dep];
    }
    compact.deps_end = static_cast<uint32_t>(out.deps.size());
  }
  // Reverse edges, grouped per step in step order (counting sort).
  uint32_t offset = 0;
  for (size_t i = 0; i < out.steps.size(); ++i) {
    out.steps[i].dependents_begin = out.steps[i].dependents_end = offset;
    offset += dependent_count[i];
  }
  out.dependents.resize(offset);
  for (size_t i = 0; i < out.steps.size(); ++i) {
    for (uint32_t dep : schedule.steps[i].deps) {
      out.dependents[out.steps[dep].dependents_end++] = static_cast<uint32_t>(i);
    }
  }
  return out;
}

std::shared_ptr<const CompactSchedule> ScheduleInterner::Intern(CompactSchedule schedule) {
  auto& bucket = by_hash_[HashOf(schedule)];
  for (const auto& existing : bucket) {
    if (*existing == schedule) return existing;
  }
  bucket.push_back(std::make_shared<const CompactSchedule>(std::move(schedule)));
  ++size_;
  return bucket.back();
}

}  // namespace chorus::sim
