// The executor's working parts, shared by its two files: the per-launch
// state (step states, per-peer channels and their in-flight slots) and
// Execution, which runs one launch over it. execution_prepare.cc lays a
// launch out (steps, engines, channels, host staging); executor.cc runs it
// (dependencies, posting and reaping transfers, waiting). Internal to
// core/: everything else goes through ExecuteSchedules (executor.h).
#pragma once

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "core/executor.h"

namespace chorus {

inline bool IsNetworkStep(StepKind kind) {
  return kind == StepKind::kSend || kind == StepKind::kRecv || kind == StepKind::kRecvReduce;
}

// Progress of one step, in chunks. Its per-chunk flags and dependencies live
// in the flat tables of ExecutionState, so that states are plain data and a
// reused state vector allocates nothing.
struct StepState {
  const Step* step = nullptr;
  const BoundSchedule* bound = nullptr;
  const BoundMemory* memory = nullptr;  // null: no registrations
  // The engine of the step's memory: of its one operand kind the CPU cannot
  // touch, if any, else the host's.
  LocalEngine* engine = nullptr;
  MemoryKind kind = MemoryKind::kHost;  // engine's kind
  // The kind of the call's user buffers (TransferRequest::call_kind).
  MemoryKind call_kind = MemoryKind::kHost;
  // Network step on a kind its peer's endpoint does not take: each chunk
  // goes through a host staging slot, copied by `engine`.
  bool staged = false;
  // Every operand is CPU-accessible, so a receive-reduce may be combined on
  // receipt by the CPU kernels.
  bool cpu_operands = true;
  size_t chunk = 0;       // bytes per chunk (last one may be shorter)
  size_t nchunks = 0;
  size_t next_chunk = 0;  // next chunk to start
  size_t prefix = 0;      // chunks [0, prefix) are finished
  size_t finished = 0;    // first of nchunks flags in ExecutionState::finished
  size_t deps = 0;        // first of ndeps indices in ExecutionState::deps
  size_t ndeps = 0;
  // Paced receives only: the steps that consume it chunk by chunk, as
  // nreaders indices from `readers` in ExecutionState::readers.
  size_t readers = 0;
  size_t nreaders = 0;

