// Algorithm choice and the single entry point that builds schedules.
#pragma once

#include <array>
#include <string>

#include "algorithms/collective.h"
#include "algorithms/schedule.h"
#include "base/status.h"

namespace chorus {

enum class Algorithm : uint8_t { kAuto = 0, kRing, kTree };

const char* AlgorithmName(Algorithm algo);

// Per-collective forced algorithm (kAuto = let the default choose).
struct AlgorithmTable {
  std::array<Algorithm, static_cast<size_t>(Collective::kCount)> forced{};
};

// Parses NCCL-style CHORUS_ALGO: "ring", "tree" (applies to all that support
// it) or "allreduce:tree;broadcast:ring". Unknown names -> InvalidArgument.
Status ParseAlgorithmSpec(const std::string& spec, AlgorithmTable* table);

// True when `algo` has a builder for `coll` (ring: all; tree: AllReduce,
// Broadcast, Reduce).
bool Supports(Algorithm algo, Collective coll);

// Resolves kAuto and unsupported forced choices with a size-based default.
Algorithm ChooseAlgorithm(const CollectiveArgs& args, const AlgorithmTable& table);

// Builds the schedule of `args.rank`. `algo` must not be kAuto.
Status BuildSchedule(const CollectiveArgs& args, Algorithm algo, Schedule* out);

}  // namespace chorus
