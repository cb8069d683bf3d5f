// ReplayEngine: the event loop of the simulator (see simulator.h for the
// model). Time advances from event to event (a transmission ends, a message
// is delivered, a reduction ends); at each time every step chunk whose
// inputs are known is released at once, and then the FlowNetwork shares the
// ports among the transmissions in progress.
//
// Symmetry: the engine may replay a quotient of the cluster. With
// `schedules.size()` = s < nranks, simulated rank i stands for every real
// rank congruent to i mod s (all of which run the same schedule relative to
// themselves, on hosts that look alike); a message to real rank q goes to
// simulated rank q mod s. Because a symmetric system stays symmetric, this
// is exact, and the totals are scaled by nranks / s.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <queue>
#include <vector>

#include "base/status.h"
#include "model/cluster_model.h"
#include "sim/compact_schedule.h"
#include "sim/flow_network.h"
#include "sim/simulator.h"

namespace chorus::sim {

class ReplayEngine {
 public:
  // `schedules` holds one schedule per simulated rank: nranks of them, or a
  // quotient (s of them with s = 1, or s = ranks_per_host when there are
  // several hosts; the caller checks that every rank's schedule equals that
  // of its representative). At most `max_inflight_per_peer` chunks (0: no
  // limit) travel from one rank to one peer at a time, as in the executor.
  ReplayEngine(const ClusterModel& cluster, int nranks, std::vector<std::shared_ptr<const CompactSchedule>> schedules,
               int max_inflight_per_peer);

  // Runs every schedule to completion; fills the timing and traffic fields.
  Status Run(SimResult* result);

 private:
  struct ChunkRef {
    uint32_t step, chunk;
  };
  struct InFlight {
    ChunkRef send, receive;
  };
  // One ordered stream from a rank to one peer (one connection): its chunks
  // are transmitted one after the other, in the order the executor posts
  // them (step, then chunk), at most `window_` of them undelivered.
  struct Pair {
    uint32_t rank = 0;       // sender (simulated)
    uint32_t peer = 0;       // receiver (simulated)
    int32_t relative = 0;    // real peer - real rank, mod nranks
    uint32_t receive_channel = UINT32_MAX;  // the receiver's channel from us
    bool inter = false;      // crosses between hosts
    uint32_t ports[FlowNetwork::kMaxPorts] = {};
    int nports = 0;
    bool transmitting = false;
    uint64_t next = 0;       // ordinal of the next chunk to transmit
    uint64_t delivered = 0;  // chunks delivered
    std::map<uint64_t, ChunkRef> ready;  // released, by ordinal
    std::vector<InFlight> in_flight;     // transmitted, not delivered
    size_t in_flight_head = 0;
  };
  struct Cursor {  // the receiver's next receive chunk on one channel
    uint32_t position = 0;  // into the channel's steps
    uint32_t chunk = 0;
  };
  struct RankState {
    const CompactSchedule* schedule = nullptr;
    std::vector<uint32_t> released;   // per step: chunks whose dependencies are met
    std::vector<uint32_t> done;       // per step: chunks done (a prefix)
    std::vector<uint32_t> delivered;  // per receive step: chunks whose data arrived
    std::vector<uint8_t> chunk_done;  // per chunk of the schedule
    std::vector<Cursor> cursors;      // per receive channel
    uint32_t first_pair = 0;          // pairs_[first_pair + send channel]
    double compute_free = 0;
    uint64_t sent = 0, received = 0;
  };
  struct HostState {
    uint64_t nic_out_bytes = 0, nic_in_bytes = 0;
  };
  enum class EventKind : uint8_t { kFlowEnd, kDeliver, kComputeDone };
  struct Event {
    double time;
    uint64_t sequence;  // equal times: first pushed, first processed
    EventKind kind;
    uint32_t a, b, c;
    bool operator>(const Event& other) const {
      return time != other.time ? time > other.time : sequence > other.sequence;
    }
  };

  Status BuildPairs();
  bool ChunkReady(const RankState& state, uint32_t step, uint32_t chunk) const;
  void TryRelease(uint32_t rank, uint32_t step);
  void Release(uint32_t rank, uint32_t step, uint32_t chunk);
  void FinishReceive(uint32_t rank, uint32_t step, uint32_t chunk);
  void Compute(uint32_t rank, uint32_t step, uint32_t chunk, uint64_t bytes);
  void Complete(uint32_t rank, uint32_t step, uint32_t chunk);
  void TryTransmit(uint32_t pair);
  void Deliver(uint32_t pair);
  void Process(const Event& event);
  void Push(double time, EventKind kind, uint32_t a, uint32_t b = 0, uint32_t c = 0);
  void Drain();
  void Fail(Status status);

  ClusterModel cluster_;
  int nranks_ = 0;  // real ranks
  int sim_hosts_ = 1;
  std::vector<std::shared_ptr<const CompactSchedule>> schedules_;
  std::vector<RankState> ranks_;
  std::vector<HostState> hosts_;
  std::vector<Pair> pairs_;
  std::vector<uint32_t> flow_pair_;  // flow id -> pair
  FlowNetwork network_;
  std::vector<FlowNetwork::FinishTime> changed_;
  size_t window_ = 0;
  std::priority_queue<Event, std::vector<Event>, std::greater<>> queue_;
  std::vector<std::pair<uint32_t, uint32_t>> worklist_;  // (rank, step) to try to release
  uint64_t sequence_ = 0;
  double now_ = 0;
  double makespan_ = 0;
  uint64_t intra_bytes_ = 0, inter_bytes_ = 0, transfers_ = 0;
  Status status_;
};

}  // namespace chorus::sim
