#include "sim/replay_engine.h"

#include <algorithm>

namespace chorus::sim {

namespace {

// Events closer than this (relative) happen together: one rebalance of the
// ports after all of them, instead of one per event.
constexpr double kSameTime = 1e-12;

size_t PortCount(size_t sim_ranks, int sim_hosts) { return 2 * sim_ranks + 2 * static_cast<size_t>(sim_hosts); }

}  // namespace

ReplayEngine::ReplayEngine(const ClusterModel& cluster, int nranks,
                           std::vector<std::shared_ptr<const CompactSchedule>> schedules, int max_inflight_per_peer)
    : cluster_(cluster),
      nranks_(nranks),
      sim_hosts_(schedules.size() == static_cast<size_t>(nranks) ? std::max(1, cluster.hosts) : 1),
      schedules_(std::move(schedules)),
      network_(PortCount(schedules_.size(), sim_hosts_)),
      window_(static_cast<size_t>(std::max(0, max_inflight_per_peer))) {
  ranks_.resize(schedules_.size());
  for (size_t r = 0; r < schedules_.size(); ++r) {
    RankState& state = ranks_[r];
    state.schedule = schedules_[r].get();
    const size_t steps = state.schedule->steps.size();
    state.released.assign(steps, 0);
    state.done.assign(steps, 0);
    state.delivered.assign(steps, 0);
    state.chunk_done.assign(state.schedule->total_chunks, 0);
    state.cursors.assign(state.schedule->recv_channels.size(), Cursor{});
  }
  hosts_.resize(static_cast<size_t>(sim_hosts_));
}

// One pair per (rank, peer it sends to); its ports: the rank's send port,
// the peer's receive port and, between hosts, the two NICs.
Status ReplayEngine::BuildPairs() {
  const uint32_t sim_ranks = static_cast<uint32_t>(ranks_.size());
  const uint32_t nic_base = 2 * sim_ranks;
  for (uint32_t r = 0; r < sim_ranks; ++r) {
    RankState& state = ranks_[r];
    state.first_pair = static_cast<uint32_t>(pairs_.size());
    for (int32_t relative : state.schedule->send_peers) {
      Pair pair;
      pair.rank = r;
      pair.relative = relative;
      const int real_peer = static_cast<int>((static_cast<int64_t>(r) + relative) % nranks_);
      pair.peer = static_cast<uint32_t>(real_peer) % sim_ranks;
      const int from_host = cluster_.HostOf(static_cast<int>(r));
      const int to_host = cluster_.HostOf(real_peer);
      pair.inter = from_host != to_host;
      const CompactSchedule& inbox = *ranks_[pair.peer].schedule;
      auto channel = inbox.recv_channel_of.find((nranks_ - relative) % nranks_);
      if (channel != inbox.recv_channel_of.end()) pair.receive_channel = channel->second;
      pair.ports[pair.nports++] = 2 * r;
      pair.ports[pair.nports++] = 2 * pair.peer + 1;
      if (pair.inter) {
        pair.ports[pair.nports++] = nic_base + 2 * static_cast<uint32_t>(from_host % sim_hosts_);
        pair.ports[pair.nports++] = nic_base + 2 * static_cast<uint32_t>(to_host % sim_hosts_) + 1;
      }
      pairs_.push_back(std::move(pair));
    }
  }
  return Status::Ok();
}

void ReplayEngine::Push(double time, EventKind kind, uint32_t a, uint32_t b, uint32_t c) {
  queue_.push(Event{time, sequence_++, kind, a, b, c});
}

void ReplayEngine::Fail(Status status) {
  if (status_.ok()) status_ = std::move(status);
}

// Rule 1 of schedule.h: chunk k waits for chunk k of each equal-length
// dependency and for the whole of any other.
bool ReplayEngine::ChunkReady(const RankState& state, uint32_t step, uint32_t chunk) const {
  const CompactSchedule& schedule = *state.schedule;
  const CompactStep& self = schedule.steps[step];
  for (uint32_t i = self.deps_begin; i < self.deps_end; ++i) {
    const uint32_t dep = schedule.deps[i];
    const CompactStep& other = schedule.steps[dep];
    const uint32_t needed = other.bytes == self.bytes && other.chunks == self.chunks ? chunk : other.chunks - 1;
    if (state.done[dep] <= needed) return false;
  }
  return true;
}

void ReplayEngine::TryRelease(uint32_t rank, uint32_t step) {
  RankState& state = ranks_[rank];
  const uint32_t chunks = state.schedule->steps[step].chunks;
  while (state.released[step] < chunks && ChunkReady(state, step, state.released[step])) {
    const uint32_t chunk = state.released[step]++;
    Release(rank, step, chunk);
  }
}

void ReplayEngine::Release(uint32_t rank, uint32_t step, uint32_t chunk) {
  RankState& state = ranks_[rank];
  const CompactStep& self = state.schedule->steps[step];
  switch (self.kind) {
    case StepKind::kSend: {
      const uint32_t pair = state.first_pair + self.channel;
      pairs_[pair].ready.emplace(static_cast<uint64_t>(self.send_ordinal) + chunk, ChunkRef{step, chunk});
      TryTransmit(pair);
      break;
    }
    case StepKind::kRecv:
    case StepKind::kRecvReduce:
      if (state.delivered[step] > chunk) FinishReceive(rank, step, chunk);
      break;
    case StepKind::kCopy:
      Complete(rank, step, chunk);
      break;
    case StepKind::kReduce:
      Compute(rank, step, chunk, state.schedule->ChunkBytes(self, chunk));
      break;
  }
}

void ReplayEngine::FinishReceive(uint32_t rank, uint32_t step, uint32_t chunk) {
  const CompactSchedule& schedule = *ranks_[rank].schedule;
  const CompactStep& self = schedule.steps[step];
  if (self.kind == StepKind::kRecvReduce) {
    Compute(rank, step, chunk, schedule.ChunkBytes(self, chunk));
  } else {
    Complete(rank, step, chunk);
  }
}

// Reductions hold the rank's one compute resource, first come first served.
void ReplayEngine::Compute(uint32_t rank, uint32_t step, uint32_t chunk, uint64_t bytes) {
  RankState& state = ranks_[rank];
  if (cluster_.gamma_s_per_byte <= 0 || bytes == 0) {
    Complete(rank, step, chunk);
    return;
  }
  const double start = std::max(now_, state.compute_free);
  state.compute_free = start + static_cast<double>(bytes) * cluster_.gamma_s_per_byte;
  Push(state.compute_free, EventKind::kComputeDone, rank, step, chunk);
}

void ReplayEngine::Complete(uint32_t rank, uint32_t step, uint32_t chunk) {
  RankState& state = ranks_[rank];
  const CompactSchedule& schedule = *state.schedule;
  const CompactStep& self = schedule.steps[step];
  state.chunk_done[self.first_chunk + chunk] = 1;
  const uint32_t before = state.done[step];
  while (state.done[step] < self.chunks && state.chunk_done[self.first_chunk + state.done[step]]) ++state.done[step];
  makespan_ = std::max(makespan_, now_);
  if (state.done[step] == before) return;
  // The worklist is a stack: push in reverse so dependents release in step
  // order, and sends that become ready together leave in schedule order.
  for (uint32_t i = self.dependents_end; i > self.dependents_begin; --i) {
    worklist_.emplace_back(rank, schedule.dependents[i - 1]);
  }
}

// Starts the pair's next chunk when the stream is free, the chunk is ready
// and the in-flight window has room. Rule 3 of schedule.h matches it with
// the receiver's next receive chunk from this rank here.
void ReplayEngine::TryTransmit(uint32_t index) {
  Pair& pair = pairs_[index];
  while (!pair.transmitting && !pair.ready.empty() && pair.ready.begin()->first == pair.next &&
         (window_ == 0 || pair.next < pair.delivered + window_)) {
    const ChunkRef send = pair.ready.begin()->second;
    pair.ready.erase(pair.ready.begin());
    RankState& sender = ranks_[pair.rank];
    RankState& receiver = ranks_[pair.peer];
    const CompactStep& self = sender.schedule->steps[send.step];
    const uint64_t bytes = sender.schedule->ChunkBytes(self, send.chunk);
    const int real_peer = static_cast<int>((static_cast<int64_t>(pair.rank) + pair.relative) % nranks_);

    const CompactSchedule& inbox = *receiver.schedule;
    if (pair.receive_channel == UINT32_MAX ||
        receiver.cursors[pair.receive_channel].position >= inbox.recv_channels[pair.receive_channel].steps.size()) {
      Fail(InvalidArgument("rank ", pair.rank, " step ", send.step, " sends to rank ", real_peer,
                           " which posts no matching receive"));
      return;
    }
    Cursor& cursor = receiver.cursors[pair.receive_channel];
    const uint32_t step = inbox.recv_channels[pair.receive_channel].steps[cursor.position];
    const CompactStep& target = inbox.steps[step];
    if (inbox.ChunkBytes(target, cursor.chunk) != bytes) {
      Fail(InvalidArgument("rank ", pair.rank, " step ", send.step, " sends ", bytes, " bytes but rank ", real_peer,
                           " step ", step, " receives ", inbox.ChunkBytes(target, cursor.chunk)));
      return;
    }
    pair.in_flight.push_back(InFlight{send, ChunkRef{step, cursor.chunk}});
    if (++cursor.chunk == target.chunks) {
      cursor.chunk = 0;
      ++cursor.position;
    }
    ++pair.next;
    ++transfers_;
    sender.sent += bytes;
    receiver.received += bytes;
    const LinkModel& link = pair.inter ? cluster_.inter_host : cluster_.intra_host;
    if (pair.inter) {
      hosts_[cluster_.HostOf(static_cast<int>(pair.rank)) % sim_hosts_].nic_out_bytes += bytes;
      hosts_[cluster_.HostOf(real_peer) % sim_hosts_].nic_in_bytes += bytes;
      inter_bytes_ += bytes;
    } else {
      intra_bytes_ += bytes;
    }
    if (bytes == 0) {  // nothing to transmit: only the latency
      Push(now_ + link.alpha_s, EventKind::kDeliver, index);
      continue;
    }
    const uint32_t flow = network_.Start(static_cast<double>(bytes) / link.bandwidth_Bps, pair.ports, pair.nports);
    if (flow >= flow_pair_.size()) flow_pair_.resize(flow + 1);
    flow_pair_[flow] = index;
    pair.transmitting = true;
  }
}

// A chunk arrives: the send chunk is done, the receive chunk has its data.
void ReplayEngine::Deliver(uint32_t index) {
  Pair& pair = pairs_[index];
  const InFlight chunk = pair.in_flight[pair.in_flight_head++];
  if (pair.in_flight_head == pair.in_flight.size()) {
    pair.in_flight.clear();
    pair.in_flight_head = 0;
  }
  ++pair.delivered;
  Complete(pair.rank, chunk.send.step, chunk.send.chunk);
  RankState& receiver = ranks_[pair.peer];
  receiver.delivered[chunk.receive.step] = chunk.receive.chunk + 1;
  if (receiver.released[chunk.receive.step] > chunk.receive.chunk) {
    FinishReceive(pair.peer, chunk.receive.step, chunk.receive.chunk);
  }
  TryTransmit(index);
}

void ReplayEngine::Process(const Event& event) {
  switch (event.kind) {
    case EventKind::kFlowEnd: {
      if (network_.version(event.a) != event.b) return;  // its share changed since
      const uint32_t index = flow_pair_[event.a];
      network_.Finish(event.a);
      Pair& pair = pairs_[index];
      pair.transmitting = false;
      const LinkModel& link = pair.inter ? cluster_.inter_host : cluster_.intra_host;
      Push(now_ + link.alpha_s, EventKind::kDeliver, index);
      TryTransmit(index);
      break;
    }
    case EventKind::kDeliver:
      Deliver(event.a);
      break;
    case EventKind::kComputeDone:
      Complete(event.a, event.b, event.c);
      break;
  }
}

void ReplayEngine::Drain() {
  while (!worklist_.empty()) {
    const auto [rank, step] = worklist_.back();
    worklist_.pop_back();
    TryRelease(rank, step);
  }
}

Status ReplayEngine::Run(SimResult* result) {
  CHORUS_RETURN_IF_ERROR(BuildPairs());
  for (uint32_t r = 0; r < ranks_.size(); ++r) {
    const CompactSchedule& schedule = *ranks_[r].schedule;
    for (uint32_t s = 0; s < schedule.steps.size(); ++s) {
      if (schedule.steps[s].deps_begin == schedule.steps[s].deps_end) TryRelease(r, s);
      Drain();
    }
  }
  for (;;) {
    network_.Rebalance(now_, &changed_);
    for (const FlowNetwork::FinishTime& finish : changed_) {
      Push(finish.time, EventKind::kFlowEnd, finish.flow, finish.version);
    }
    changed_.clear();
    if (queue_.empty() || !status_.ok()) break;
    now_ = queue_.top().time;
    const double horizon = now_ + kSameTime * now_;
    while (!queue_.empty() && queue_.top().time <= horizon && status_.ok()) {
      const Event event = queue_.top();
      queue_.pop();
      Process(event);
      Drain();
    }
  }
  CHORUS_RETURN_IF_ERROR(status_);

  const uint64_t scale = static_cast<uint64_t>(nranks_) / ranks_.size();
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
  result->intra_host_bytes = intra_bytes_ * scale;
  result->inter_host_bytes = inter_bytes_ * scale;
  result->transfers = transfers_ * scale;
  result->steps = steps * scale;
  result->simulated_ranks = ranks_.size();
  return Status::Ok();
}

}  // namespace chorus::sim
