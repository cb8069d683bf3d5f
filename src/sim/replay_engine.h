// ReplayEngine: the event loop of the simulator (see simulator.h for the
// model). Local steps (copies, reductions, receive completions) resolve as
// soon as their inputs are known; only send chunks go through the event
// queue, so that transfers reserve ports in order of the time they are ready.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <queue>
#include <unordered_map>
#include <utility>
#include <vector>

#include "base/status.h"
#include "sim/cluster_model.h"
#include "sim/compact_schedule.h"
#include "sim/simulator.h"

namespace chorus::sim {

class ReplayEngine {
 public:
  // At most `max_inflight_per_peer` chunks (0: no limit) travel from one rank
  // to one peer at a time, as in the executor.
  ReplayEngine(const ClusterModel& cluster, std::vector<std::shared_ptr<const CompactSchedule>> schedules,
               int max_inflight_per_peer);

  // Runs every schedule to completion; fills the timing and traffic fields.
  Status Run(SimResult* result);

 private:
  struct RankState {
    const CompactSchedule* schedule = nullptr;
    std::vector<uint32_t> released;   // chunks whose dependencies are met
    std::vector<uint32_t> done;       // chunks with a known completion time
    std::vector<uint32_t> delivered;  // receive steps: chunks whose data arrived
    // Per chunk: completion time once done; for a receive chunk delivered but
    // not done, the delivery time.
    std::vector<double> times;
    double out_free = 0, in_free = 0, compute_free = 0;
    uint64_t sent = 0, received = 0;
  };
  struct HostState {
    double nic_out_free = 0, nic_in_free = 0;
    uint64_t nic_out_bytes = 0, nic_in_bytes = 0;
  };
  struct SendReady {
    double time;
    uint64_t sequence;  // ties break in release order, so chunks leave in order
    uint32_t rank, step, chunk;
    bool operator>(const SendReady& other) const {
      return time != other.time ? time > other.time : sequence > other.sequence;
    }
  };
  // The sender's side of a pair: chunks leave in step then chunk order (the
  // executor posts them so), and wait for a free slot of the in-flight window.
  struct SendChannel {
    uint64_t next = 0;             // ordinal of the next chunk to leave
    std::vector<double> delivered;  // delivery times of the last window chunks
    std::map<uint64_t, SendReady> parked;  // ready out of order
  };
  struct Channel {  // the receiver's next receive chunk from one sender
    uint32_t position = 0;  // into receives_by_peer
    uint32_t chunk = 0;
  };

  bool ChunkReady(const RankState& state, uint32_t step, uint32_t chunk, double* ready) const;
  void TryRelease(uint32_t rank, uint32_t step);
  void Release(uint32_t rank, uint32_t step, uint32_t chunk, double ready);
  void FinishReceive(uint32_t rank, uint32_t step, uint32_t chunk, double ready);
  void Complete(uint32_t rank, uint32_t step, uint32_t chunk, double time);
  double Reduce(RankState& state, double ready, uint64_t bytes);
  Status Transfer(const SendReady& send);
  void Drain();

  ClusterModel cluster_;
  std::vector<std::shared_ptr<const CompactSchedule>> schedules_;
  std::vector<RankState> ranks_;
  std::vector<HostState> hosts_;
  std::unordered_map<uint64_t, Channel> channels_;
  std::unordered_map<uint64_t, SendChannel> send_channels_;
  size_t window_ = 0;
  std::priority_queue<SendReady, std::vector<SendReady>, std::greater<>> queue_;
  std::vector<std::pair<uint32_t, uint32_t>> worklist_;  // (rank, step) to try to release
  uint64_t sequence_ = 0;
  double makespan_ = 0;
  uint64_t intra_bytes_ = 0, inter_bytes_ = 0, transfers_ = 0;
};

}  // namespace chorus::sim
