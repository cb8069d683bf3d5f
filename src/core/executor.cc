#include "core/executor.h"

#include <algorithm>
#include <cstring>
#include <memory>

#include "base/log.h"
#include "base/spin_wait.h"
#include "kernels/reduce.h"

namespace chorus {
namespace {

bool IsNetworkStep(StepKind kind) {
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
  // Network step on a kind the transport does not take: each chunk goes
  // through a host staging slot, copied by `engine`.
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
};

// ReceiveCombiner::fn: the transport may call it in several pieces. Only
// steps whose operands the CPU may touch combine (StepState::cpu_operands), so
// this calls the CPU kernel, the host engine's, directly.
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
  bool recv_needs_staging = false;
  bool send_needs_staging = false;  // some send is staged
};

MemoryHandle MemoryOf(const BoundMemory* memory, const BufferRange& range) {
  if (memory == nullptr) return MemoryHandle();
  switch (range.buffer) {
    case BufferId::kSend: return memory->send;
    case BufferId::kRecv: return memory->recv;
    case BufferId::kScratch: return memory->scratch;
  }
  return MemoryHandle();
}

MemoryKind KindOf(const BoundSchedule& bound, const BufferRange& range) {
  switch (range.buffer) {
    case BufferId::kSend: return bound.send_kind;
    case BufferId::kRecv: return bound.recv_kind;
    case BufferId::kScratch: return bound.scratch_kind;
  }
  return MemoryKind::kHost;
}

uint8_t* Resolve(const BoundSchedule& bound, const BufferRange& range) {
  switch (range.buffer) {
    case BufferId::kSend: return bound.send + range.offset;
    case BufferId::kRecv: return bound.recv + range.offset;
    case BufferId::kScratch: return bound.scratch + range.offset;
  }
  return nullptr;
}

}  // namespace

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

// Idle polls before sleeping in the transport. Polling pays off when a
// peer answers within microseconds (small calls on idle cores); when the
// last stretches all ran out (a slow link, oversubscribed cores), each poll
// only steals CPU from the peer or the application, so poll only a few
// times, probing with a full stretch now and then to notice a change (the
// rule of AdaptiveSpin, base/spin_wait.h).
constexpr int kPollRounds = 64;
constexpr int kShortPollRounds = 4;
// Where the ranks outnumber the CPUs (TransportCapabilities::shares_cores)
// these polls do not spin: the shm transport's idle Progress(0) yields the
// core. Waiting in the transport at once instead (no polls) measured 1.5-8x
// slower at 1-16 MiB on 4 processes and 2 cores: the wait sleeps on its
// futex after 20 us, and a sender waiting for ring space wakes only by
// slices (docs/performance.md, "Oversubscribed hosts").
int PollRounds(unsigned fruitless_stretches) {
  return SkipPolling(fruitless_stretches) ? kShortPollRounds : kPollRounds;
}

ExecutorContext::ExecutorContext() : state_(std::make_unique<ExecutionState>()) {}
ExecutorContext::~ExecutorContext() = default;

