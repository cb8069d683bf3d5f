// The schedule builders, one per (algorithm, collective), each in its own
// file under the algorithm's folder; declared here from their entries in
// base/algorithms.def.
// BuildSchedule (algorithm.cc) validates the arguments and dispatches here,
// so builders may assume 0 <= rank, root < nranks, count > 0, nranks > 1
// where they say so, and a valid dtype.
#pragma once

#include "algorithms/collective.h"
#include "algorithms/schedule.h"
#include "base/status.h"

namespace chorus {

#define CHORUS_BUILDER(coll, builder) Status builder(const CollectiveArgs& args, Schedule* out);
#define CHORUS_ALGORITHM(folder, id, name, description, single_host_only, ...) __VA_ARGS__
#include "base/algorithms.def"
#undef CHORUS_ALGORITHM
#undef CHORUS_BUILDER

}  // namespace chorus
