// Binomial-tree AllReduce (FireCaffe's reduction tree): a tree reduce to rank
// 0 followed by a tree broadcast from rank 0, 2*ceil(log2 p) rounds in all,
// the latency-optimal choice for small buffers. Every rank accumulates in its
// own receive buffer. Steps are full length: the root starts broadcasting
// chunk k as soon as chunk k is fully reduced, so both phases pipeline.
#include "algorithms/builders.h"
#include "algorithms/schedule_builder.h"
#include "algorithms/tree/binomial_tree.h"

namespace chorus {

Status BuildTreeAllReduce(const CollectiveArgs& args, Schedule* out) {
  ScheduleBuilder builder(args, "tree", out);
  const BinomialNode node = BinomialTreeNode(args.rank, /*root=*/0, args.nranks);
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
    builder.Copy(partial, recv, bytes);  // only when the root has no children
  }
  for (auto child = node.children.rbegin(); child != node.children.rend(); ++child) {
    builder.Send(*child, recv, bytes);
  }
  return builder.Finish();
}

}  // namespace chorus
