#include "core/executor.h"

#include <algorithm>
#include <cstring>
#include <memory>

#include "base/log.h"
#include "kernels/reduce.h"

namespace chorus {
namespace {

bool IsNetworkStep(StepKind kind) {
  return kind == StepKind::kSend || kind == StepKind::kRecv || kind == StepKind::kRecvReduce;
}

// Progress of one step, in chunks.
struct StepState {
  const Step* step = nullptr;
  const BoundSchedule* bound = nullptr;
  size_t chunk = 0;       // bytes per chunk (last one may be shorter)
  size_t nchunks = 0;
  size_t next_chunk = 0;  // next chunk to start
  size_t prefix = 0;      // chunks [0, prefix) are finished
  std::vector<uint8_t> finished;
  std::vector<uint32_t> deps;  // indices into the flat state array

  bool complete() const { return prefix == nchunks; }
  size_t ChunkBegin(size_t c) const { return c * chunk; }
  size_t ChunkLength(size_t c) const { return std::min(chunk, step->bytes - c * chunk); }
};

// Where a combining receive-reduce chunk folds what arrives:
// dst = src op incoming, element by element (the staging path's order).
struct ReduceTarget {
  uint8_t* dst = nullptr;
  const uint8_t* src = nullptr;
  size_t element_size = 1;
  DataType dtype = chorusFloat32;
  ReduceOp op = ReduceOp::kSum;
};

// ReceiveCombiner::fn: the transport may call it in several pieces.
void ReduceIncoming(void* context, size_t offset, const void* incoming, size_t bytes) {
  const auto* target = static_cast<const ReduceTarget*>(context);
  ReduceKernel(target->dst + offset, target->src + offset, incoming, bytes / target->element_size, target->dtype,
               target->op);
}

// One in-flight chunk transfer.
struct Slot {
  TransferRequest request;
  bool busy = false;
  uint32_t state = 0;
  size_t chunk = 0;
  uint8_t* staging = nullptr;  // receive-reduce through staging only
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
  bool needs_staging = false;
};

uint8_t* Resolve(const BoundSchedule& bound, const BufferRange& range) {
  switch (range.buffer) {
    case BufferId::kSend: return bound.send + range.offset;
    case BufferId::kRecv: return bound.recv + range.offset;
    case BufferId::kScratch: return bound.scratch + range.offset;
  }
  return nullptr;
}

class Execution {
 public:
  Execution(Transport* transport, int rank, const ExecutorOptions& options)
      : transport_(transport), rank_(rank), options_(options) {}

  Status Prepare(const std::vector<BoundSchedule>& schedules);
  Status Run(const std::atomic<bool>& abort, Deadline deadline);

 private:
  bool ChunkReady(const StepState& state, size_t c) const;
  void FinishChunk(StepState& state, size_t c);
  bool RunLocalSteps();
  Status PostTransfers(PeerChannel& channel, bool sending, bool* progressed);
  bool ReapTransfers(PeerChannel& channel);
  std::string DescribeWaiting() const;

