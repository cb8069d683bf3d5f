// Static checks of a set of per-rank schedules against the rules of
// algorithms/schedule.h, independent of any execution order:
//  - steps are well formed: non-zero multiples of the element size, offsets
//    aligned, peers valid and not self, dependencies point backwards, ranges
//    inside bound buffers (and scratch inside scratch_bytes), writes only into
//    the receive buffer or scratch (the send buffer is const);
//  - messages match: the lengths of A's sends to B, in order, equal the
//    lengths of B's receives from A;
//  - every pair of steps touching overlapping bytes (resolved through the
//    real, possibly aliased, buffers) with at least one write is ordered by a
//    dependency path that the executor's prefix rule honours for every chunk
//    size.
// Returns an empty string when all hold, else the first violation.
#pragma once

#include <string>
#include <vector>

#include "algorithms/schedule.h"
#include "virtual_executor.h"

namespace chorus::testing {

std::string CheckSchedules(const std::vector<Schedule>& schedules, const std::vector<RankMemory>& memory);

}  // namespace chorus::testing
