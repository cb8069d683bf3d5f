// Pipelined chain Broadcast: root -> root+1 -> ... -> root-1, the data cut
// into args.segment_bytes segments: a rank forwards segment s while the next
// segment arrives, so the time is about bytes/bandwidth + (p-2)
// segment latencies. With segment_bytes 0 it is the ring broadcast, pipelined
// by the executor's chunking only.
#include "algorithms/builders.h"
#include "algorithms/schedule_builder.h"
#include "algorithms/segments.h"

namespace chorus {

Status BuildChainBroadcast(const CollectiveArgs& args, Schedule* out) {
  ScheduleBuilder builder(args, Algorithm::kChain, out);
  const int p = args.nranks;
  const int position = (args.rank - args.root + p) % p;  // 0 at the root
  const int next = (args.rank + 1) % p;
  const int prev = (args.rank - 1 + p) % p;
  const size_t bytes = args.count * builder.element_size();

  ForEachPipelineSegment(args.segment_bytes, builder.element_size(), bytes, [&](const ByteRange& part) {
    const BufferRange send{BufferId::kSend, part.offset};
    const BufferRange recv{BufferId::kRecv, part.offset};
    if (position == 0) {
      builder.Send(next, send, part.bytes);
      builder.Copy(send, recv, part.bytes);
    } else {
      builder.Recv(prev, recv, part.bytes);
      if (position < p - 1) builder.Send(next, recv, part.bytes);
    }
  });
  return builder.Finish();
}

}  // namespace chorus