namespace {

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
  Status ChooseEngine(const Schedule& schedule, size_t index, MemoryKindMask transport_kinds, StepState* state) const;
  Status RunLocalSteps(bool* progressed);
  Status PostTransfers(PeerChannel& channel, bool sending, bool* progressed);
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

void Execution::Reset() {
  for (PeerChannel* channel = channels_begin(); channel != channels_end(); ++channel) {
    s_.channel_of_peer[channel->peer] = -1;
  }
  s_.nchannels = 0;
  s_.states.clear();
  s_.finished.clear();
  s_.deps.clear();
  s_.readers.clear();
  s_.local_steps.clear();
}

Status Execution::ChannelTo(int peer, PeerChannel** out) {
  if (static_cast<size_t>(peer) >= s_.channel_of_peer.size()) s_.channel_of_peer.resize(peer + 1, -1);
  int& index = s_.channel_of_peer[peer];
  if (index < 0) {
    Endpoint* endpoint = transport_->endpoint(peer);
    if (endpoint == nullptr) return InternalError("no endpoint to peer ", peer);
    if (s_.nchannels == s_.channels.size()) s_.channels.emplace_back();
    index = static_cast<int>(s_.nchannels++);
    PeerChannel& channel = s_.channels[index];
    channel.peer = peer;
    channel.endpoint = endpoint;
    channel.send_steps.clear();
    channel.recv_steps.clear();
    channel.send_head = channel.recv_head = 0;
    channel.combines = options_.combine_on_receive && endpoint->combine_on_receive();
    channel.recv_needs_staging = false;
    channel.send_needs_staging = false;
  }
  *out = &s_.channels[index];
  return Status::Ok();
}

Status Execution::Prepare(const std::vector<BoundSchedule>& schedules) {
  Reset();
  size_t total = 0;
  for (const BoundSchedule& bound : schedules) total += bound.schedule->steps.size();
  s_.states.resize(total);
  size_t base = 0;
  if (options_.memory != nullptr && options_.memory->size() != schedules.size()) {
    return InternalError("executor: ", options_.memory->size(), " memory registrations for ", schedules.size(),
                         " schedules");
  }
  const MemoryKindMask transport_kinds = transport_->capabilities().memory_kinds;
  for (size_t index = 0; index < schedules.size(); ++index) {
    const BoundSchedule& bound = schedules[index];
    const Schedule& schedule = *bound.schedule;
    size_t element = std::max<size_t>(1, schedule.element_size);
    size_t chunk = std::max(element, options_.chunk_bytes / element * element);
    for (size_t i = 0; i < schedule.steps.size(); ++i) {
      const Step& step = schedule.steps[i];
      StepState& state = s_.states[base + i];
      state.step = &step;
      has_paced_ |= step.paced;
      state.bound = &bound;
      state.memory = options_.memory != nullptr ? &(*options_.memory)[index] : nullptr;
      state.chunk = chunk;
      CHORUS_RETURN_IF_ERROR(ChooseEngine(schedule, i, transport_kinds, &state));
      // A zero-byte step still orders its dependants after its dependencies:
      // it becomes one empty local chunk, never sent.
      state.nchunks = step.bytes == 0 ? 1 : (step.bytes + chunk - 1) / chunk;
      state.finished = s_.finished.size();
      s_.finished.resize(state.finished + state.nchunks, 0);
      state.deps = s_.deps.size();
      state.ndeps = step.deps.size();
      for (uint32_t dep : step.deps) {
        if (dep >= i) return InternalError("schedule '", schedule.algorithm, "' step ", i, " depends on later step ", dep);
        s_.deps.push_back(static_cast<uint32_t>(base + dep));
      }
      ++remaining_;
      if (step.bytes == 0 || !IsNetworkStep(step.kind)) {
        s_.local_steps.push_back(static_cast<uint32_t>(base + i));
        continue;
      }
      if (step.peer < 0 || step.peer == rank_) {
        return InternalError("schedule '", schedule.algorithm, "' step ", i, " has bad peer ", step.peer);
      }
      PeerChannel* channel = nullptr;
      CHORUS_RETURN_IF_ERROR(ChannelTo(step.peer, &channel));
      if (step.kind == StepKind::kSend) {
        channel->send_steps.push_back(static_cast<uint32_t>(base + i));
        channel->send_needs_staging |= state.staged;
      } else {
        channel->recv_steps.push_back(static_cast<uint32_t>(base + i));
        const bool combined = step.kind == StepKind::kRecvReduce && channel->combines && state.cpu_operands;
        channel->recv_needs_staging |= state.staged || (step.kind == StepKind::kRecvReduce && !combined);
      }
    }
    base += schedule.steps.size();
  }
  FindPacedReaders();

  // Host staging: one chunk per in-flight slot of each direction that needs it.
  const size_t slots = static_cast<size_t>(std::max(1, options_.max_inflight_per_peer));
  size_t max_chunk = 0;
  for (const StepState& state : s_.states) max_chunk = std::max(max_chunk, state.chunk);
  size_t staging_channels = 0;
  for (PeerChannel* channel = channels_begin(); channel != channels_end(); ++channel) {
    staging_channels += (channel->recv_needs_staging ? 1 : 0) + (channel->send_needs_staging ? 1 : 0);
  }
  uint8_t* staging = nullptr;
  if (staging_channels > 0) staging = options_.staging->Reserve(staging_channels * slots * max_chunk);
  for (PeerChannel* channel = channels_begin(); channel != channels_end(); ++channel) {
    // Slots are idle after every launch that succeeded; after a failure the
    // transport was shut down and let go of their requests. Posting a chunk
    // sets the rest of a slot.
    channel->send_slots.resize(slots);
    channel->recv_slots.resize(slots);
    for (Slot& slot : channel->send_slots) {
      slot.busy = false;
      slot.staging = nullptr;
      if (!channel->send_needs_staging) continue;
      slot.staging = staging;
      staging += max_chunk;
    }
    for (Slot& slot : channel->recv_slots) {
      slot.busy = false;
      slot.staging = nullptr;
      if (!channel->recv_needs_staging) continue;
      slot.staging = staging;
      staging += max_chunk;
    }
  }
  return Status::Ok();
}

// A step's operands may mix CPU-accessible memory with at most one other
// kind, whose engine then does the step (engines take host operands).
Status Execution::ChooseEngine(const Schedule& schedule, size_t index, MemoryKindMask transport_kinds,
                               StepState* state) const {
  const Step& step = *state->step;
  const BoundSchedule& bound = *state->bound;
  const BufferRange* operands[3] = {};
  switch (step.kind) {
    case StepKind::kSend: operands[0] = &step.src; break;
    case StepKind::kRecv: operands[0] = &step.dst; break;
    case StepKind::kRecvReduce:
    case StepKind::kCopy: operands[0] = &step.dst; operands[1] = &step.src; break;
    case StepKind::kReduce: operands[0] = &step.dst; operands[1] = &step.src; operands[2] = &step.src2; break;
  }
  MemoryKind kind = MemoryKind::kHost;
  for (const BufferRange* operand : operands) {
    if (operand == nullptr) continue;
    const MemoryKind operand_kind = KindOf(bound, *operand);
    if (IsCpuAccessible(operand_kind)) continue;
    if (!IsCpuAccessible(kind) && kind != operand_kind) {
      return InvalidArgument("schedule '", schedule.algorithm, "' step ", index, " mixes ", MemoryKindName(kind),
                             " and ", MemoryKindName(operand_kind), " memory");
    }
    kind = operand_kind;
  }
  state->engine = engines_.For(kind);
  if (state->engine == nullptr) {
    return InvalidArgument("no local engine for ", MemoryKindName(kind), " memory (schedule '", schedule.algorithm,
                           "' step ", index, "); this build or this call cannot use it");
  }
  state->cpu_operands = IsCpuAccessible(kind);
  state->staged = IsNetworkStep(step.kind) && !Contains(transport_kinds, kind);
  return Status::Ok();
}

// Dependants are found from their dependency lists, so a paced step's
// readers are collected in step order: one pass counts them, a second fills
// the flat table (no per-step vectors, nothing allocated on a warm launch).
// Launches without a paced step (most: ring, hd, ...) skip both passes.
void Execution::FindPacedReaders() {
  if (options_.pace_chunks == 0 || !has_paced_) return;
  // Calls fn(paced step, index of a step that consumes it chunk by chunk).
  const auto for_each_reader = [this](auto fn) {
    for (size_t i = 0; i < s_.states.size(); ++i) {
      const StepState& state = s_.states[i];
      for (size_t d = state.deps; d < state.deps + state.ndeps; ++d) {
        StepState& before = s_.states[s_.deps[d]];
        if (before.step->paced && before.OrdersPrefixOf(state)) fn(before, static_cast<uint32_t>(i));
      }
    }
  };
  for_each_reader([](StepState& paced, uint32_t) { ++paced.nreaders; });
  size_t total = 0;
  for (StepState& state : s_.states) {
    state.readers = total;
    total += state.nreaders;
    state.nreaders = 0;
  }
  s_.readers.resize(total);
  for_each_reader([this](StepState& paced, uint32_t reader) { s_.readers[paced.readers + paced.nreaders++] = reader; });
}

// Rule 5 of schedule.h: chunk c of a paced receive waits until every step
// that consumes it has finished chunk c - pace_chunks.
bool Execution::HeldBack(const StepState& state, size_t c) const {
  for (size_t r = state.readers; r < state.readers + state.nreaders; ++r) {
    if (s_.states[s_.readers[r]].prefix + options_.pace_chunks <= c) return true;
  }
  return false;
}

bool Execution::ChunkReady(const StepState& state, size_t c) const {
  for (size_t d = state.deps; d < state.deps + state.ndeps; ++d) {
    const StepState& before = s_.states[s_.deps[d]];
    if (before.OrdersPrefixOf(state)) {
      if (before.prefix <= c) return false;
    } else if (!before.complete()) {
      return false;
    }
  }
  return true;
}

void Execution::FinishChunk(StepState& state, size_t c) {
  uint8_t* finished = &s_.finished[state.finished];
  finished[c] = 1;
  while (state.prefix < state.nchunks && finished[state.prefix]) ++state.prefix;
  if (state.complete()) --remaining_;
}

Status Execution::RunLocalSteps(bool* progressed) {
  for (uint32_t index : s_.local_steps) {
    StepState& state = s_.states[index];
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
        CHORUS_RETURN_IF_ERROR(state.engine->Copy(dst, src, length));
      } else {  // kReduce
        const uint8_t* src2 = Resolve(*state.bound, step.src2) + offset;
        CHORUS_RETURN_IF_ERROR(
            state.engine->Reduce(dst, src, src2, length / schedule.element_size, schedule.dtype, schedule.op));
      }
      FinishChunk(state, c);
      *progressed = true;
    }
  }
  return Status::Ok();
}

