#include "algorithms/schedule_builder.h"

#include <algorithm>

namespace chorus {

namespace {

bool IsGatherLayout(Collective coll) { return coll == Collective::kAllGather || coll == Collective::kGather; }
bool IsScatterLayout(Collective coll) { return coll == Collective::kReduceScatter || coll == Collective::kScatter; }

}  // namespace

ScheduleBuilder::ScheduleBuilder(const CollectiveArgs& args, Algorithm algorithm, Schedule* schedule)
    : schedule_(schedule), element_size_(DataTypeSize(args.dtype)) {
  schedule_->steps.clear();
  schedule_->scratch_bytes = 0;
  schedule_->element_size = element_size_;
  schedule_->dtype = args.dtype;
  schedule_->op = args.op;
  schedule_->algorithm = AlgorithmName(algorithm);
  if (args.in_place) {
    // One user allocation; the rank's own block is where the other buffer
    // starts (NCCL's in-place layout).
    recv_space_ = send_space_;
    const uint64_t block = static_cast<uint64_t>(args.count) * element_size_;
    const uint64_t own = block * static_cast<uint64_t>(args.rank);
    if (IsGatherLayout(args.coll)) send_base_ = own;
    if (IsScatterLayout(args.coll)) recv_base_ = own;
  }
}

ScheduleBuilder::Resolved ScheduleBuilder::Resolve(BufferRange range, size_t bytes) const {
  Resolved out;
  uint64_t base = 0;
  switch (range.buffer) {
    case BufferId::kSend:
      out.space = send_space_;
      base = send_base_;
      break;
    case BufferId::kRecv:
      out.space = recv_space_;
      base = recv_base_;
      break;
    case BufferId::kScratch:
      out.space = kScratchSpace;
      break;
  }
  out.begin = base + range.offset;
  out.end = out.begin + bytes;
  return out;
}

int64_t ScheduleBuilder::Send(int peer, BufferRange src, size_t bytes) {
  Step step;
  step.kind = StepKind::kSend;
  step.peer = peer;
  step.src = src;
  step.bytes = bytes;
  return Append(std::move(step), {src}, false);
}

int64_t ScheduleBuilder::Recv(int peer, BufferRange dst, size_t bytes) {
  Step step;
  step.kind = StepKind::kRecv;
  step.peer = peer;
  step.dst = dst;
  step.bytes = bytes;
  return Append(std::move(step), {}, true);
}

int64_t ScheduleBuilder::RecvReduce(int peer, BufferRange src, BufferRange dst, size_t bytes) {
  Step step;
  step.kind = StepKind::kRecvReduce;
  step.peer = peer;
  step.src = src;
  step.dst = dst;
  step.bytes = bytes;
  return Append(std::move(step), {src}, true);
}

void ScheduleBuilder::After(int64_t step, int64_t earlier) {
  if (step == kNoStep || earlier == kNoStep) return;
  if (earlier >= step) {
    if (status_.ok())
      status_ = InternalError("step ", step, " cannot wait for step ", earlier, ", which is not earlier");
    return;
  }
  std::vector<uint32_t>& deps = schedule_->steps[static_cast<size_t>(step)].deps;
  const auto at = std::lower_bound(deps.begin(), deps.end(), static_cast<uint32_t>(earlier));
  if (at == deps.end() || *at != static_cast<uint32_t>(earlier)) deps.insert(at, static_cast<uint32_t>(earlier));
}

void ScheduleBuilder::Pace(int64_t step) {
  if (step == kNoStep) return;
  Step& marked = schedule_->steps[static_cast<size_t>(step)];
  if (marked.kind == StepKind::kRecv || marked.kind == StepKind::kRecvReduce) {
    marked.paced = true;
  } else if (status_.ok()) {
    status_ = InternalError("step ", step, " is paced but is not a receive");
  }
}

int64_t ScheduleBuilder::Copy(BufferRange src, BufferRange dst, size_t bytes) {
  const Resolved from = Resolve(src, bytes);
  const Resolved to = Resolve(dst, bytes);
  if (from.space == to.space && from.begin == to.begin) return kNoStep;  // in place
  if (from.space == to.space && from.begin < to.end && to.begin < from.end && status_.ok()) {
    status_ = InternalError("copy between partially overlapping ranges");
  }
  Step step;
  step.kind = StepKind::kCopy;
  step.src = src;
  step.dst = dst;
  step.bytes = bytes;
  return Append(std::move(step), {src}, true);
}

int64_t ScheduleBuilder::Reduce(BufferRange src, BufferRange src2, BufferRange dst, size_t bytes) {
  Step step;
  step.kind = StepKind::kReduce;
  step.src = src;
  step.src2 = src2;
  step.dst = dst;
  step.bytes = bytes;
  return Append(std::move(step), {src, src2}, true);
}

int64_t ScheduleBuilder::Append(Step step, const std::vector<BufferRange>& reads, bool writes) {
  if (step.bytes == 0) return kNoStep;
  const auto self = static_cast<uint32_t>(schedule_->steps.size());
  std::vector<Resolved> accesses;
  for (const BufferRange& range : reads) accesses.push_back(Resolve(range, step.bytes));
  if (writes) {
    accesses.push_back(Resolve(step.dst, step.bytes));
    accesses.back().write = true;
  }

  std::vector<uint32_t> deps;
  for (const Resolved& access : accesses) CollectHazards(access, self, &deps);
  std::sort(deps.begin(), deps.end());
  deps.erase(std::unique(deps.begin(), deps.end()), deps.end());
  for (uint32_t dep : deps) CheckPrefixDependency(step, accesses, dep);
  step.deps = std::move(deps);
  touched_.push_back(accesses);

  for (size_t i = 0; i < accesses.size(); ++i) {
    RecordAccess(accesses[i], self);
    if (accesses[i].space == kScratchSpace) {
      schedule_->scratch_bytes = std::max<size_t>(schedule_->scratch_bytes, static_cast<size_t>(accesses[i].end));
    }
  }
  schedule_->steps.push_back(std::move(step));
  return self;
}

void ScheduleBuilder::SplitAt(IntervalMap& map, uint64_t at) {
  auto it = map.upper_bound(at);
  if (it == map.begin()) return;
  --it;
  if (it->first == at || it->second.end <= at) return;
  Interval tail = it->second;
  it->second.end = at;
  map.emplace(at, std::move(tail));
}

void ScheduleBuilder::CollectHazards(const Resolved& access, uint32_t self, std::vector<uint32_t>* deps) {
  IntervalMap& map = spaces_[access.space];
  SplitAt(map, access.begin);
  SplitAt(map, access.end);
  for (auto it = map.lower_bound(access.begin); it != map.end() && it->first < access.end; ++it) {
    const Interval& interval = it->second;
    if (interval.writer != kNoStep && interval.writer != self) {
      deps->push_back(static_cast<uint32_t>(interval.writer));
    }
    if (access.write) {
      for (uint32_t reader : interval.readers) {
        if (reader != self) deps->push_back(reader);
      }
    }
  }
}

void ScheduleBuilder::RecordAccess(const Resolved& access, uint32_t self) {
  IntervalMap& map = spaces_[access.space];
  SplitAt(map, access.begin);
  SplitAt(map, access.end);
  if (access.write) {
    map.erase(map.lower_bound(access.begin), map.lower_bound(access.end));
    Interval written;
    written.end = access.end;
    written.writer = self;
    map.emplace(access.begin, std::move(written));
    return;
  }
  uint64_t cursor = access.begin;
  auto it = map.lower_bound(access.begin);
  while (cursor < access.end) {
    if (it == map.end() || it->first > cursor) {
      // Bytes nobody touched yet: a new interval read by this step.
      Interval read;
      read.end = (it == map.end()) ? access.end : std::min(access.end, it->first);
      read.readers.push_back(self);
      const uint64_t gap_end = read.end;
      map.emplace_hint(it, cursor, std::move(read));
      cursor = gap_end;
      continue;  // `it` still names the next existing interval
    }
    it->second.readers.push_back(self);
    cursor = it->second.end;
    ++it;
  }
}

// The executor treats a dependency of equal length as a prefix dependency:
// chunk k of the step waits only for chunks 0..k of the dependency. That is
// enough exactly when every conflicting byte sits at the same or an earlier
// position within the dependency than within the step.
void ScheduleBuilder::CheckPrefixDependency(const Step& step, const std::vector<Resolved>& accesses, uint32_t dep) {
  if (schedule_->steps[dep].bytes != step.bytes) return;  // waits for all of it
  for (const Resolved& mine : accesses) {
    for (const Resolved& theirs : touched_[dep]) {
      const bool overlap = mine.space == theirs.space && mine.begin < theirs.end && theirs.begin < mine.end;
      if (overlap && (mine.write || theirs.write) && mine.begin > theirs.begin && status_.ok()) {
        status_ = InternalError("step ", schedule_->steps.size(), " needs all of step ", dep,
                                " but an equal-length dependency only orders a prefix");
      }
    }
  }
}

Status ScheduleBuilder::Finish() { return status_; }

}  // namespace chorus
