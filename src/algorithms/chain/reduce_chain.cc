// Pipelined chain Reduce: root+1 -> root+2 -> ... -> root-1 -> root, each hop
// folding in its own input with RecvReduce, the data cut into
// args.segment_bytes segments so that every hop works on a different segment
// at once. Non-root ranks never touch their receive buffer (NCCL lets them
// pass none), so they accumulate in scratch.
#include "algorithms/builders.h"
#include "algorithms/schedule_builder.h"
#include "algorithms/segments.h"

namespace chorus {

Status BuildChainReduce(const CollectiveArgs& args, Schedule* out) {
  ScheduleBuilder builder(args, Algorithm::kChain, out);
  const int p = args.nranks;
  const int position = (args.rank - args.root - 1 + 2 * p) % p;  // p-1 at the root
  const int next = (args.rank + 1) % p;
  const int prev = (args.rank - 1 + p) % p;
  const size_t bytes = args.count * builder.element_size();

  ForEachPipelineSegment(args.segment_bytes, builder.element_size(), bytes, [&](const ByteRange& part) {
    const BufferRange send{BufferId::kSend, part.offset};
    if (position == 0) {
      builder.Send(next, send, part.bytes);
    } else if (position < p - 1) {
      const BufferRange partial{BufferId::kScratch, part.offset};
      builder.RecvReduce(prev, send, partial, part.bytes);
      builder.Send(next, partial, part.bytes);
    } else {
      builder.RecvReduce(prev, send, BufferRange{BufferId::kRecv, part.offset}, part.bytes);
    }
  });
  return builder.Finish();
}

}  // namespace chorus