  bool complete() const { return prefix == nchunks; }
  size_t ChunkBegin(size_t c) const { return c * chunk; }
  size_t ChunkLength(size_t c) const { return std::min(chunk, step->bytes - c * chunk); }
  // Whether chunk c of `after` needs only chunks [0, c] of this step (rule 1
  // of schedule.h) rather than all of it.
  bool OrdersPrefixOf(const StepState& after) const { return step->bytes == after.step->bytes && chunk == after.chunk; }
};

// Where a combining receive-reduce chunk folds what arrives:
// dst = src op incoming, element by element (the staging path's order).
struct ReduceTarget {
  uint8_t* dst = nullptr;
  const uint8_t* src = nullptr;
  size_t element_size = 1;
  DataType dtype = chorusFloat32;
  ReduceOp op = ReduceOp::kSum;
  // Device operands (a transport that hands over a peer's device memory,
  // CUDA IPC): the engine that reduces, and its first failure, which the
  // executor reports when the chunk completes (a combiner returns nothing).
  LocalEngine* engine = nullptr;
  Status failure;
};

// ReceiveCombiner::fn: the transport may call it in several pieces. For
// steps whose operands the CPU may touch (StepState::cpu_operands) this calls
// the CPU kernel, the host engine's, directly.
void ReduceIncoming(void* context, size_t offset, const void* incoming, size_t bytes);
// The same through ReduceTarget::engine, for device operands.
void ReduceIncomingOnEngine(void* context, size_t offset, const void* incoming, size_t bytes);

// The kind of a call's user buffers: the one the CPU cannot touch, if any.
inline MemoryKind CallKindOf(const BoundSchedule& bound) {
  if (!IsCpuAccessible(bound.send_kind)) return bound.send_kind;
  if (!IsCpuAccessible(bound.recv_kind)) return bound.recv_kind;
  return MemoryKind::kHost;
}

// One in-flight chunk transfer.
struct Slot {
  TransferRequest request;
  bool busy = false;
  uint32_t state = 0;
  size_t chunk = 0;
  // Host chunk for staged steps and receive-reduces not combined on receipt.
  uint8_t* staging = nullptr;
  // Receive-reduce on an endpoint that combines on receipt.
  ReduceTarget target;
  ReceiveCombiner combiner;
};

// Everything exchanged with one peer, in matching order.
struct PeerChannel {
  int peer = -1;
  Endpoint* endpoint = nullptr;
  std::vector<uint32_t> send_steps, recv_steps;
  size_t send_head = 0, recv_head = 0;
  std::vector<Slot> send_slots, recv_slots;
  // Receive-reduce chunks are reduced by the transport as they arrive, or
  // land in staging and are reduced when done.
  bool combines = false;
  MemoryKindMask memory_kinds = kCpuAccessibleKinds;  // the endpoint's
  bool recv_needs_staging = false;
  bool send_needs_staging = false;  // some send is staged
};

inline MemoryHandle MemoryOf(const BoundMemory* memory, const BufferRange& range) {
  if (memory == nullptr) return MemoryHandle();
  switch (range.buffer) {
    case BufferId::kSend: return memory->send;
    case BufferId::kRecv: return memory->recv;
    case BufferId::kScratch: return memory->scratch;
  }
  return MemoryHandle();
}

inline MemoryKind KindOf(const BoundSchedule& bound, const BufferRange& range) {
  switch (range.buffer) {
    case BufferId::kSend: return bound.send_kind;
    case BufferId::kRecv: return bound.recv_kind;
    case BufferId::kScratch: return bound.scratch_kind;
  }
  return MemoryKind::kHost;
}

inline uint8_t* Resolve(const BoundSchedule& bound, const BufferRange& range) {
  switch (range.buffer) {
    case BufferId::kSend: return bound.send + range.offset;
    case BufferId::kRecv: return bound.recv + range.offset;
    case BufferId::kScratch: return bound.scratch + range.offset;
  }
  return nullptr;
}

// What one launch works on. Vectors are cleared, never shrunk, between
// launches; `channels` is a pool whose first `nchannels` entries are in use,
// so that their step lists and slots keep their capacity too.
struct ExecutionState {
  std::vector<StepState> states;
  std::vector<uint8_t> finished;  // per chunk of every step
  std::vector<uint32_t> deps;     // per step: indices into `states`
  std::vector<uint32_t> readers;  // per paced receive: indices into `states`
  std::vector<uint32_t> local_steps;
  std::vector<PeerChannel> channels;  // only peers this launch talks to
  size_t nchannels = 0;
  std::vector<int> channel_of_peer;  // -1 between launches
  // Stretches of idle polls in a row that ended without progress (kept
  // across launches): see PollRounds.
  unsigned fruitless_stretches = 0;
};

class Execution {
 public:
  Execution(Transport* transport, int rank, const ExecutorOptions& options, ExecutionState* state)
      : transport_(transport), rank_(rank), options_(options), s_(*state) {}

  Status Prepare(const std::vector<BoundSchedule>& schedules);
  Status Run(const std::atomic<bool>& abort, Deadline deadline);
  // The peers DescribeWaiting names, as numbers.
  void CollectWaiting(WaitingPeers* waiting) const;

 private:
  bool ChunkReady(const StepState& state, size_t c) const;
  void FindPacedReaders();
  bool HeldBack(const StepState& state, size_t c) const;
  void FinishChunk(StepState& state, size_t c);
  Status ChooseEngine(const Schedule& schedule, size_t index, StepState* state) const;
  Status RunLocalSteps(bool* progressed);
  Status PostTransfers(PeerChannel& channel, bool sending, bool* progressed);
  // PostTransfers of every channel, sends then receives.
  Status PostAllTransfers(bool* progressed);
  Status ReapTransfers(PeerChannel& channel, bool* progressed);
  std::string DescribeWaiting() const;
  PeerChannel* channels_begin() const { return s_.channels.data(); }
  PeerChannel* channels_end() const { return s_.channels.data() + s_.nchannels; }
  // Empties the reused state, keeping its capacity.
  void Reset();
  // The channel to `peer`, set up on first use in this launch.
  Status ChannelTo(int peer, PeerChannel** out);

  Transport* transport_;
  int rank_;
  ExecutorOptions options_;
  const LocalEngines& engines_ = options_.engines != nullptr ? *options_.engines : DefaultLocalEngines();
  ExecutionState& s_;
  size_t remaining_ = 0;
  bool has_paced_ = false;  // some step of this launch is paced
};

}  // namespace chorus