Status Execution::PostTransfers(PeerChannel& channel, bool sending, bool* progressed) {
  std::vector<uint32_t>& steps = sending ? channel.send_steps : channel.recv_steps;
  size_t& head = sending ? channel.send_head : channel.recv_head;
  std::vector<Slot>& slots = sending ? channel.send_slots : channel.recv_slots;
  size_t free_slot = 0;
  while (head < steps.size()) {
    StepState& state = s_.states[steps[head]];
    if (state.next_chunk == state.nchunks) {
      ++head;
      continue;
    }
    if (!ChunkReady(state, state.next_chunk)) return Status::Ok();
    if (!sending && HeldBack(state, state.next_chunk)) return Status::Ok();
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
      slot.request.memory = MemoryOf(state.memory, step.src);
      if (state.staged) {
        CHORUS_RETURN_IF_ERROR(state.engine->Copy(slot.staging, slot.request.buffer, slot.request.bytes));
        slot.request.buffer = slot.staging;
        slot.request.memory = MemoryHandle();
      }
      CHORUS_RETURN_IF_ERROR(channel.endpoint->PostSend(&slot.request));
    } else {
      uint8_t* dst = Resolve(*state.bound, step.dst) + state.ChunkBegin(c);
      slot.request.buffer = dst;
      slot.request.memory = MemoryOf(state.memory, step.dst);
      if (step.kind == StepKind::kRecvReduce && channel.combines && state.cpu_operands) {
        const Schedule& schedule = *state.bound->schedule;
        const uint8_t* src = Resolve(*state.bound, step.src) + state.ChunkBegin(c);
        slot.target = {dst, src, std::max<size_t>(1, schedule.element_size), schedule.dtype, schedule.op};
        slot.combiner = {ReduceIncoming, &slot.target};
        slot.request.combine = &slot.combiner;
      } else if (step.kind == StepKind::kRecvReduce || state.staged) {
        slot.request.buffer = slot.staging;
        slot.request.memory = MemoryHandle();
      }
      CHORUS_RETURN_IF_ERROR(channel.endpoint->PostRecv(&slot.request));
    }
    *progressed = true;
  }
  return Status::Ok();
}

