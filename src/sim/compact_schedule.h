// CompactSchedule: what the simulator needs of one rank's Schedule (kinds,
// peers relative to the rank, lengths, dependencies both ways), in flat
// arrays. Peers are stored relative to the rank so that the ranks of a
// symmetric algorithm (ring, halving-doubling) share one copy: at 4096 ranks
// that is the difference between megabytes and gigabytes.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <unordered_map>
#include <vector>

#include "algorithms/schedule.h"

namespace chorus::sim {

struct CompactStep {
  StepKind kind = StepKind::kCopy;
  int32_t relative_peer = 0;  // (peer - rank) mod nranks for transfers
  uint64_t bytes = 0;
  uint32_t chunks = 1;        // at least 1, even for an empty step
  uint32_t first_chunk = 0;   // index of chunk 0 among all chunks of the schedule
  uint32_t send_ordinal = 0;  // sends: chunk 0's position among chunks sent to this peer
  uint32_t channel = 0;       // sends: index into send_peers; receives: into recv_channels
  uint32_t deps_begin = 0, deps_end = 0;              // into CompactSchedule::deps
  uint32_t dependents_begin = 0, dependents_end = 0;  // into CompactSchedule::dependents
};

struct CompactSchedule {
  std::vector<CompactStep> steps;
  std::vector<uint32_t> deps;
  std::vector<uint32_t> dependents;
  uint32_t total_chunks = 0;
  uint64_t chunk_bytes = 0;  // 0: one chunk per step
  // The relative peers this rank sends to, in order of first send.
  std::vector<int32_t> send_peers;
  // Receive steps from each relative peer, in step order (per-pair FIFO).
  struct RecvChannel {
    int32_t relative_peer = 0;
    std::vector<uint32_t> steps;
  };
  std::vector<RecvChannel> recv_channels;
  std::unordered_map<int32_t, uint32_t> recv_channel_of;  // relative peer -> index

  uint64_t ChunkBytes(const CompactStep& step, uint32_t chunk) const {
    if (chunk_bytes == 0 || step.chunks == 1) return step.bytes;
    const uint64_t begin = static_cast<uint64_t>(chunk) * chunk_bytes;
    return step.bytes - begin < chunk_bytes ? step.bytes - begin : chunk_bytes;
  }
  bool operator==(const CompactSchedule& other) const;
};

// Compacts `schedule` of `rank` among `nranks`, cutting steps into chunks of
// `chunk_bytes` rounded down to the element size (0: whole steps).
CompactSchedule Compact(const Schedule& schedule, int rank, int nranks, size_t chunk_bytes);

// Shares equal compact schedules between ranks.
class ScheduleInterner {
 public:
  std::shared_ptr<const CompactSchedule> Intern(CompactSchedule schedule);
  size_t distinct() const { return size_; }

 private:
  std::unordered_map<uint64_t, std::vector<std::shared_ptr<const CompactSchedule>>> by_hash_;
  size_t size_ = 0;
};

}  // namespace chorus::sim
