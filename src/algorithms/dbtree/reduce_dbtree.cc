// Double binary tree Reduce: half t of the vector is reduced up tree t to its
// top, which hands it to the root; the root folds in its own input. Non-root
// ranks accumulate in scratch (NCCL lets them pass no receive buffer).
// Segment s of both halves goes before segment s+1 (args.segment_bytes).
#include "algorithms/builders.h"
#include "algorithms/dbtree/rooted_double_tree.h"
#include "algorithms/schedule_builder.h"
#include "algorithms/segments.h"

namespace chorus {

Status BuildDoubleTreeReduce(const CollectiveArgs& args, Schedule* out) {
  ScheduleBuilder builder(args, Algorithm::kDoubleBinaryTree, out);
  const size_t es = builder.element_size();
  const BinaryTreeNode nodes[2] = {RootedDoubleTreeNode(0, args.rank, args.root, args.nranks),
                                   RootedDoubleTreeNode(1, args.rank, args.root, args.nranks)};
  const Segment halves[2] = {EvenSegment(args.count, 2, 0), EvenSegment(args.count, 2, 1)};
  const size_t segment = PipelineSegmentBytes(args.segment_bytes, es, halves[0].count * es);
  const size_t rounds = PipelineSegmentCount(halves[0].count * es, segment);  // the larger half
  const BufferId accumulator = args.rank == args.root ? BufferId::kRecv : BufferId::kScratch;

  for (size_t s = 0; s < rounds; ++s) {
    for (int t = 0; t < 2; ++t) {
      const ByteRange part = PipelineSegment(halves[t].count * es, segment, s);
      const size_t offset = halves[t].offset * es + part.offset;
      const BufferRange sum{accumulator, offset};
      BufferRange partial{BufferId::kSend, offset};
      for (int child : nodes[t].children) {
        builder.RecvReduce(child, partial, sum, part.bytes);
        partial = sum;
      }
      if (nodes[t].parent >= 0) builder.Send(nodes[t].parent, partial, part.bytes);
    }
  }
  return builder.Finish();
}

}  // namespace chorus
