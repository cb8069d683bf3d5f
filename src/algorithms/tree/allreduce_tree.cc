// Binomial-tree AllReduce (FireCaffe's reduction tree): a tree reduce to rank
// 0 followed by a tree broadcast from rank 0, 2*ceil(log2 p) rounds in all,
// the latency-optimal choice for small buffers. Every rank accumulates in its
// own receive buffer. Steps are full length (or cut into args.segment_bytes
// segments, each reduced then broadcast): the root starts broadcasting chunk
// k as soon as chunk k is fully reduced, so both phases pipeline. The
// reduce phase's receives are paced (schedule.h rule 5): data only flows up
// in it, so a parent never reads one child far ahead of what it can fold.
#include "algorithms/builders.h"
#include "algorithms/schedule_builder.h"
#include "algorithms/segments.h"
#include "algorithms/tree/binomial_tree.h"

namespace chorus {

Status BuildTreeAllReduce(const CollectiveArgs& args, Schedule* out) {
  ScheduleBuilder builder(args, Algorithm::kTree, out);
  const BinomialNode node = BinomialTreeNode(args.rank, /*root=*/0, args.nranks);
  const size_t bytes = args.count * builder.element_size();

  ForEachPipelineSegment(args.segment_bytes, builder.element_size(), bytes, [&](const ByteRange& part) {
    const BufferRange recv{BufferId::kRecv, part.offset};
    BufferRange partial{BufferId::kSend, part.offset};
    for (int child : node.children) {
      builder.Pace(builder.RecvReduce(child, partial, recv, part.bytes));  // fan-in: schedule.h rule 5
      partial = recv;
    }
    if (node.parent >= 0) {
      builder.Send(node.parent, partial, part.bytes);
      builder.Recv(node.parent, recv, part.bytes);
    } else {
      builder.Copy(partial, recv, part.bytes);  // only when the root has no children
    }
    for (auto child = node.children.rbegin(); child != node.children.rend(); ++child) {
      builder.Send(*child, recv, part.bytes);
    }
  });
  return builder.Finish();
}

}  // namespace chorus