Status Execution::ReapTransfers(PeerChannel& channel, bool* progressed) {
  for (Slot& slot : channel.send_slots) {
    if (!slot.busy || !slot.request.done) continue;
    slot.busy = false;
    FinishChunk(s_.states[slot.state], slot.chunk);
    *progressed = true;
  }
  // Staged receive-reduce chunks are applied in completion order (combined
  // ones already were, inside Progress); chunks of one step touch disjoint
  // bytes, and the step's dependants wait for the prefix.
  for (Slot& slot : channel.recv_slots) {
    if (!slot.busy || !slot.request.done) continue;
    StepState& state = s_.states[slot.state];
    const Step& step = *state.step;
    const size_t offset = state.ChunkBegin(slot.chunk);
    if (step.kind == StepKind::kRecvReduce && slot.request.combine == nullptr) {
      const Schedule& schedule = *state.bound->schedule;
      CHORUS_RETURN_IF_ERROR(state.engine->Reduce(Resolve(*state.bound, step.dst) + offset,
                                                  Resolve(*state.bound, step.src) + offset, slot.staging,
                                                  state.ChunkLength(slot.chunk) / schedule.element_size,
                                                  schedule.dtype, schedule.op));
    } else if (state.staged) {  // kRecv
      CHORUS_RETURN_IF_ERROR(
          state.engine->Copy(Resolve(*state.bound, step.dst) + offset, slot.staging, state.ChunkLength(slot.chunk)));
    }
    slot.busy = false;
    FinishChunk(state, slot.chunk);
    *progressed = true;
  }
  return Status::Ok();
}

