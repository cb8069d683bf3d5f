// Binomial-tree Reduce (FireCaffe's reduction tree) to any root: each rank
// folds in its children's partial results, smallest subtree first, then
// passes its own partial result to its parent: ceil(log2 p) rounds. Steps are
// full length (or args.segment_bytes segments), so the executor pipelines
// every edge of the tree chunk by chunk. Non-root ranks accumulate in
// scratch: NCCL lets them pass no receive buffer.
#include "algorithms/builders.h"
#include "algorithms/schedule_builder.h"
#include "algorithms/segments.h"
#include "algorithms/tree/binomial_tree.h"

namespace chorus {

Status BuildTreeReduce(const CollectiveArgs& args, Schedule* out) {
  ScheduleBuilder builder(args, Algorithm::kTree, out);
  const BinomialNode node = BinomialTreeNode(args.rank, args.root, args.nranks);
  const size_t bytes = args.count * builder.element_size();
  const BufferId accumulator = node.parent < 0 ? BufferId::kRecv : BufferId::kScratch;

  ForEachPipelineSegment(args.segment_bytes, builder.element_size(), bytes, [&](const ByteRange& part) {
    BufferRange partial{BufferId::kSend, part.offset};
    for (int child : node.children) {
      builder.Pace(builder.RecvReduce(child, partial, BufferRange{accumulator, part.offset}, part.bytes));
      partial = BufferRange{accumulator, part.offset};
    }
    if (node.parent >= 0) {
      builder.Send(node.parent, partial, part.bytes);
    } else {
      builder.Copy(partial, BufferRange{accumulator, part.offset}, part.bytes);  // root without children
    }
  });
  return builder.Finish();
}

}  // namespace chorus
