#include "virtual_executor.h"

#include <algorithm>
#include <cstring>
#include <deque>
#include <random>
#include <sstream>

#include "reference_reduce.h"

namespace chorus::testing {

size_t EffectiveChunkBytes(size_t chunk_bytes, size_t element_size) {
  const size_t rounded = chunk_bytes / element_size * element_size;
  return rounded == 0 ? element_size : rounded;
}

namespace {

struct Message {
  std::vector<uint8_t> data;
  uint32_t step = 0;
  size_t chunk = 0;
};

struct RankState {
  std::vector<uint8_t> scratch;
  size_t chunk_bytes = 0;
  std::vector<size_t> done;    // chunks finished per step (in order)
  std::vector<size_t> chunks;  // chunks per step
};

// One message channel direction: the steps in order and the first unfinished.
struct Channel {
  std::vector<uint32_t> steps;
  size_t cursor = 0;
};

class VirtualRun {
 public:
  VirtualRun(const std::vector<Schedule>& schedules, const std::vector<RankMemory>& memory,
             const VirtualRunOptions& options)
      : schedules_(schedules),
        memory_(memory),
        options_(options),
        p_(static_cast<int>(schedules.size())),
        rng_(options.seed),
        ranks_(schedules.size()),
        sends_(schedules.size() * schedules.size()),
        recvs_(schedules.size() * schedules.size()),
        queues_(schedules.size() * schedules.size()) {}

  std::string Run() {
    std::string error = Prepare();
    if (!error.empty()) return error;
    std::vector<std::pair<int, uint32_t>> pending;
    for (int r = 0; r < p_; ++r) {
      for (uint32_t s = 0; s < schedules_[r].steps.size(); ++s) pending.emplace_back(r, s);
    }
    while (!pending.empty()) {
      const size_t start = rng_() % pending.size();
      bool progressed = false;
      for (size_t i = 0; i < pending.size() && !progressed; ++i) {
        const size_t index = (start + i) % pending.size();
        const auto [rank, step] = pending[index];
        if (Complete(rank, step)) {
          pending[index] = pending.back();
          pending.pop_back();
          progressed = true;  // the list changed; pick afresh
          continue;
        }
        progressed = TryRun(rank, step);
        if (!error_.empty()) return error_;
      }
      if (!progressed) return DescribeDeadlock(pending);
    }
    for (size_t c = 0; c < queues_.size(); ++c) {
      if (!queues_[c].empty()) {
        return "messages " + std::to_string(c / p_) + " -> " + std::to_string(c % p_) + " were sent but never received";
      }
    }
    return "";
  }

 private:
  std::string Prepare() {
    for (int r = 0; r < p_; ++r) {
      const Schedule& schedule = schedules_[r];
      RankState& state = ranks_[r];
      if (schedule.element_size == 0) return "rank " + std::to_string(r) + ": element_size 0";
      state.scratch.assign(schedule.scratch_bytes, 0xCD);  // garbage: results must not read it
      state.chunk_bytes = EffectiveChunkBytes(options_.chunk_bytes, schedule.element_size);
      state.done.assign(schedule.steps.size(), 0);
      state.chunks.assign(schedule.steps.size(), 0);
      for (uint32_t s = 0; s < schedule.steps.size(); ++s) {
        const Step& step = schedule.steps[s];
        state.chunks[s] = (step.bytes + state.chunk_bytes - 1) / state.chunk_bytes;
        std::string error = CheckBounds(r, step);
        if (!error.empty())
          return "rank " + std::to_string(r) + " step " + std::to_string(s) + ": " + error + "\n" +
                 DescribeSchedule(schedule);
        if (step.kind == StepKind::kSend) sends_[r * p_ + step.peer].steps.push_back(s);
        if (step.kind == StepKind::kRecv || step.kind == StepKind::kRecvReduce) {
          recvs_[step.peer * p_ + r].steps.push_back(s);
        }
      }
    }
    return "";
  }

  std::string CheckBounds(int rank, const Step& step) const {
    const bool message =
        step.kind == StepKind::kSend || step.kind == StepKind::kRecv || step.kind == StepKind::kRecvReduce;
    if (message && (step.peer < 0 || step.peer >= p_ || step.peer == rank)) return "bad peer";
    auto in_bounds = [&](BufferRange range) {
      size_t size = 0;
      switch (range.buffer) {
        case BufferId::kSend:
          size = memory_[rank].send ? memory_[rank].send_bytes : 0;
          break;
        case BufferId::kRecv:
          size = memory_[rank].recv ? memory_[rank].recv_bytes : 0;
          break;
        case BufferId::kScratch:
          size = schedules_[rank].scratch_bytes;
          break;
      }
      return range.offset <= size && step.bytes <= size - range.offset;
    };
    if (step.kind != StepKind::kRecv && !in_bounds(step.src)) return "src out of bounds";
    if (step.kind == StepKind::kReduce && !in_bounds(step.src2)) return "src2 out of bounds";
    if (step.kind != StepKind::kSend && !in_bounds(step.dst)) return "dst out of bounds";
    return "";
  }