std::string Execution::DescribeWaiting() const {
  std::string text;
  for (const PeerChannel* it = channels_begin(); it != channels_end(); ++it) {
    const PeerChannel& channel = *it;
    bool recv_pending = false, send_pending = false;
    for (uint32_t index : channel.recv_steps) recv_pending |= !s_.states[index].complete();
    for (uint32_t index : channel.send_steps) send_pending |= !s_.states[index].complete();
    if (recv_pending) text += StrCat(text.empty() ? "" : ", ", "data from peer ", channel.peer);
    if (send_pending) text += StrCat(text.empty() ? "" : ", ", "peer ", channel.peer, " to take data");
  }
  return text.empty() ? "local work" : text;
}

void Execution::CollectWaiting(WaitingPeers* waiting) const {
  waiting->Clear();
  for (const PeerChannel* it = channels_begin(); it != channels_end(); ++it) {
    bool recv_pending = false, send_pending = false;
    for (uint32_t index : it->recv_steps) recv_pending |= !s_.states[index].complete();
    for (uint32_t index : it->send_steps) send_pending |= !s_.states[index].complete();
    if (recv_pending) waiting->AddRecv(it->peer);
    if (send_pending) waiting->AddSend(it->peer);
  }
}

Status Execution::Run(const std::atomic<bool>& abort, Deadline deadline) {
  // Polling first keeps small-message latency low; after a stretch of idle
  // polls the executor sleeps in the transport so oversubscribed ranks yield.
  int idle_rounds = 0;
  int poll_rounds = PollRounds(s_.fruitless_stretches);
  while (remaining_ > 0) {
    if (abort.load(std::memory_order_relaxed)) return RemoteError("rank ", rank_, ": communicator aborted");
    bool progressed = false;
    CHORUS_RETURN_IF_ERROR(RunLocalSteps(&progressed));
    for (PeerChannel* channel = channels_begin(); channel != channels_end(); ++channel) {
      CHORUS_RETURN_IF_ERROR(PostTransfers(*channel, /*sending=*/true, &progressed));
      CHORUS_RETURN_IF_ERROR(PostTransfers(*channel, /*sending=*/false, &progressed));
    }
    if (remaining_ == 0) break;
    int wait_ms = (progressed || idle_rounds < poll_rounds) ? 0 : std::min(deadline.RemainingMs(), 100);
    Status status = transport_->Progress(wait_ms);
    if (!status.ok()) return status.WithContext(StrCat("rank ", rank_));
    for (PeerChannel* channel = channels_begin(); channel != channels_end(); ++channel) {
      CHORUS_RETURN_IF_ERROR(ReapTransfers(*channel, &progressed));
    }
    if (progressed) {
      if (idle_rounds > 0 && idle_rounds < poll_rounds) s_.fruitless_stretches = 0;  // polling paid off
      idle_rounds = 0;
    } else if (++idle_rounds == poll_rounds) {
      ++s_.fruitless_stretches;
      poll_rounds = PollRounds(s_.fruitless_stretches);
      idle_rounds = std::max(idle_rounds, poll_rounds);  // this stretch is over: wait from now on
    }
    // The clock is read only once polling has turned into waiting: the polls
    // before it take microseconds, and a small launch never gets there.
    if (!progressed && idle_rounds >= poll_rounds && deadline.Expired()) {
      return TimeoutError("rank ", rank_, ": timed out waiting for ", DescribeWaiting(),
                          " (CHORUS_TIMEOUT_MS)");
    }
  }
  return Status::Ok();
}

}  // namespace

Status ExecuteSchedules(Transport* transport, int rank, const std::vector<BoundSchedule>& schedules,
                        const ExecutorOptions& options, const std::atomic<bool>& abort, Deadline deadline) {
  std::unique_ptr<ExecutorContext> own_context;
  ExecutorContext* context = options.context;
  if (context == nullptr) {
    own_context = std::make_unique<ExecutorContext>();
    context = own_context.get();
  }
  Execution execution(transport, rank, options, &context->state());
  CHORUS_RETURN_IF_ERROR(execution.Prepare(schedules));
  Status status = execution.Run(abort, deadline);
  if (!status.ok() && options.waiting != nullptr) execution.CollectWaiting(options.waiting);
  // Requests may still be posted and transports have no cancel: Shutdown
  // makes the transport let go of them before their slots are freed or
  // reused by the next launch.
  if (!status.ok()) {
    CloseNotice notice;
    if (options.close_notice != nullptr && DecodeCloseNotice(options.close_notice->load(), &notice)) {
      transport->ShutdownWithNotice(notice);
    } else {
      transport->Shutdown();
    }
  }
  return status;
}

}  // namespace chorus
