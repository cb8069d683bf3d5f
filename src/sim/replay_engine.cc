#include "sim/replay_engine.h"

#include <algorithm>

namespace chorus::sim {

ReplayEngine::ReplayEngine(const ClusterModel& cluster, std::vector<std::shared_ptr<const CompactSchedule>> schedules,
                           int max_inflight_per_peer)
    : cluster_(cluster), schedules_(std::move(schedules)), window_(static_cast<size_t>(std::max(0, max_inflight_per_peer))) {
  ranks_.resize(schedules_.size());
  for (size_t r = 0; r < schedules_.size(); ++r) {
    RankState& state = ranks_[r];
    state.schedule = schedules_[r].get();
    const size_t steps = state.schedule->steps.size();
    state.released.assign(steps, 0);
    state.done.assign(steps, 0);
    state.delivered.assign(steps, 0);
    state.times.assign(state.schedule->total_chunks, 0.0);
  }
  hosts_.resize(static_cast<size_t>(std::max(1, cluster_.hosts)));
}

// Rule 1 of schedule.h: chunk k waits for chunk k of each equal-length
// dependency and for the whole of any other.
bool ReplayEngine::ChunkReady(const RankState& state, uint32_t step, uint32_t chunk, double* ready) const {
  const CompactSchedule& schedule = *state.schedule;
  const CompactStep& self = schedule.steps[step];
  double time = 0;
  for (uint32_t i = self.deps_begin; i < self.deps_end; ++i) {
    const uint32_t dep = schedule.deps[i];
    const CompactStep& other = schedule.steps[dep];
    uint32_t needed;
    if (other.bytes == self.bytes && other.chunks == self.chunks) {
      needed = chunk;
    } else {
      needed = other.chunks - 1;
    }
    if (state.done[dep] <= needed) return false;
    time = std::max(time, state.times[other.first_chunk + needed]);
  }
  *ready = time;
  return true;
}

void ReplayEngine::TryRelease(uint32_t rank, uint32_t step) {
  RankState& state = ranks_[rank];
  const uint32_t chunks = state.schedule->steps[step].chunks;
  double ready = 0;
  while (state.released[step] < chunks && ChunkReady(state, step, state.released[step], &ready)) {
    const uint32_t chunk = state.released[step]++;
    Release(rank, step, chunk, ready);
  }
}

void ReplayEngine::Release(uint32_t rank, uint32_t step, uint32_t chunk, double ready) {
  RankState& state = ranks_[rank];
  const CompactStep& self = state.schedule->steps[step];
  switch (self.kind) {
    case StepKind::kSend:
      queue_.push(SendReady{ready, sequence_++, rank, step, chunk});
      break;
    case StepKind::kRecv:
    case StepKind::kRecvReduce:
      if (state.delivered[step] > chunk) FinishReceive(rank, step, chunk, ready);
      break;
    case StepKind::kCopy:
      Complete(rank, step, chunk, ready);
      break;
    case StepKind::kReduce:
      Complete(rank, step, chunk, Reduce(state, ready, state.schedule->ChunkBytes(self, chunk)));
      break;
  }
}

void ReplayEngine::FinishReceive(uint32_t rank, uint32_t step, uint32_t chunk, double ready) {
  RankState& state = ranks_[rank];
  const CompactStep& self = state.schedule->steps[step];
  double time = std::max(ready, state.times[self.first_chunk + chunk]);  // the delivery
  if (self.kind == StepKind::kRecvReduce) time = Reduce(state, time, state.schedule->ChunkBytes(self, chunk));
  Complete(rank, step, chunk, time);
}

double ReplayEngine::Reduce(RankState& state, double ready, uint64_t bytes) {
  if (cluster_.gamma_s_per_byte <= 0) return ready;
  const double start = std::max(ready, state.compute_free);
  state.compute_free = start + static_cast<double>(bytes) * cluster_.gamma_s_per_byte;
  return state.compute_free;
}

void ReplayEngine::Complete(uint32_t rank, uint32_t step, uint32_t chunk, double time) {
  RankState& state = ranks_[rank];
  const CompactSchedule& schedule = *state.schedule;
  const CompactStep& self = schedule.steps[step];
  // Chunks of a step finish in order: later ones never appear done earlier.
  if (chunk > 0) time = std::max(time, state.times[self.first_chunk + chunk - 1]);
  state.times[self.first_chunk + chunk] = time;
  state.done[step] = chunk + 1;
  makespan_ = std::max(makespan_, time);
  // The worklist is a stack: push in reverse so dependents release in step
  // order, and sends that become ready together leave in schedule order.
  for (uint32_t i = self.dependents_end; i > self.dependents_begin; --i) {
    worklist_.emplace_back(rank, schedule.dependents[i - 1]);
  }
}

Status ReplayEngine::Transfer(const SendReady& send) {
  const int nranks = static_cast<int>(ranks_.size());
  RankState& sender = ranks_[send.rank];
  const CompactStep& self = sender.schedule->steps[send.step];
  const uint32_t peer = static_cast<uint32_t>((static_cast<int>(send.rank) + self.relative_peer) % nranks);
  RankState& receiver = ranks_[peer];
  const uint64_t bytes = sender.schedule->ChunkBytes(self, send.chunk);
  const uint64_t pair = (static_cast<uint64_t>(send.rank) << 32) | peer;

  SendChannel& out = send_channels_[pair];
  const uint64_t ordinal = static_cast<uint64_t>(self.send_ordinal) + send.chunk;
  if (ordinal != out.next) {  // an earlier chunk to this peer has not left yet
    out.parked.emplace(ordinal, send);
    return Status::Ok();
  }
  if (window_ > 0) {
    if (out.delivered.empty()) out.delivered.assign(window_, 0.0);
    const double slot_free = out.next >= window_ ? out.delivered[out.next % window_] : 0.0;
    if (slot_free > send.time) {
      SendReady later = send;
      later.time = slot_free;
      queue_.push(later);
      return Status::Ok();
    }
  }

  // Reserve the path first come first served.
  const int from_host = cluster_.HostOf(static_cast<int>(send.rank));
  const int to_host = cluster_.HostOf(static_cast<int>(peer));
  const bool inter = from_host != to_host;
  const LinkModel& link = inter ? cluster_.inter_host : cluster_.intra_host;
  double start = std::max({send.time, sender.out_free, receiver.in_free});
  if (inter) start = std::max({start, hosts_[from_host].nic_out_free, hosts_[to_host].nic_in_free});
  const double end = start + static_cast<double>(bytes) / link.bandwidth_Bps;
  sender.out_free = receiver.in_free = end;
  sender.sent += bytes;
  receiver.received += bytes;
  if (inter) {
    hosts_[from_host].nic_out_free = hosts_[to_host].nic_in_free = end;
    hosts_[from_host].nic_out_bytes += bytes;
    hosts_[to_host].nic_in_bytes += bytes;
    inter_bytes_ += bytes;
  } else {
    intra_bytes_ += bytes;
  }
  ++transfers_;
  const double delivery = end + link.alpha_s;
  Complete(send.rank, send.step, send.chunk, delivery);
  if (window_ > 0) out.delivered[out.next % window_] = delivery;
  ++out.next;
  auto parked = out.parked.find(out.next);
  if (parked != out.parked.end()) {
    SendReady next = parked->second;
    next.time = std::max(next.time, send.time);
    out.parked.erase(parked);
    queue_.push(next);
  }

  // Rule 3: the k-th chunk from A to B is B's k-th receive chunk from A.
  const int32_t from = static_cast<int32_t>((static_cast<int>(send.rank) - static_cast<int>(peer) + nranks) % nranks);
  const CompactSchedule& inbox = *receiver.schedule;
  auto list = inbox.receives_by_peer.find(from);
  Channel& channel = channels_[pair];
  if (list == inbox.receives_by_peer.end() || channel.position >= list->second.size()) {
    return InvalidArgument("rank ", send.rank, " step ", send.step, " sends to rank ", peer,
                           " which posts no matching receive");
  }
  const uint32_t step = list->second[channel.position];
  const CompactStep& target = inbox.steps[step];
  const uint32_t chunk = channel.chunk;
  if (inbox.ChunkBytes(target, chunk) != bytes) {
    return InvalidArgument("rank ", send.rank, " step ", send.step, " sends ", bytes, " bytes but rank ", peer,
                           " step ", step, " receives ", inbox.ChunkBytes(target, chunk));
  }
  if (++channel.chunk == target.chunks) {
    channel.chunk = 0;
    ++channel.position;
  }
  receiver.times[target.first_chunk + chunk] = delivery;
  receiver.delivered[step] = chunk + 1;
  double ready = 0;
  if (receiver.released[step] > chunk && ChunkReady(receiver, step, chunk, &ready)) {
    FinishReceive(peer, step, chunk, ready);
  }
  return Status::Ok();
}

void ReplayEngine::Drain() {
  while (!worklist_.empty()) {
    const auto [rank, step] = worklist_.back();
    worklist_.pop_back();
    TryRelease(rank, step);
  }
}

Status ReplayEngine::Run(SimResult* result) {
  for (uint32_t r = 0; r < ranks_.size(); ++r) {
    const CompactSchedule& schedule = *ranks_[r].schedule;
    for (uint32_t s = 0; s < schedule.steps.size(); ++s) {
      if (schedule.steps[s].deps_begin == schedule.steps[s].deps_end) TryRelease(r, s);
      Drain();
    }
  }
  while (!queue_.empty()) {
    const SendReady send = queue_.top();
    queue_.pop();
    CHORUS_RETURN_IF_ERROR(Transfer(send));
    Drain();
  }
  uint64_t steps = 0;
  for (uint32_t r = 0; r < ranks_.size(); ++r) {
    const RankState& state = ranks_[r];
    const auto& list = state.schedule->steps;
    steps += list.size();
    for (uint32_t s = 0; s < list.size(); ++s) {
      if (state.done[s] != list[s].chunks) {
        return InvalidArgument("rank ", r, " step ", s, " never completes (", state.done[s], " of ", list[s].chunks,
                               " chunks): the schedules deadlock or a receive has no matching send");
      }
    }
    result->max_rank_sent_bytes = std::max(result->max_rank_sent_bytes, state.sent);
    result->max_rank_received_bytes = std::max(result->max_rank_received_bytes, state.received);
  }
  for (const HostState& host : hosts_) {
    result->max_host_nic_bytes = std::max({result->max_host_nic_bytes, host.nic_out_bytes, host.nic_in_bytes});
  }
  result->time_s = makespan_;
  result->intra_host_bytes = intra_bytes_;
  result->inter_host_bytes = inter_bytes_;
  result->transfers = transfers_;
  result->steps = steps;
  return Status::Ok();
}

}  // namespace chorus::sim
