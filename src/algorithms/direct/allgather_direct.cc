// Direct AllGather ("direct"): phase 2 of the direct allreduce. At round k
// rank r sends its block to rank r+k and receives block r-k from its owner:
// one round deep instead of the ring's p-1 forwarding hops.
#include "algorithms/builders.h"
#include "algorithms/schedule_builder.h"

namespace chorus {

Status BuildDirectAllGather(const CollectiveArgs& args, Schedule* out) {
  ScheduleBuilder builder(args, Algorithm::kDirect, out);
  const int p = args.nranks;
  const int r = args.rank;
  const size_t block = args.count * builder.element_size();
  auto block_at = [&](int index) { return BufferRange{BufferId::kRecv, static_cast<size_t>(index) * block}; };
  const BufferRange input{BufferId::kSend, 0};

  for (int k = 1; k < p; ++k) {
    builder.Send((r + k) % p, input, block);
    const int from = (r - k + p) % p;
    builder.Recv(from, block_at(from), block);
  }
  // Last, so that the sends start at once (a no-op in place).
  builder.Copy(input, block_at(r), block);
  return builder.Finish();
}

}  // namespace chorus
