// Hierarchical AllReduce ("hier"), three phases over args.topology:
//  1. inside each host, a binomial-tree reduce of the local ranks to the
//     host's leader (its lowest rank), over the ranks ordered by group
//     (Topology::group_of_rank, NUMA domains) when there are groups;
//  2. a ring allreduce among the H leaders, the only traffic between hosts:
//     each leader sends 2(H-1)/H of the vector across hosts;
//  3. inside each host, a binomial-tree broadcast from the leader.
// One host degenerates to tree reduce + tree broadcast, one rank per host to
// a ring over all ranks. Everything accumulates in kRecv; phase boundaries
// are steps of different lengths, so each phase waits for the previous one
// to finish on the bytes it touches (no cross-phase pipelining).
#include <algorithm>

#include "algorithms/builders.h"
#include "algorithms/hier/hierarchical.h"
#include "algorithms/ring/ring_phases.h"
#include "algorithms/schedule_builder.h"
#include "algorithms/topology.h"
#include "algorithms/tree/binomial_tree.h"

namespace chorus {

Status BuildHierarchicalAllReduceNamed(const CollectiveArgs& args, Algorithm algorithm, Schedule* out) {
  ScheduleBuilder builder(args, algorithm, out);
  const HostLayout layout(args.topology, args.nranks);
  const int host = layout.host_of(args.rank);
  // With groups below the host (NUMA domains) each group is contiguous, so
  // the binomial tree's subtrees stay inside a group where sizes allow.
  const std::vector<int> local = GroupOrderedLocalRanks(args.topology, layout, host);
  const int local_count = static_cast<int>(local.size());
  const int local_index = static_cast<int>(std::find(local.begin(), local.end(), args.rank) - local.begin());
  // The tree works on local indices (root 0 = the leader); map back to ranks.
  BinomialNode node = BinomialTreeNode(local_index, /*root=*/0, local_count);
  if (node.parent >= 0) node.parent = local[node.parent];
  for (int& child : node.children) child = local[child];

  const size_t bytes = args.count * builder.element_size();
  const BufferRange recv{BufferId::kRecv, 0};
  BufferRange partial{BufferId::kSend, 0};
  for (int child : node.children) {
    builder.RecvReduce(child, partial, recv, bytes);
    partial = recv;
  }
  if (node.parent >= 0) {
    builder.Send(node.parent, partial, bytes);
    builder.Recv(node.parent, recv, bytes);
  } else {
    builder.Copy(partial, recv, bytes);  // only when the leader is alone on its host
    std::vector<int> leaders;
    for (int h = 0; h < layout.host_count(); ++h) leaders.push_back(layout.leader(h));
    const RingRange ring{&leaders, host, 0, args.count};
    if (leaders.size() > 1) {
      AppendRingReduceScatter(builder, ring, BufferId::kRecv);
      AppendRingAllGather(builder, ring);
    }
  }
  for (auto child = node.children.rbegin(); child != node.children.rend(); ++child) {
    builder.Send(*child, recv, bytes);
  }
  return builder.Finish();
}

Status BuildHierarchicalAllReduce(const CollectiveArgs& args, Schedule* out) {
  return BuildHierarchicalAllReduceNamed(args, Algorithm::kHierarchical, out);
}

}  // namespace chorus
