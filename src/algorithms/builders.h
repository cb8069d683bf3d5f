// One schedule builder per (collective, algorithm), each in its own file under
// the algorithm's folder (ring/, tree/, ps/, hd/, dbtree/, chain/, hier/,
// direct/).
// BuildSchedule (algorithm.cc) validates the arguments and dispatches here,
// so builders may assume 0 <= rank, root < nranks, count > 0, nranks > 1
// where they say so, and a valid dtype.
#pragma once

#include "algorithms/collective.h"
#include "algorithms/schedule.h"
#include "base/status.h"

namespace chorus {

Status BuildRingAllReduce(const CollectiveArgs& args, Schedule* out);
Status BuildRingBroadcast(const CollectiveArgs& args, Schedule* out);
Status BuildRingReduce(const CollectiveArgs& args, Schedule* out);
Status BuildRingAllGather(const CollectiveArgs& args, Schedule* out);
Status BuildRingReduceScatter(const CollectiveArgs& args, Schedule* out);
Status BuildRingAllToAll(const CollectiveArgs& args, Schedule* out);
Status BuildRingGather(const CollectiveArgs& args, Schedule* out);
Status BuildRingScatter(const CollectiveArgs& args, Schedule* out);

Status BuildTreeAllReduce(const CollectiveArgs& args, Schedule* out);
Status BuildTreeBroadcast(const CollectiveArgs& args, Schedule* out);
Status BuildTreeReduce(const CollectiveArgs& args, Schedule* out);

Status BuildParameterServerAllReduce(const CollectiveArgs& args, Schedule* out);
Status BuildParameterServerBroadcast(const CollectiveArgs& args, Schedule* out);
Status BuildParameterServerReduce(const CollectiveArgs& args, Schedule* out);
Status BuildShardedParameterServerAllReduce(const CollectiveArgs& args, Schedule* out);

Status BuildHalvingDoublingAllReduce(const CollectiveArgs& args, Schedule* out);

Status BuildDoubleTreeAllReduce(const CollectiveArgs& args, Schedule* out);
Status BuildDoubleTreeBroadcast(const CollectiveArgs& args, Schedule* out);
Status BuildDoubleTreeReduce(const CollectiveArgs& args, Schedule* out);

Status BuildChainBroadcast(const CollectiveArgs& args, Schedule* out);
Status BuildChainReduce(const CollectiveArgs& args, Schedule* out);

// Use args.topology (hier/); see algorithms/topology.h.
Status BuildHierarchicalAllReduce(const CollectiveArgs& args, Schedule* out);
Status BuildHierarchicalSlicedAllReduce(const CollectiveArgs& args, Schedule* out);

Status BuildDirectAllReduce(const CollectiveArgs& args, Schedule* out);
Status BuildDirectReduceScatter(const CollectiveArgs& args, Schedule* out);
Status BuildDirectAllGather(const CollectiveArgs& args, Schedule* out);
Status BuildOneShotAllReduce(const CollectiveArgs& args, Schedule* out);

}  // namespace chorus
