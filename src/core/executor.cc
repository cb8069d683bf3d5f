#include "core/executor.h"

#include <algorithm>
#include <cstring>
#include <memory>

#include "base/log.h"
#include "base/spin_wait.h"
#include "core/execution.h"
#include "kernels/reduce.h"

namespace chorus {

void ReduceIncoming(void* context, size_t offset, const void* incoming, size_t bytes) {
  const auto* target = static_cast<const ReduceTarget*>(context);
  ReduceKernel(target->dst + offset, target->src + offset, incoming, bytes / target->element_size, target->dtype,
               target->op);
}

void ReduceIncomingOnEngine(void* context, size_t offset, const void* incoming, size_t bytes) {
  auto* target = static_cast<ReduceTarget*>(context);
  if (!target->failure.ok()) return;
  target->failure = target->engine->Reduce(target->dst + offset, target->src + offset, incoming,
                                           bytes / target->element_size, target->dtype, target->op);
}

namespace {

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
// slices (docs/design-notes.md, "Oversubscribed hosts").
int PollRounds(unsigned fruitless_stretches) {
  return SkipPolling(fruitless_stretches) ? kShortPollRounds : kPollRounds;
}

}  // namespace

ExecutorContext::ExecutorContext() : state_(std::make_unique<ExecutionState>()) {}
ExecutorContext::~ExecutorContext() = default;

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

Status Execution::PostAllTransfers(bool* progressed) {
  for (PeerChannel* channel = channels_begin(); channel != channels_end(); ++channel) {
    CHORUS_RETURN_IF_ERROR(PostTransfers(*channel, /*sending=*/true, progressed));
    CHORUS_RETURN_IF_ERROR(PostTransfers(*channel, /*sending=*/false, progressed));
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
    slot.request.call_kind = state.call_kind;
    slot.request.kind = state.staged ? MemoryKind::kHost : state.kind;
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
      if (step.kind == StepKind::kRecvReduce && channel.combines && !state.staged) {
        // CPU operands fold with the CPU kernel; device operands (on an
        // endpoint that takes them) with their engine, from wherever the
        // transport holds the payload.
        const Schedule& schedule = *state.bound->schedule;
        const uint8_t* src = Resolve(*state.bound, step.src) + state.ChunkBegin(c);
        ReduceTarget& target = slot.target;
        target.dst = dst;
        target.src = src;
        target.element_size = std::max<size_t>(1, schedule.element_size);
        target.dtype = schedule.dtype;
        target.op = schedule.op;
        slot.combiner.context = &target;
        if (state.cpu_operands) {
          target.engine = nullptr;
          slot.combiner.fn = ReduceIncoming;
          slot.combiner.readable = kCpuAccessibleKinds;
        } else {
          target.engine = state.engine;
          target.failure = Status::Ok();
          slot.combiner.fn = ReduceIncomingOnEngine;
          slot.combiner.readable = kCpuAccessibleKinds | KindBit(state.kind);
        }
        slot.request.combine = &slot.combiner;
      } else if (step.kind == StepKind::kRecvReduce || state.staged) {
        slot.request.buffer = slot.staging;
        slot.request.memory = MemoryHandle();
        slot.request.kind = MemoryKind::kHost;
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
    if (slot.request.combine != nullptr && slot.target.engine != nullptr && !slot.target.failure.ok()) {
      return slot.target.failure;
    }
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
    // Transfers first: a transport that moves bytes on its own (a NIC, a
    // kernel socket buffer, a peer pulling) works while the local copies and
    // reductions run. Transfers those steps made ready are posted after them.
    CHORUS_RETURN_IF_ERROR(PostAllTransfers(&progressed));
    bool local_progress = false;
    CHORUS_RETURN_IF_ERROR(RunLocalSteps(&local_progress));
    if (local_progress) {
      progressed = true;
      CHORUS_RETURN_IF_ERROR(PostAllTransfers(&progressed));
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
