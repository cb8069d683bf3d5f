// Shared by the hierarchical builders: "hier_sliced" falls back to "hier"
// when hosts differ in size, keeping its own name in the schedule.
#pragma once

#include "algorithms/collective.h"
#include "algorithms/schedule.h"
#include "base/algorithm_descriptor.h"
#include "base/status.h"

namespace chorus {

// The "hier" AllReduce schedule of args.rank, labelled `algorithm`.
Status BuildHierarchicalAllReduceNamed(const CollectiveArgs& args, Algorithm algorithm, Schedule* out);

}  // namespace chorus
