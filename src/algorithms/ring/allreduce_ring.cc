// Ring AllReduce: a ring reduce-scatter followed by a ring allgather, each
// p-1 steps over p segments, so every rank sends 2(p-1)/p of the buffer.
// Segment j is reduced along the ring starting at rank j and ends fully
// reduced on rank j-1, which starts passing it on in the allgather.
#include "algorithms/builders.h"
#include "algorithms/schedule_builder.h"
#include "algorithms/segments.h"

namespace chorus {

Status BuildRingAllReduce(const CollectiveArgs& args, Schedule* out) {
  ScheduleBuilder builder(args, Algorithm::kRing, out);
  const int p = args.nranks;
  const int r = args.rank;
  const int next = (r + 1) % p;
  const int prev = (r - 1 + p) % p;
  const size_t es = builder.element_size();
  auto segment = [&](int index) { return EvenSegment(args.count, p, ((index % p) + p) % p); };
  auto at = [&](BufferId buffer, const Segment& s) { return BufferRange{buffer, s.offset * es}; };

  // Reduce-scatter: at step s send segment r-s (our own input at s = 0, the
  // partial sum received at s-1 afterwards) and fold in segment r-s-1.
  for (int s = 0; s < p - 1; ++s) {
    const Segment outgoing = segment(r - s);
    builder.Send(next, at(s == 0 ? BufferId::kSend : BufferId::kRecv, outgoing), outgoing.count * es);
    const Segment incoming = segment(r - s - 1);
    builder.RecvReduce(prev, at(BufferId::kSend, incoming), at(BufferId::kRecv, incoming), incoming.count * es);
  }
  // Allgather: we now own the full segment r+1; pass segments around.
  for (int t = 0; t < p - 1; ++t) {
    const Segment outgoing = segment(r + 1 - t);
    builder.Send(next, at(BufferId::kRecv, outgoing), outgoing.count * es);
    const Segment incoming = segment(r - t);
    builder.Recv(prev, at(BufferId::kRecv, incoming), incoming.count * es);
  }
  return builder.Finish();
}

}  // namespace chorus
