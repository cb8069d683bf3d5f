// Double binary tree Reduce: half t of the vector is reduced up tree t to its
// top, which hands it to the root; the root folds in its own input. Non-root
// ranks accumulate in scratch (NCCL lets them pass no receive buffer).
// Segment s of both halves goes before segment s+1 (args.segment_bytes).
#include "algorithms/builders.h"
#include "algorithms/dbtree/rooted_double_tree.h"
#include "algorithms/schedule_builder.h"

namespace chorus {

Status BuildDoubleTreeReduce(const CollectiveArgs& args, Schedule* out) {
  ScheduleBuilder builder(args, Algorithm::kDoubleBinaryTree, out);
  const BufferId accumulator = args.rank == args.root ? BufferId::kRecv : BufferId::kScratch;
  ForEachRootedDoubleTreeSegment(
      args.rank, args.root, args.nranks, args.count, builder.element_size(), args.segment_bytes,
      [&](const BinaryTreeNode& node, size_t offset, size_t bytes) {
        const BufferRange sum{accumulator, offset};
        BufferRange partial{BufferId::kSend, offset};
        for (int child : node.children) {
          builder.RecvReduce(child, partial, sum, bytes);
          partial = sum;
        }
        if (node.parent >= 0) builder.Send(node.parent, partial, bytes);
      });
  return builder.Finish();
}

}  // namespace chorus
