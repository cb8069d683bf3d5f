// Binomial-tree Broadcast from any root: each rank receives from its parent
// and forwards to its children, largest subtree first so the deepest branch
// starts earliest: ceil(log2 p) rounds. Full-length steps (or
// args.segment_bytes segments) with prefix dependencies let every edge
// pipeline chunk by chunk.
#include "algorithms/builders.h"
#include "algorithms/schedule_builder.h"
#include "algorithms/segments.h"
#include "algorithms/tree/binomial_tree.h"

namespace chorus {

Status BuildTreeBroadcast(const CollectiveArgs& args, Schedule* out) {
  ScheduleBuilder builder(args, Algorithm::kTree, out);
  const BinomialNode node = BinomialTreeNode(args.rank, args.root, args.nranks);
  const size_t bytes = args.count * builder.element_size();

  ForEachPipelineSegment(args.segment_bytes, builder.element_size(), bytes, [&](const ByteRange& part) {
    const BufferRange recv{BufferId::kRecv, part.offset};
    BufferRange source = recv;
    if (node.parent < 0) {
      source = BufferRange{BufferId::kSend, part.offset};
    } else {
      builder.Recv(node.parent, recv, part.bytes);
    }
    for (auto child = node.children.rbegin(); child != node.children.rend(); ++child) {
      builder.Send(*child, source, part.bytes);
    }
    if (node.parent < 0) builder.Copy(source, recv, part.bytes);
  });
  return builder.Finish();
}

}  // namespace chorus
