// Scatter as direct messages from the root (the "ring" family's rooted
// variant): the root sends block i to rank i in ring order starting at
// root+1. Non-root ranks never touch their send buffer.
#include "algorithms/builders.h"
#include "algorithms/schedule_builder.h"

namespace chorus {

Status BuildRingScatter(const CollectiveArgs& args, Schedule* out) {
  ScheduleBuilder builder(args, Algorithm::kRing, out);
  const int p = args.nranks;
  const size_t block = args.count * builder.element_size();
  if (args.rank != args.root) {
    builder.Recv(args.root, BufferRange{BufferId::kRecv, 0}, block);
    return builder.Finish();
  }
  for (int s = 1; s < p; ++s) {
    const int to = (args.root + s) % p;
    builder.Send(to, BufferRange{BufferId::kSend, static_cast<size_t>(to) * block}, block);
  }
  builder.Copy(BufferRange{BufferId::kSend, static_cast<size_t>(args.root) * block}, BufferRange{BufferId::kRecv, 0},
               block);
  return builder.Finish();
}

}  // namespace chorus
