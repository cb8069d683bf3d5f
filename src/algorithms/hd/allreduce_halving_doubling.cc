// Recursive halving-doubling AllReduce (Rabenseifner; Thakur et al. 2005):
// a reduce-scatter by recursive halving (log2 p' exchanges, each with half
// the previous data) then an allgather by recursive doubling, so every rank
// sends 2(p'-1)/p'*|W| in 2*log2(p') messages: ring-like bandwidth with
// tree-like latency. For p not a power of two, with p' the largest power of
// two below p and r = p - p', the first 2r ranks fold in pairs first (even
// rank 2i hands its vector to 2i+1 and sits out), and the odd ranks hand the
// result back at the end.
//
// Each receive after the first waits for the receive before it. An
// allgather receive's destination is free from the start, so nothing else
// stops the executor from reading a partner that is ahead while this rank
// still waits for the current step's late partner; both would then share
// this rank's link, and the late message, which every later step waits for,
// would slow down (docs/algorithms.md, "hd at 8 hosts, 64 MiB").
#include "algorithms/builders.h"
#include "algorithms/schedule_builder.h"
#include "algorithms/segments.h"

namespace chorus {

Status BuildHalvingDoublingAllReduce(const CollectiveArgs& args, Schedule* out) {
  ScheduleBuilder builder(args, Algorithm::kHalvingDoubling, out);
  const int p = args.nranks;
  const int rank = args.rank;
  int pof2 = 1;
  while (pof2 * 2 <= p) pof2 *= 2;
  const int folded = p - pof2;  // pairs that fold into one rank
  const size_t es = builder.element_size();
  const size_t bytes = args.count * es;
  const BufferRange send_all{BufferId::kSend, 0};
  const BufferRange recv_all{BufferId::kRecv, 0};

  // Fold: the even ranks of the first 2r sit out the power-of-two part.
  if (rank < 2 * folded && rank % 2 == 0) {
    builder.Send(rank + 1, send_all, bytes);
    builder.Recv(rank + 1, recv_all, bytes);
    return builder.Finish();
  }
  bool reduced_in_recv = false;  // where our running partial sum lives
  int64_t last_receive = ScheduleBuilder::kNoStep;
  auto in_order = [&](int64_t receive) {
    builder.After(receive, last_receive);
    if (receive != ScheduleBuilder::kNoStep) last_receive = receive;
  };
  if (rank < 2 * folded) {
    in_order(builder.RecvReduce(rank - 1, send_all, recv_all, bytes));
    reduced_in_recv = true;
  }
  const int vrank = rank < 2 * folded ? rank / 2 : rank - folded;
  auto real_rank = [&](int v) { return v < folded ? 2 * v + 1 : v + folded; };
  // Where block `lo` of the p' even blocks starts, and the bytes of [lo, hi).
  auto range_of = [&](int lo, BufferId buffer) {
    return BufferRange{buffer, EvenSegment(args.count, pof2, lo).offset * es};
  };
  auto bytes_of = [&](int lo, int hi) {
    const Segment last = EvenSegment(args.count, pof2, hi - 1);
    return (last.offset + last.count - EvenSegment(args.count, pof2, lo).offset) * es;
  };

  // Reduce-scatter by recursive halving: keep the half our bit selects.
  int lo = 0;
  int hi = pof2;
  for (int mask = pof2 / 2; mask >= 1; mask /= 2) {
    const int partner = real_rank(vrank ^ mask);
    const int mid = (lo + hi) / 2;
    const bool keep_low = (vrank & mask) == 0;
    const int send_lo = keep_low ? mid : lo;
    const int send_hi = keep_low ? hi : mid;
    if (keep_low) {
      hi = mid;
    } else {
      lo = mid;
    }
    const BufferId source = reduced_in_recv ? BufferId::kRecv : BufferId::kSend;
    builder.Send(partner, range_of(send_lo, source), bytes_of(send_lo, send_hi));
    in_order(builder.RecvReduce(partner, range_of(lo, source), range_of(lo, BufferId::kRecv), bytes_of(lo, hi)));
    reduced_in_recv = true;
  }
  // Allgather by recursive doubling: swap windows, doubling ours each time.
  for (int mask = 1; mask < pof2; mask *= 2) {
    const int partner = real_rank(vrank ^ mask);
    const int width = hi - lo;
    const int other_lo = (vrank & mask) == 0 ? hi : lo - width;
    builder.Send(partner, range_of(lo, BufferId::kRecv), bytes_of(lo, hi));
    in_order(builder.Recv(partner, range_of(other_lo, BufferId::kRecv), bytes_of(other_lo, other_lo + width)));
    lo = lo < other_lo ? lo : other_lo;
    hi = lo + 2 * width;
  }
  // Unfold: hand the result back to the rank that sat out.
  if (rank < 2 * folded) builder.Send(rank - 1, recv_all, bytes);
  return builder.Finish();
}

}  // namespace chorus
