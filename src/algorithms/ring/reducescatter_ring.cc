// Ring ReduceScatter: block j is reduced along the ring starting at rank j+1
// and ends on rank j. At step s rank r sends the partial sum of block r-s-1
// and folds its input into block r-s-2. Partial sums live in two scratch
// slots used alternately (the send buffer is const and the receive buffer
// holds only our own block); the last step reduces straight into recv.
#include "algorithms/builders.h"
#include "algorithms/schedule_builder.h"

namespace chorus {

Status BuildRingReduceScatter(const CollectiveArgs& args, Schedule* out) {
  ScheduleBuilder builder(args, Algorithm::kRing, out);
  const int p = args.nranks;
  const int r = args.rank;
  const int next = (r + 1) % p;
  const int prev = (r - 1 + p) % p;
  const size_t block = args.count * builder.element_size();
  auto input = [&](int index) {
    return BufferRange{BufferId::kSend, static_cast<size_t>((index % p + p) % p) * block};
  };
  auto slot = [&](int step) { return BufferRange{BufferId::kScratch, (step % 2) * block}; };

  for (int s = 0; s < p - 1; ++s) {
    builder.Send(next, s == 0 ? input(r - 1) : slot(s - 1), block);
    const bool last = s == p - 2;
    builder.RecvReduce(prev, input(r - s - 2), last ? BufferRange{BufferId::kRecv, 0} : slot(s), block);
  }
  return builder.Finish();
}

}  // namespace chorus
