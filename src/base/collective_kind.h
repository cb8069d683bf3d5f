// The collectives Chorus knows, as identities only: what a call asks for
// (algorithms/collective.h) and what an algorithm serves
// (base/algorithm_descriptor.h) both name them with this enum. It lives in
// base so that the algorithm descriptors, which the config help reads, can
// say which collectives each algorithm serves.
#pragma once

#include <cstddef>
#include <cstdint>

namespace chorus {

enum class Collective : uint8_t {
  kAllReduce = 0,
  kBroadcast,
  kReduce,
  kAllGather,
  kReduceScatter,
  kAllToAll,
  kGather,
  kScatter,
  kCount  // number of collectives
};

constexpr size_t kCollectiveCount = static_cast<size_t>(Collective::kCount);

}  // namespace chorus