  uint8_t* Address(int rank, BufferRange range, size_t within) {
    switch (range.buffer) {
      case BufferId::kSend:
        return memory_[rank].send + range.offset + within;
      case BufferId::kRecv:
        return memory_[rank].recv + range.offset + within;
      case BufferId::kScratch:
        return ranks_[rank].scratch.data() + range.offset + within;
    }
    return nullptr;
  }

  bool Complete(int rank, uint32_t step) const { return ranks_[rank].done[step] == ranks_[rank].chunks[step]; }

  // Chunk [begin, end) of a step.
  std::pair<size_t, size_t> ChunkRange(int rank, uint32_t step, size_t chunk) const {
    const size_t size = ranks_[rank].chunk_bytes;
    const size_t begin = chunk * size;
    return {begin, std::min(begin + size, schedules_[rank].steps[step].bytes)};
  }

  bool DepsReady(int rank, uint32_t step, size_t chunk) const {
    const RankState& state = ranks_[rank];
    const Step& self = schedules_[rank].steps[step];
    for (uint32_t dep : self.deps) {
      if (dep >= step) return false;  // the static checker reports it
      const bool prefix = schedules_[rank].steps[dep].bytes == self.bytes;
      const size_t needed = prefix ? chunk + 1 : state.chunks[dep];
      if (state.done[dep] < needed) return false;
    }
    return true;
  }

  void Finish(int rank, uint32_t step, Channel* channel) {
    if (++ranks_[rank].done[step] == ranks_[rank].chunks[step] && channel) ++channel->cursor;
  }

  // Delivers `data` (one chunk) into a receive step's chunk.
  void Deliver(int rank, uint32_t step, size_t chunk, const uint8_t* data) {
    const Step& self = schedules_[rank].steps[step];
    const auto [begin, end] = ChunkRange(rank, step, chunk);
    uint8_t* dst = Address(rank, self.dst, begin);
    if (self.kind == StepKind::kRecv) {
      std::memmove(dst, data, end - begin);
    } else {
      Reduce(rank, dst, Address(rank, self.src, begin), data, end - begin);
    }
  }

  void Reduce(int rank, uint8_t* dst, const uint8_t* a, const uint8_t* b, size_t bytes) {
    const Schedule& schedule = schedules_[rank];
    if (!ReferenceReduce(dst, a, b, bytes / schedule.element_size, schedule.dtype, schedule.op)) {
      error_ = "reference reduce does not support this dtype";
    }
  }

  bool LengthsMatch(int from, uint32_t send_step, size_t send_chunk, int to, uint32_t recv_step, size_t recv_chunk,
                    size_t sent_bytes) {
    const auto [begin, end] = ChunkRange(to, recv_step, recv_chunk);
    if (end - begin == sent_bytes) return true;
    std::ostringstream out;
    out << "chunk length mismatch: rank " << from << " step " << send_step << " chunk " << send_chunk << " sends "
        << sent_bytes << " bytes but rank " << to << " step " << recv_step << " chunk " << recv_chunk << " expects "
        << (end - begin) << " bytes\nsender:\n"
        << DescribeSchedule(schedules_[from]) << "receiver:\n"
        << DescribeSchedule(schedules_[to]);
    error_ = out.str();
    return false;
  }

  bool TryRun(int rank, uint32_t step) {
    const Step& self = schedules_[rank].steps[step];
    const size_t chunk = ranks_[rank].done[step];
    if (!DepsReady(rank, step, chunk)) return false;
    const auto [begin, end] = ChunkRange(rank, step, chunk);
    switch (self.kind) {
      case StepKind::kCopy:
        std::memmove(Address(rank, self.dst, begin), Address(rank, self.src, begin), end - begin);
        Finish(rank, step, nullptr);
        return true;
      case StepKind::kReduce:
        Reduce(rank, Address(rank, self.dst, begin), Address(rank, self.src, begin), Address(rank, self.src2, begin),
               end - begin);
        Finish(rank, step, nullptr);
        return true;
      case StepKind::kSend:
        return TrySend(rank, step, chunk, begin, end);
      case StepKind::kRecv:
      case StepKind::kRecvReduce:
        return TryRecv(rank, step, chunk);
    }
    return false;
  }

