// Direct ReduceScatter ("direct"): phase 1 of the direct allreduce on whole
// blocks. At round k rank r sends block r+k of its input to rank r+k and
// folds block r of rank r-k into its result, so block r is reduced in the
// fixed order ((x_r op x_{r-1}) op x_{r-2}) ... One round deep instead of
// the ring's p-1 dependent hops; the same p-1 blocks sent per rank.
#include "algorithms/builders.h"
#include "algorithms/schedule_builder.h"

namespace chorus {

Status BuildDirectReduceScatter(const CollectiveArgs& args, Schedule* out) {
  ScheduleBuilder builder(args, Algorithm::kDirect, out);
  const int p = args.nranks;
  const int r = args.rank;
  const size_t block = args.count * builder.element_size();
  auto input = [&](int index) { return BufferRange{BufferId::kSend, static_cast<size_t>(index) * block}; };
  const BufferRange result{BufferId::kRecv, 0};

  for (int k = 1; k < p; ++k) {
    const int to = (r + k) % p;
    const int from = (r - k + p) % p;
    builder.Send(to, input(to), block);
    builder.RecvReduce(from, k == 1 ? input(r) : result, result, block);
  }
  return builder.Finish();
}

}  // namespace chorus
