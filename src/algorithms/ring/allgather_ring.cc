// Ring AllGather: at step t every rank forwards block r-t to its successor
// (its own input at t = 0) and receives block r-t-1 from its predecessor.
#include "algorithms/builders.h"
#include "algorithms/schedule_builder.h"

namespace chorus {

Status BuildRingAllGather(const CollectiveArgs& args, Schedule* out) {
  ScheduleBuilder builder(args, Algorithm::kRing, out);
  const int p = args.nranks;
  const int r = args.rank;
  const int next = (r + 1) % p;
  const int prev = (r - 1 + p) % p;
  const size_t block = args.count * builder.element_size();
  auto block_at = [&](int index) {
    return BufferRange{BufferId::kRecv, static_cast<size_t>((index % p + p) % p) * block};
  };

  // Sending our input straight from the send buffer lets step 0 start
  // without waiting for the local copy (a no-op when in place).
  builder.Send(next, BufferRange{BufferId::kSend, 0}, block);
  builder.Copy(BufferRange{BufferId::kSend, 0}, block_at(r), block);
  for (int t = 0; t < p - 1; ++t) {
    if (t > 0) builder.Send(next, block_at(r - t), block);
    builder.Recv(prev, block_at(r - t - 1), block);
  }
  return builder.Finish();
}

}  // namespace chorus
