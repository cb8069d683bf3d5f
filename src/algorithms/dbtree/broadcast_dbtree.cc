// Double binary tree Broadcast: the root sends half t of the vector to the
// top of tree t, and every rank forwards each half to its children in that
// half's tree. Segment s of both halves goes before segment s+1
// (args.segment_bytes), so the two trees pipeline side by side.
#include "algorithms/builders.h"
#include "algorithms/dbtree/rooted_double_tree.h"
#include "algorithms/schedule_builder.h"

namespace chorus {

Status BuildDoubleTreeBroadcast(const CollectiveArgs& args, Schedule* out) {
  ScheduleBuilder builder(args, Algorithm::kDoubleBinaryTree, out);
  const bool is_root = args.rank == args.root;
  ForEachRootedDoubleTreeSegment(
      args.rank, args.root, args.nranks, args.count, builder.element_size(), args.segment_bytes,
      [&](const BinaryTreeNode& node, size_t offset, size_t bytes) {
        const BufferRange recv{BufferId::kRecv, offset};
        const BufferRange source = is_root ? BufferRange{BufferId::kSend, offset} : recv;
        if (!is_root) builder.Recv(node.parent, recv, bytes);
        for (auto child = node.children.rbegin(); child != node.children.rend(); ++child) {
          builder.Send(*child, source, bytes);
        }
        if (is_root) builder.Copy(source, recv, bytes);
      });
  return builder.Finish();
}

}  // namespace chorus
