// Sliced hierarchical AllReduce ("hier_sliced"): every local rank carries
// 1/L of the inter-host traffic instead of the leader alone.
//  1. inside each host, a ring reduce-scatter over the L local ranks: local
//     index i ends up owning slice (i+1) mod L reduced over its host;
//  2. for each slice, a ring allreduce among the H ranks with the same local
//     index on every host (one per host), so slice owners exchange only
//     their slice: 2(H-1)/H of |W|/L per rank across hosts;
//  3. inside each host, a ring allgather of the slices.
// Needs the same number of ranks on every host (phase 2 pairs local index i
// across hosts). When hosts differ in size it falls back to the "hier"
// schedule (leaders only), still labelled "hier_sliced", so that forcing it
// never fails. One host degenerates to a ring allreduce over the host, one
// rank per host to a ring over all ranks.
#include "algorithms/builders.h"
#include "algorithms/hier/hierarchical.h"
#include "algorithms/ring/ring_phases.h"
#include "algorithms/schedule_builder.h"
#include "algorithms/topology.h"

namespace chorus {

Status BuildHierarchicalSlicedAllReduce(const CollectiveArgs& args, Schedule* out) {
  const HostLayout layout(args.topology, args.nranks);
  if (!layout.uniform()) return BuildHierarchicalAllReduceNamed(args, Algorithm::kHierarchicalSliced, out);

  ScheduleBuilder builder(args, Algorithm::kHierarchicalSliced, out);
  const int host = layout.host_of(args.rank);
  const int index = layout.local_index(args.rank);
  const RingRange intra{&layout.local_ranks(host), index, 0, args.count};
  AppendRingReduceScatter(builder, intra, BufferId::kSend);

  if (layout.host_count() > 1) {
    std::vector<int> peers;  // local index `index` on every host, in host order
    for (int h = 0; h < layout.host_count(); ++h) peers.push_back(layout.local_ranks(h)[index]);
    const Segment slice = RingOwnedSegment(intra, index);
    const RingRange inter{&peers, host, slice.offset, slice.count};
    AppendRingReduceScatter(builder, inter, BufferId::kRecv);
    AppendRingAllGather(builder, inter);
  }
  AppendRingAllGather(builder, intra);
  return builder.Finish();
}

}  // namespace chorus
