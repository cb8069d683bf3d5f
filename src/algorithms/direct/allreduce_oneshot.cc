// One-shot AllReduce ("oneshot"): the latency-optimal allreduce for tiny
// buffers. Every rank sends its whole input to every peer in one round and
// reduces all p inputs itself, so a call costs one message latency instead
// of the two dependent rounds of direct/hd/ring (2(p-1) for the ring).
// It moves (p-1) buffers out of every port, so it only pays off while the
// latency dominates; the tuner picks it by size.
//
// Every rank reduces in rank order, ((x_0 op x_1) op x_2) ..., whatever its
// own rank, so all ranks end up with bit-identical results, floats included.
// Peer inputs land in scratch slot q (q * bytes). At round k rank r sends to
// r+k and receives from r-k, one message per pair and direction (rule 3 of
// schedule.h matches in any order).
#include "algorithms/builders.h"
#include "algorithms/schedule_builder.h"

namespace chorus {

Status BuildOneShotAllReduce(const CollectiveArgs& args, Schedule* out) {
  ScheduleBuilder builder(args, Algorithm::kOneShot, out);
  const int p = args.nranks;
  const int r = args.rank;
  const size_t bytes = args.count * builder.element_size();
  const BufferRange own{BufferId::kSend, 0};
  const BufferRange result{BufferId::kRecv, 0};
  auto slot = [&](int q) { return BufferRange{BufferId::kScratch, static_cast<size_t>(q) * bytes}; };

  for (int k = 1; k < p; ++k) {
    builder.Send((r + k) % p, own, bytes);
    const int from = (r - k + p) % p;
    builder.Recv(from, slot(from), bytes);
  }
  // In place, the first fold overwrites our input before a rank r >= 2
  // reads it: keep a copy in our own (otherwise unused) slot.
  BufferRange mine = own;
  if (args.in_place && r >= 2) {
    builder.Copy(own, slot(r), bytes);
    mine = slot(r);
  }
  auto input = [&](int q) { return q == r ? mine : slot(q); };
  builder.Reduce(input(0), input(1), result, bytes);
  for (int q = 2; q < p; ++q) builder.Reduce(result, input(q), result, bytes);
  return builder.Finish();
}

}  // namespace chorus