  bool TrySend(int rank, uint32_t step, size_t chunk, size_t begin, size_t end) {
    const int to = schedules_[rank].steps[step].peer;
    Channel& out = sends_[rank * p_ + to];
    if (out.steps[out.cursor] != step) return false;  // an earlier send to `to` goes first
    const uint8_t* data = Address(rank, schedules_[rank].steps[step].src, begin);
    if (!options_.rendezvous) {
      queues_[rank * p_ + to].push_back(Message{{data, data + (end - begin)}, step, chunk});
      Finish(rank, step, &out);
      return true;
    }
    Channel& in = recvs_[rank * p_ + to];
    if (in.cursor >= in.steps.size()) return false;  // unmatched: reported as deadlock
    const uint32_t recv_step = in.steps[in.cursor];
    const size_t recv_chunk = ranks_[to].done[recv_step];
    if (!DepsReady(to, recv_step, recv_chunk)) return false;
    if (!LengthsMatch(rank, step, chunk, to, recv_step, recv_chunk, end - begin)) return false;
    Deliver(to, recv_step, recv_chunk, data);
    Finish(rank, step, &out);
    Finish(to, recv_step, &in);
    return true;
  }

  bool TryRecv(int rank, uint32_t step, size_t chunk) {
    const int from = schedules_[rank].steps[step].peer;
    Channel& in = recvs_[from * p_ + rank];
    if (in.steps[in.cursor] != step) return false;  // an earlier receive from `from` goes first
    if (!options_.rendezvous) {
      std::deque<Message>& queue = queues_[from * p_ + rank];
      if (queue.empty()) return false;
      const Message& message = queue.front();
      if (!LengthsMatch(from, message.step, message.chunk, rank, step, chunk, message.data.size())) {
        return false;
      }
      Deliver(rank, step, chunk, message.data.data());
      queue.pop_front();
      Finish(rank, step, &in);
      return true;
    }
    Channel& out = sends_[from * p_ + rank];
    if (out.cursor >= out.steps.size()) return false;
    const uint32_t send_step = out.steps[out.cursor];
    const size_t send_chunk = ranks_[from].done[send_step];
    if (!DepsReady(from, send_step, send_chunk)) return false;
    const auto [begin, end] = ChunkRange(from, send_step, send_chunk);
    if (!LengthsMatch(from, send_step, send_chunk, rank, step, chunk, end - begin)) return false;
    Deliver(rank, step, chunk, Address(from, schedules_[from].steps[send_step].src, begin));
    Finish(from, send_step, &out);
    Finish(rank, step, &in);
    return true;
  }

  std::string DescribeDeadlock(const std::vector<std::pair<int, uint32_t>>& pending) const {
    std::ostringstream out;
    out << "deadlock (" << (options_.rendezvous ? "rendezvous" : "eager") << ", chunk " << options_.chunk_bytes
        << " bytes): no step can progress; pending:";
    std::vector<bool> involved(p_, false);
    for (const auto& [rank, step] : pending) {
      if (Complete(rank, step)) continue;
      out << " r" << rank << "#" << step << "(" << ranks_[rank].done[step] << "/" << ranks_[rank].chunks[step] << ")";
      involved[rank] = true;
    }
    out << '\n';
    int shown = 0;
    for (int r = 0; r < p_ && shown < 4; ++r) {
      if (!involved[r]) continue;
      out << "rank " << r << ":\n" << DescribeSchedule(schedules_[r]);
      ++shown;
    }
    return out.str();
  }

  const std::vector<Schedule>& schedules_;
  const std::vector<RankMemory>& memory_;
  const VirtualRunOptions options_;
  const int p_;
  std::mt19937_64 rng_;
  std::vector<RankState> ranks_;
  std::vector<Channel> sends_;  // [from * p + to]
  std::vector<Channel> recvs_;  // [from * p + to], on the receiver
  std::vector<std::deque<Message>> queues_;
  std::string error_;
};

}  // namespace

std::string RunVirtualRanks(const std::vector<Schedule>& schedules, const std::vector<RankMemory>& memory,
                            const VirtualRunOptions& options) {
  if (memory.size() != schedules.size()) return "one RankMemory per schedule is required";
  VirtualRun run(schedules, memory, options);
  return run.Run();
}

}  // namespace chorus::testing
