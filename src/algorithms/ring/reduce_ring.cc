// Ring (chain) Reduce: root+1 -> root+2 -> ... -> root-1 -> root, each hop
// folding in its own input with RecvReduce. Pipelined by the executor's
// chunking like the broadcast chain. Non-root ranks never touch their
// receive buffer (NCCL lets them pass none), so they accumulate in scratch.
#include "algorithms/builders.h"
#include "algorithms/schedule_builder.h"

namespace chorus {

Status BuildRingReduce(const CollectiveArgs& args, Schedule* out) {
  ScheduleBuilder builder(args, Algorithm::kRing, out);
  const int p = args.nranks;
  const int position = (args.rank - args.root - 1 + 2 * p) % p;  // p-1 at the root
  const int next = (args.rank + 1) % p;
  const int prev = (args.rank - 1 + p) % p;
  const size_t bytes = args.count * builder.element_size();
  const BufferRange send{BufferId::kSend, 0};

  if (position == 0) {
    builder.Send(next, send, bytes);
  } else if (position < p - 1) {
    const BufferRange partial{BufferId::kScratch, 0};
    builder.RecvReduce(prev, send, partial, bytes);
    builder.Send(next, partial, bytes);
  } else {
    builder.RecvReduce(prev, send, BufferRange{BufferId::kRecv, 0}, bytes);
  }
  return builder.Finish();
}

}  // namespace chorus
