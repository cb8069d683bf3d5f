// Binomial-tree Reduce (FireCaffe's reduction tree) to any root: each rank
// folds in its children's partial results, smallest subtree first, then
// passes its own partial result to its parent: ceil(log2 p) rounds. Steps are
// full length, so the executor pipelines every edge of the tree chunk by
// chunk. Non-root ranks accumulate in scratch: NCCL lets them pass no
// receive buffer.
#include "algorithms/builders.h"
#include "algorithms/schedule_builder.h"
#include "algorithms/tree/binomial_tree.h"

namespace chorus {

Status BuildTreeReduce(const CollectiveArgs& args, Schedule* out) {
  ScheduleBuilder builder(args, "tree", out);
  const BinomialNode node = BinomialTreeNode(args.rank, args.root, args.nranks);
  const size_t bytes = args.count * builder.element_size();
  const BufferRange accumulator =
      node.parent < 0 ? BufferRange{BufferId::kRecv, 0} : BufferRange{BufferId::kScratch, 0};

  BufferRange partial{BufferId::kSend, 0};
  for (int child : node.children) {
    builder.RecvReduce(child, partial, accumulator, bytes);
    partial = accumulator;
  }
  if (node.parent >= 0) {
    builder.Send(node.parent, partial, bytes);
  } else {
    builder.Copy(partial, accumulator, bytes);  // only when the root has no children
  }
  return builder.Finish();
}

}  // namespace chorus
