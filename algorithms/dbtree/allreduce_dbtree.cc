// Double binary tree AllReduce (NCCL): the vector is split in two halves;
// half t is reduced up tree t to its root and broadcast back down. Each rank
// is interior (receives two, sends one or two) in at most one tree, so every
// link carries about |W| each way instead of the binomial tree's log2(p)*|W|
// at the root, with 2*log2(p) latency. Each half is cut into
// args.segment_bytes segments; segment s of both trees is issued before
// segment s+1, the order both ends of every link agree on.
#include "algorithms/builders.h"
#include "algorithms/dbtree/double_binary_tree.h"
#include "algorithms/schedule_builder.h"
#include "algorithms/segments.h"

namespace chorus {

Status BuildDoubleTreeAllReduce(const CollectiveArgs& args, Schedule* out) {
  ScheduleBuilder builder(args, "dbtree", out);
  const size_t es = builder.element_size();
  const BinaryTreeNode nodes[2] = {DoubleBinaryTreeNode(0, args.rank, args.nranks),
                                   DoubleBinaryTreeNode(1, args.rank, args.nranks)};
  const Segment halves[2] = {EvenSegment(args.count, 2, 0), EvenSegment(args.count, 2, 1)};
  const size_t segment = PipelineSegmentBytes(args.segment_bytes, es, halves[0].count * es);
  const size_t rounds = PipelineSegmentCount(halves[0].count * es, segment);  // the larger half

  for (size_t s = 0; s < rounds; ++s) {
    for (int t = 0; t < 2; ++t) {
      const ByteRange part = PipelineSegment(halves[t].count * es, segment, s);
      const size_t offset = halves[t].offset * es + part.offset;
      const BufferRange recv{BufferId::kRecv, offset};
      const BinaryTreeNode& node = nodes[t];
      BufferRange partial{BufferId::kSend, offset};
      for (int child : node.children) {
        builder.RecvReduce(child, partial, recv, part.bytes);
        partial = recv;
      }
      if (node.parent >= 0) {
        builder.Send(node.parent, partial, part.bytes);
        builder.Recv(node.parent, recv, part.bytes);
      } else {
        builder.Copy(partial, recv, part.bytes);  // only a root without children
      }
      for (auto child = node.children.rbegin(); child != node.children.rend(); ++child) {
        builder.Send(*child, recv, part.bytes);
      }
    }
  }
  return builder.Finish();
}

}  // namespace chorus
