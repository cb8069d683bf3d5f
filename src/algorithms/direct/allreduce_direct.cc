// Direct AllReduce ("direct"): every rank talks to every other rank itself,
// two rounds deep instead of the ring's 2(p-1) dependent hops.
//  1. reduce-scatter: rank r owns slice r (the ring's near-equal split,
//     EvenSegment). It sends slice q of its input to rank q for every q != r
//     and folds every peer's slice r into its own. On shared memory large
//     receive-reduce chunks are reduced straight out of the sender's buffer,
//     so this phase reads every peer's input directly.
//  2. allgather: rank r sends its reduced slice to every peer and receives
//     every other slice from its owner.
// At round k (1..p-1) rank r sends to r+k and receives from r-k, so the p
// ranks form p-1 disjoint shifts and no rank is everyone's first peer. Each
// pair exchanges one message per direction and phase, so rule 3 of
// schedule.h matches whatever the round order. Slice r is reduced in a fixed
// order, ((x_r op x_{r-1}) op x_{r-2}) ..., and reaches every rank from its
// owner alone: all ranks end up with bit-identical results, floats included.
// Every rank sends and receives 2(p-1)/p of the buffer, like the ring. It
// ignores args.topology: across hosts every pair still talks directly, so
// each host's NIC carries (p - local)/p of its ranks' traffic (allowed, but
// the hierarchical algorithms suit several hosts better).
#include "algorithms/builders.h"
#include "algorithms/schedule_builder.h"
#include "algorithms/segments.h"

namespace chorus {

Status BuildDirectAllReduce(const CollectiveArgs& args, Schedule* out) {
  ScheduleBuilder builder(args, Algorithm::kDirect, out);
  const int p = args.nranks;
  const int r = args.rank;
  const size_t es = builder.element_size();
  auto slice = [&](int index) { return EvenSegment(args.count, p, index); };
  auto at = [&](BufferId buffer, int index) { return BufferRange{buffer, slice(index).offset * es}; };
  auto bytes = [&](int index) { return slice(index).count * es; };

  for (int k = 1; k < p; ++k) {
    const int to = (r + k) % p;
    const int from = (r - k + p) % p;
    builder.Send(to, at(BufferId::kSend, to), bytes(to));
    // The first fold reads our own input; the later ones the partial sum.
    builder.RecvReduce(from, at(k == 1 ? BufferId::kSend : BufferId::kRecv, r), at(BufferId::kRecv, r), bytes(r));
  }
  for (int k = 1; k < p; ++k) {
    const int to = (r + k) % p;
    const int from = (r - k + p) % p;
    builder.Send(to, at(BufferId::kRecv, r), bytes(r));
    builder.Recv(from, at(BufferId::kRecv, from), bytes(from));
  }
  return builder.Finish();
}

}  // namespace chorus
