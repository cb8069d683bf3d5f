// Ring-ordered AllToAll: at step s (1..p-1) rank r sends block r+s to rank
// r+s and receives block r-s from rank r-s, so every pair exchanges exactly
// once and each rank talks to one peer per direction at a time.
// In place, block j of the one buffer is still to be sent when block j
// arrives, so arrivals land in scratch and are copied home after the send of
// that block (the builder orders the copy after both).
#include "algorithms/builders.h"
#include "algorithms/schedule_builder.h"

namespace chorus {

Status BuildRingAllToAll(const CollectiveArgs& args, Schedule* out) {
  ScheduleBuilder builder(args, Algorithm::kRing, out);
  const int p = args.nranks;
  const int r = args.rank;
  const size_t block = args.count * builder.element_size();
  auto offset = [&](int index) { return static_cast<size_t>(index) * block; };

  builder.Copy(BufferRange{BufferId::kSend, offset(r)}, BufferRange{BufferId::kRecv, offset(r)}, block);
  for (int s = 1; s < p; ++s) {
    const int to = (r + s) % p;
    const int from = (r - s + p) % p;
    builder.Send(to, BufferRange{BufferId::kSend, offset(to)}, block);
    const BufferId landing = args.in_place ? BufferId::kScratch : BufferId::kRecv;
    builder.Recv(from, BufferRange{landing, offset(from)}, block);
  }
  if (args.in_place) {
    for (int s = 1; s < p; ++s) {
      const int from = (r - s + p) % p;
      builder.Copy(BufferRange{BufferId::kScratch, offset(from)}, BufferRange{BufferId::kRecv, offset(from)}, block);
    }
  }
  return builder.Finish();
}

}  // namespace chorus
