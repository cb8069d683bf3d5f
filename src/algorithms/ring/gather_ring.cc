// Gather as direct messages to the root (the "ring" family's rooted
// variant): the root receives block i from rank i in ring order starting at
// root+1. Each pair carries one message, so it cannot deadlock, and non-root
// ranks never touch their receive buffer.
#include "algorithms/builders.h"
#include "algorithms/schedule_builder.h"

namespace chorus {

Status BuildRingGather(const CollectiveArgs& args, Schedule* out) {
  ScheduleBuilder builder(args, Algorithm::kRing, out);
  const int p = args.nranks;
  const size_t block = args.count * builder.element_size();
  if (args.rank != args.root) {
    builder.Send(args.root, BufferRange{BufferId::kSend, 0}, block);
    return builder.Finish();
  }
  builder.Copy(BufferRange{BufferId::kSend, 0}, BufferRange{BufferId::kRecv, static_cast<size_t>(args.root) * block},
               block);
  for (int s = 1; s < p; ++s) {
    const int from = (args.root + s) % p;
    builder.Recv(from, BufferRange{BufferId::kRecv, static_cast<size_t>(from) * block}, block);
  }
  return builder.Finish();
}

}  // namespace chorus
