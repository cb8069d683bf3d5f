// Algorithm choice and the single entry point that builds schedules.
#pragma once

#include <array>
#include <string>

#include "algorithms/collective.h"
#include "algorithms/schedule.h"
#include "base/status.h"

namespace chorus {

// Values are stable (logged, cached, compared): append new ones at the end.
enum class Algorithm : uint8_t {
  kAuto = 0,
  kRing,
  kTree,
  kParameterServer,         // "ps": one server rank (root) reduces everything
  kShardedParameterServer,  // "ps_sharded": k servers, each owning 1/k
  kHalvingDoubling,         // "hd": Rabenseifner's recursive halving-doubling
  kDoubleBinaryTree,        // "dbtree": NCCL's two complementary binary trees
  kChain,                   // "chain": pipelined chain with explicit segments
  kHierarchical,            // "hier": host-local trees + ring among host leaders
  kHierarchicalSliced,      // "hier_sliced": host-local rings + per-slice rings across hosts
  kDirect,                  // "direct": every rank exchanges its slices with every peer itself
  kOneShot,                 // "oneshot": every rank sends its whole buffer to every peer, reduces locally
  kCount                    // number of values (not an algorithm)
};

const char* AlgorithmName(Algorithm algo);

// Per-collective forced algorithm (kAuto = let the default choose).
struct AlgorithmTable {
  std::array<Algorithm, static_cast<size_t>(Collective::kCount)> forced{};
};

// Parses NCCL-style CHORUS_ALGO: a bare name such as "ring" or "dbtree"
// (applies to every collective that supports it) or per-collective entries
// "allreduce:hd;broadcast:chain". Names: auto, ring, tree, ps, ps_sharded,
// hd, dbtree, chain, hier, hier_sliced, direct, oneshot ('_' and '-' and case are
// ignored). Unknown names -> InvalidArgument.
Status ParseAlgorithmSpec(const std::string& spec, AlgorithmTable* table);

// True when `algo` has a builder for `coll`: ring: all; tree, ps, dbtree:
// AllReduce, Broadcast, Reduce; ps_sharded, hd, hier, hier_sliced:
// AllReduce; chain: Broadcast, Reduce; direct: AllReduce, ReduceScatter,
// AllGather; oneshot: AllReduce.
bool Supports(Algorithm algo, Collective coll);

// Resolves kAuto and unsupported forced choices with a size-based default
// (ring or tree only: the other algorithms are chosen explicitly).
Algorithm ChooseAlgorithm(const CollectiveArgs& args, const AlgorithmTable& table);

// Builds the schedule of `args.rank`. `algo` must not be kAuto. A non-null
// args.topology must have one entry per rank (else InvalidArgument).
Status BuildSchedule(const CollectiveArgs& args, Algorithm algo, Schedule* out);

}  // namespace chorus
