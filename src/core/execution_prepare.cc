// Lays one launch out: a state per step, its engine and staging, the
// channel per peer in matching order, the paced receives' readers, and the
// host staging slots.
#include <algorithm>

#include "core/execution.h"

namespace chorus {

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
    channel.memory_kinds = endpoint->memory_kinds();
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
  size_t max_chunk = 0;
  if (options_.memory != nullptr && options_.memory->size() != schedules.size()) {
    return InternalError("executor: ", options_.memory->size(), " memory registrations for ", schedules.size(),
                         " schedules");
  }
  for (size_t index = 0; index < schedules.size(); ++index) {
    const BoundSchedule& bound = schedules[index];
    const Schedule& schedule = *bound.schedule;
    size_t element = std::max<size_t>(1, schedule.element_size);
    size_t chunk = std::max(element, options_.chunk_bytes / element * element);
    const MemoryKind call_kind = CallKindOf(bound);
    for (size_t i = 0; i < schedule.steps.size(); ++i) {
      const Step& step = schedule.steps[i];
      StepState& state = s_.states[base + i];
      state.step = &step;
      has_paced_ |= step.paced;
      state.bound = &bound;
      state.memory = options_.memory != nullptr ? &(*options_.memory)[index] : nullptr;
      state.chunk = chunk;
      CHORUS_RETURN_IF_ERROR(ChooseEngine(schedule, i, &state));
      state.call_kind = call_kind;
      const bool network = step.bytes > 0 && IsNetworkStep(step.kind);
      PeerChannel* channel = nullptr;
      if (network) {
        if (step.peer < 0 || step.peer == rank_) {
          return InternalError("schedule '", schedule.algorithm, "' step ", i, " has bad peer ", step.peer);
        }
        CHORUS_RETURN_IF_ERROR(ChannelTo(step.peer, &channel));
        state.staged = !Contains(channel->memory_kinds, state.kind);
        if (!IsCpuAccessible(state.call_kind) && Contains(channel->memory_kinds, state.call_kind) &&
            options_.device_chunk_bytes > 0) {
          state.chunk = std::max(element, options_.device_chunk_bytes / element * element);
        }
      }
      // A zero-byte step still orders its dependants after its dependencies:
      // it becomes one empty local chunk, never sent.
      state.nchunks = step.bytes == 0 ? 1 : (step.bytes + state.chunk - 1) / state.chunk;
      state.finished = s_.finished.size();
      s_.finished.resize(state.finished + state.nchunks, 0);
      state.deps = s_.deps.size();
      state.ndeps = step.deps.size();
      for (uint32_t dep : step.deps) {
        if (dep >= i) return InternalError("schedule '", schedule.algorithm, "' step ", i, " depends on later step ", dep);
        s_.deps.push_back(static_cast<uint32_t>(base + dep));
      }
      ++remaining_;
      if (!network) {
        s_.local_steps.push_back(static_cast<uint32_t>(base + i));
        continue;
      }
      bool staging = state.staged;
      if (step.kind == StepKind::kSend) {
        channel->send_steps.push_back(static_cast<uint32_t>(base + i));
        channel->send_needs_staging |= staging;
      } else {
        channel->recv_steps.push_back(static_cast<uint32_t>(base + i));
        const bool combined = step.kind == StepKind::kRecvReduce && channel->combines && !state.staged;
        staging |= step.kind == StepKind::kRecvReduce && !combined;
        channel->recv_needs_staging |= staging;
      }
      if (staging) max_chunk = std::max(max_chunk, state.chunk);
    }
    base += schedule.steps.size();
  }
  FindPacedReaders();

  // Host staging: one chunk per in-flight slot of each direction that needs
  // it, of the largest chunk of a step that goes through staging.
  const size_t slots = static_cast<size_t>(std::max(1, options_.max_inflight_per_peer));
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
    const auto reset = [&](std::vector<Slot>& direction, bool needs_staging) {
      direction.resize(slots);
      for (Slot& slot : direction) {
        slot.busy = false;
        slot.staging = needs_staging ? staging : nullptr;
        if (needs_staging) staging += max_chunk;
      }
    };
    reset(channel->send_slots, channel->send_needs_staging);
    reset(channel->recv_slots, channel->recv_needs_staging);
  }
  return Status::Ok();
}

// A step's operands may mix CPU-accessible memory with at most one other
// kind, whose engine then does the step (engines take host operands).
// Whether a network step is staged depends on its peer's endpoint, decided
// once its channel is known.
Status Execution::ChooseEngine(const Schedule& schedule, size_t index, StepState* state) const {
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
  state->kind = kind;
  state->cpu_operands = IsCpuAccessible(kind);
  state->staged = false;
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

}  // namespace chorus
