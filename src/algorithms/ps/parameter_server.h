// Shared by the parameter-server builders: which rank serves.
#pragma once

#include "algorithms/collective.h"

namespace chorus {

// The central server: args.root (rank 0 by default), also for AllReduce,
// whose root is otherwise unused; out of range falls back to rank 0.
inline int CentralServerRank(const CollectiveArgs& args) {
  return args.root >= 0 && args.root < args.nranks ? args.root : 0;
}

// Number of shard servers of "ps_sharded": ranks 0..k-1.
inline int ShardServerCount(const CollectiveArgs& args) {
  return args.server_count > 0 && args.server_count < args.nranks ? args.server_count : args.nranks;
}

}  // namespace chorus
