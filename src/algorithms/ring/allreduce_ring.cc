// Ring AllReduce: a ring reduce-scatter followed by a ring allgather, each
// p-1 steps over p segments, so every rank sends 2(p-1)/p of the buffer.
// Segment j is reduced along the ring starting at rank j and ends fully
// reduced on rank j-1, which starts passing it on in the allgather.
#include <numeric>
#include <vector>

#include "algorithms/builders.h"
#include "algorithms/ring/ring_phases.h"
#include "algorithms/schedule_builder.h"

namespace chorus {

Status BuildRingAllReduce(const CollectiveArgs& args, Schedule* out) {
  ScheduleBuilder builder(args, Algorithm::kRing, out);
  std::vector<int> ring(static_cast<size_t>(args.nranks));
  std::iota(ring.begin(), ring.end(), 0);
  const RingRange whole{&ring, args.rank, 0, args.count};
  AppendRingReduceScatter(builder, whole, BufferId::kSend);
  AppendRingAllGather(builder, whole);
  return builder.Finish();
}

}  // namespace chorus
