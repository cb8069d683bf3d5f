#include "algorithms/ring/ring_phases.h"

namespace chorus {

namespace {

Segment SegmentOf(const RingRange& range, int index) {
  const int n = static_cast<int>(range.ranks->size());
  Segment segment = EvenSegment(range.count, static_cast<size_t>(n), static_cast<size_t>(((index % n) + n) % n));
  segment.offset += range.offset;
  return segment;
}

}  // namespace

Segment RingOwnedSegment(const RingRange& range, int position) { return SegmentOf(range, position + 1); }

void AppendRingReduceScatter(ScheduleBuilder& builder, const RingRange& range, BufferId first_src) {
  const std::vector<int>& ranks = *range.ranks;
  const int n = static_cast<int>(ranks.size());
  const int i = range.position;
  const size_t es = builder.element_size();
  auto at = [&](BufferId buffer, const Segment& s) { return BufferRange{buffer, s.offset * es}; };
  if (n == 1) {
    builder.Copy(BufferRange{first_src, range.offset * es}, BufferRange{BufferId::kRecv, range.offset * es},
                 range.count * es);
    return;
  }
  const int next = ranks[(i + 1) % n];
  const int prev = ranks[(i - 1 + n) % n];
  for (int s = 0; s < n - 1; ++s) {
    const Segment outgoing = SegmentOf(range, i - s);
    builder.Send(next, at(s == 0 ? first_src : BufferId::kRecv, outgoing), outgoing.count * es);
    const Segment incoming = SegmentOf(range, i - s - 1);
    builder.RecvReduce(prev, at(first_src, incoming), at(BufferId::kRecv, incoming), incoming.count * es);
  }
}

void AppendRingAllGather(ScheduleBuilder& builder, const RingRange& range) {
  const std::vector<int>& ranks = *range.ranks;
  const int n = static_cast<int>(ranks.size());
  if (n == 1) return;
  const int i = range.position;
  const size_t es = builder.element_size();
  const int next = ranks[(i + 1) % n];
  const int prev = ranks[(i - 1 + n) % n];
  for (int t = 0; t < n - 1; ++t) {
    const Segment outgoing = SegmentOf(range, i + 1 - t);
    builder.Send(next, BufferRange{BufferId::kRecv, outgoing.offset * es}, outgoing.count * es);
    const Segment incoming = SegmentOf(range, i - t);
    builder.Recv(prev, BufferRange{BufferId::kRecv, incoming.offset * es}, incoming.count * es);
  }
}

}  // namespace chorus