  Transport* transport_;
  int rank_;
  ExecutorOptions options_;
  std::vector<StepState> states_;
  std::vector<uint32_t> local_steps_;
  std::vector<PeerChannel> channels_;  // only peers this launch talks to
  size_t remaining_ = 0;
};

Status Execution::Prepare(const std::vector<BoundSchedule>& schedules) {
  size_t total = 0;
  for (const BoundSchedule& bound : schedules) total += bound.schedule->steps.size();
  states_.resize(total);
  std::vector<int> channel_of_peer;
  size_t base = 0;
  for (const BoundSchedule& bound : schedules) {
    const Schedule& schedule = *bound.schedule;
    size_t element = std::max<size_t>(1, schedule.element_size);
    size_t chunk = std::max(element, options_.chunk_bytes / element * element);
    for (size_t i = 0; i < schedule.steps.size(); ++i) {
      const Step& step = schedule.steps[i];
      StepState& state = states_[base + i];
      state.step = &step;
      state.bound = &bound;
      state.chunk = chunk;
      // A zero-byte step still orders its dependants after its dependencies:
      // it becomes one empty local chunk, never sent.
      state.nchunks = step.bytes == 0 ? 1 : (step.bytes + chunk - 1) / chunk;
      state.finished.assign(state.nchunks, 0);
      for (uint32_t dep : step.deps) {
        if (dep >= i) return InternalError("schedule '", schedule.algorithm, "' step ", i, " depends on later step ", dep);
        state.deps.push_back(static_cast<uint32_t>(base + dep));
      }
      ++remaining_;
      if (step.bytes == 0 || !IsNetworkStep(step.kind)) {
        local_steps_.push_back(static_cast<uint32_t>(base + i));
        continue;
      }
      if (step.peer < 0 || step.peer == rank_) {
        return InternalError("schedule '", schedule.algorithm, "' step ", i, " has bad peer ", step.peer);
      }
      if (static_cast<size_t>(step.peer) >= channel_of_peer.size()) channel_of_peer.resize(step.peer + 1, -1);
      int& index = channel_of_peer[step.peer];
      if (index < 0) {
        index = static_cast<int>(channels_.size());
        PeerChannel channel;
        channel.peer = step.peer;
        channel.endpoint = transport_->endpoint(step.peer);
        if (channel.endpoint == nullptr) return InternalError("no endpoint to peer ", step.peer);
        channel.combines = options_.combine_on_receive && channel.endpoint->combine_on_receive();
        channels_.push_back(std::move(channel));
      }
      PeerChannel& channel = channels_[index];
      if (step.kind == StepKind::kSend) {
        channel.send_steps.push_back(static_cast<uint32_t>(base + i));
      } else {
        channel.recv_steps.push_back(static_cast<uint32_t>(base + i));
        if (step.kind == StepKind::kRecvReduce && !channel.combines) channel.needs_staging = true;
      }
    }
    base += schedule.steps.size();
  }

  // Staging for receive-reduce: one chunk per in-flight slot.
  const int slots = std::max(1, options_.max_inflight_per_peer);
  size_t max_chunk = 0;
  for (const StepState& state : states_) max_chunk = std::max(max_chunk, state.chunk);
  size_t staging_channels = 0;
  for (const PeerChannel& channel : channels_) staging_channels += channel.needs_staging ? 1 : 0;
  uint8_t* staging = nullptr;
  if (staging_channels > 0) staging = options_.staging->Reserve(staging_channels * slots * max_chunk);
  for (PeerChannel& channel : channels_) {
    channel.send_slots.resize(slots);
    channel.recv_slots.resize(slots);
    if (!channel.needs_staging) continue;
    for (Slot& slot : channel.recv_slots) {
      slot.staging = staging;
      staging += max_chunk;
    }
  }
  return Status::Ok();
}

bool Execution::ChunkReady(const StepState& state, size_t c) const {
  for (uint32_t dep : state.deps) {
    const StepState& before = states_[dep];
    if (before.step->bytes == state.step->bytes && before.chunk == state.chunk) {
      if (before.prefix <= c) return false;
    } else if (!before.complete()) {
      return false;
    }
  }
  return true;
}

void Execution::FinishChunk(StepState& state, size_t c) {
  state.finished[c] = 1;
  while (state.prefix < state.nchunks && state.finished[state.prefix]) ++state.prefix;
  if (state.complete()) --remaining_;
}

bool Execution::RunLocalSteps() {
  bool progressed = false;
  for (uint32_t index : local_steps_) {
    StepState& state = states_[index];
    const Step& step = *state.step;
    const Schedule& schedule = *state.bound->schedule;
    while (state.next_chunk < state.nchunks && ChunkReady(state, state.next_chunk)) {
      size_t c = state.next_chunk++;
      size_t offset = state.ChunkBegin(c), length = state.ChunkLength(c);
      uint8_t* dst = Resolve(*state.bound, step.dst) + offset;
      const uint8_t* src = Resolve(*state.bound, step.src) + offset;
      if (length == 0) {
        // an empty step: only its ordering matters
      } else if (step.kind == StepKind::kCopy) {
        if (dst != src) std::memmove(dst, src, length);
      } else {  // kReduce
        const uint8_t* src2 = Resolve(*state.bound, step.src2) + offset;
        ReduceKernel(dst, src, src2, length / schedule.element_size, schedule.dtype, schedule.op);
      }
      FinishChunk(state, c);
      progressed = true;
    }
  }
  return progressed;
}

Status Execution::PostTransfers(PeerChannel& channel, bool sending, bool* progressed) {
  std::vector<uint32_t>& steps = sending ? channel.send_steps : channel.recv_steps;
  size_t& head = sending ? channel.send_head : channel.recv_head;
  std::vector<Slot>& slots = sending ? channel.send_slots : channel.recv_slots;
  size_t free_slot = 0;
  while (head < steps.size()) {
    StepState& state = states_[steps[head]];
    if (state.next_chunk == state.nchunks) {
      ++head;
      continue;
    }
    if (!ChunkReady(state, state.next_chunk)) return Status::Ok();
    while (free_slot < slots.size() && slots[free_slot].busy) ++free_slot;
    if (free_slot == slots.size()) return Status::Ok();
    Slot& slot = slots[free_slot];
    size_t c = state.next_chunk++;
    const Step& step = *state.step;
    slot.busy = true;
    slot.state = steps[head];
    slot.chunk = c;
    slot.request = TransferRequest();
    slot.request.bytes = state.ChunkLength(c);
    slot.request.tag = state.bound->tag;
    if (sending) {
      slot.request.buffer = Resolve(*state.bound, step.src) + state.ChunkBegin(c);
      CHORUS_RETURN_IF_ERROR(channel.endpoint->PostSend(&slot.request));
    } else {
      uint8_t* dst = Resolve(*state.bound, step.dst) + state.ChunkBegin(c);
      slot.request.buffer = dst;
      if (step.kind == StepKind::kRecvReduce && channel.combines) {
        const Schedule& schedule = *state.bound->schedule;
        const uint8_t* src = Resolve(*state.bound, step.src) + state.ChunkBegin(c);
        slot.target = {dst, src, std::max<size_t>(1, schedule.element_size), schedule.dtype, schedule.op};
        slot.combiner = {ReduceIncoming, &slot.target};
        slot.request.combine = &slot.combiner;
      } else if (step.kind == StepKind::kRecvReduce) {
        slot.request.buffer = slot.staging;
      }
      CHORUS_RETURN_IF_ERROR(channel.endpoint->PostRecv(&slot.request));
    }
    *progressed = true;
  }
  return Status::Ok();
}

bool Execution::ReapTransfers(PeerChannel& channel) {
  bool progressed = false;
  for (Slot& slot : channel.send_slots) {
    if (!slot.busy || !slot.request.done) continue;
    slot.busy = false;
    FinishChunk(states_[slot.state], slot.chunk);
    progressed = true;
  }
  // Staged receive-reduce chunks are applied in completion order (combined
  // ones already were, inside Progress); chunks of one step touch disjoint
  // bytes, and the step's dependants wait for the prefix.
  for (Slot& slot : channel.recv_slots) {
    if (!slot.busy || !slot.request.done) continue;
    StepState& state = states_[slot.state];
    const Step& step = *state.step;
    if (step.kind == StepKind::kRecvReduce && slot.request.combine == nullptr) {
      const Schedule& schedule = *state.bound->schedule;
      size_t offset = state.ChunkBegin(slot.chunk);
      ReduceKernel(Resolve(*state.bound, step.dst) + offset, Resolve(*state.bound, step.src) + offset, slot.staging,
                   state.ChunkLength(slot.chunk) / schedule.element_size, schedule.dtype, schedule.op);
    }
    slot.busy = false;
    FinishChunk(state, slot.chunk);
    progressed = true;
  }
  return progressed;
}

std::string Execution::DescribeWaiting() const {
  std::string text;
  for (const PeerChannel& channel : channels_) {
    bool recv_pending = false, send_pending = false;
    for (uint32_t index : channel.recv_steps) recv_pending |= !states_[index].complete();
    for (uint32_t index : channel.send_steps) send_pending |= !states_[index].complete();
    if (recv_pending) text += StrCat(text.empty() ? "" : ", ", "data from peer ", channel.peer);
    if (send_pending) text += StrCat(text.empty() ? "" : ", ", "peer ", channel.peer, " to take data");
  }
  return text.empty() ? "local work" : text;
}

Status Execution::Run(const std::atomic<bool>& abort, Deadline deadline) {
  // Polling first keeps small-message latency low; after a stretch of idle
  // polls the executor sleeps in the transport so oversubscribed ranks yield.
  int idle_rounds = 0;
  while (remaining_ > 0) {
    if (abort.load(std::memory_order_relaxed)) return RemoteError("rank ", rank_, ": communicator aborted");
    bool progressed = RunLocalSteps();
    for (PeerChannel& channel : channels_) {
      CHORUS_RETURN_IF_ERROR(PostTransfers(channel, /*sending=*/true, &progressed));
      CHORUS_RETURN_IF_ERROR(PostTransfers(channel, /*sending=*/false, &progressed));
    }
    if (remaining_ == 0) break;
    int wait_ms = (progressed || idle_rounds < 64) ? 0 : std::min(deadline.RemainingMs(), 100);
    Status status = transport_->Progress(wait_ms);
    if (!status.ok()) return status.WithContext(StrCat("rank ", rank_));
    for (PeerChannel& channel : channels_) progressed |= ReapTransfers(channel);
    idle_rounds = progressed ? 0 : idle_rounds + 1;
    if (!progressed && deadline.Expired()) {
      return TimeoutError("rank ", rank_, ": timed out waiting for ", DescribeWaiting(),
                          " (CHORUS_TIMEOUT_MS)");
    }
  }
  return Status::Ok();
}

}  // namespace

Status ExecuteSchedules(Transport* transport, int rank, const std::vector<BoundSchedule>& schedules,
                        const ExecutorOptions& options, const std::atomic<bool>& abort, Deadline deadline) {
  Execution execution(transport, rank, options);
  CHORUS_RETURN_IF_ERROR(execution.Prepare(schedules));
  Status status = execution.Run(abort, deadline);
  // Requests may still be posted and transports have no cancel: Shutdown
  // makes the transport let go of them before `execution` frees them.
  if (!status.ok()) transport->Shutdown();
  return status;
}

}  // namespace chorus
