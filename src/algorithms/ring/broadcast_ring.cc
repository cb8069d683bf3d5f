// Ring (chain) Broadcast: root -> root+1 -> ... -> root-1. One full-length
// step per hop; the executor's chunking turns the chain into a pipeline, so
// the time is about bytes/bandwidth + (p-2) chunk latencies.
#include "algorithms/builders.h"
#include "algorithms/schedule_builder.h"

namespace chorus {

Status BuildRingBroadcast(const CollectiveArgs& args, Schedule* out) {
  ScheduleBuilder builder(args, Algorithm::kRing, out);
  const int p = args.nranks;
  const int position = (args.rank - args.root + p) % p;  // 0 at the root
  const int next = (args.rank + 1) % p;
  const int prev = (args.rank - 1 + p) % p;
  const size_t bytes = args.count * builder.element_size();
  const BufferRange send{BufferId::kSend, 0};
  const BufferRange recv{BufferId::kRecv, 0};

  if (position == 0) {
    builder.Send(next, send, bytes);
    builder.Copy(send, recv, bytes);
  } else {
    builder.Recv(prev, recv, bytes);
    if (position < p - 1) builder.Send(next, recv, bytes);
  }
  return builder.Finish();
}

}  // namespace chorus
