// Ring phases over an arbitrary list of ranks and a sub-range of the vector:
// the ring allreduce is both over every rank and the whole vector
// (allreduce_ring.cc), the hierarchical builders compose them over the
// ranks of a host or one per host. Both work in kRecv: after the
// reduce-scatter, position i of the ring holds segment (i+1) mod n of the
// range fully reduced, which the allgather then passes around.
#pragma once

#include <cstddef>
#include <vector>

#include "algorithms/schedule_builder.h"
#include "algorithms/segments.h"

namespace chorus {

struct RingRange {
  const std::vector<int>* ranks = nullptr;  // ring order; ranks[position] is us
  int position = 0;
  size_t offset = 0;  // elements
  size_t count = 0;   // elements
};

// The segment of `range` that `position` owns after the reduce-scatter, with
// an offset relative to the whole vector.
Segment RingOwnedSegment(const RingRange& range, int position);

// Reduces `range` of `first_src` (kSend for our own input, kRecv for a
// partial result already there) across the ring into kRecv. A ring of one
// rank just copies.
void AppendRingReduceScatter(ScheduleBuilder& builder, const RingRange& range, BufferId first_src);

// Spreads every position's owned segment to the whole ring, in kRecv.
void AppendRingAllGather(ScheduleBuilder& builder, const RingRange& range);

}  // namespace chorus
