// Double binary tree Broadcast: the root sends half t of the vector to the
// top of tree t, and every rank forwards each half to its children in that
// half's tree. Segment s of both halves goes before segment s+1
// (args.segment_bytes), so the two trees pipeline side by side.
#include "algorithms/builders.h"
#include "algorithms/dbtree/rooted_double_tree.h"
#include "algorithms/schedule_builder.h"
#include "algorithms/segments.h"

namespace chorus {

Status BuildDoubleTreeBroadcast(const CollectiveArgs& args, Schedule* out) {
  ScheduleBuilder builder(args, Algorithm::kDoubleBinaryTree, out);
  const size_t es = builder.element_size();
  const BinaryTreeNode nodes[2] = {RootedDoubleTreeNode(0, args.rank, args.root, args.nranks),
                                   RootedDoubleTreeNode(1, args.rank, args.root, args.nranks)};
  const Segment halves[2] = {EvenSegment(args.count, 2, 0), EvenSegment(args.count, 2, 1)};
  const size_t segment = PipelineSegmentBytes(args.segment_bytes, es, halves[0].count * es);
  const size_t rounds = PipelineSegmentCount(halves[0].count * es, segment);  // the larger half
  const bool is_root = args.rank == args.root;

  for (size_t s = 0; s < rounds; ++s) {
    for (int t = 0; t < 2; ++t) {
      const ByteRange part = PipelineSegment(halves[t].count * es, segment, s);
      const size_t offset = halves[t].offset * es + part.offset;
      const BufferRange recv{BufferId::kRecv, offset};
      const BufferRange source = is_root ? BufferRange{BufferId::kSend, offset} : recv;
      if (!is_root) builder.Recv(nodes[t].parent, recv, part.bytes);
      for (auto child = nodes[t].children.rbegin(); child != nodes[t].children.rend(); ++child) {
        builder.Send(*child, source, part.bytes);
      }
      if (is_root) builder.Copy(source, recv, part.bytes);
    }
  }
  return builder.Finish();
}

}  // namespace chorus
