// Algorithm choice and the single entry point that builds schedules. The
// algorithms themselves (enum, names, collectives) are described in
// base/algorithm_descriptor.h.
#pragma once

#include <array>
#include <string>

#include "algorithms/collective.h"
#include "algorithms/schedule.h"
#include "base/algorithm_descriptor.h"
#include "base/status.h"

namespace chorus {

// Per-collective forced algorithm (kAuto = let the default choose).
struct AlgorithmTable {
  std::array<Algorithm, static_cast<size_t>(Collective::kCount)> forced{};
};

// Parses NCCL-style CHORUS_ALGO: a bare name such as "ring" or "dbtree"
// (applies to every collective that supports it) or per-collective entries
// "allreduce:hd;broadcast:chain". Names are the descriptors' (NormalizeName
// spelling). Unknown names -> InvalidArgument listing the valid ones, and
// `*table` is left as it was.
Status ParseAlgorithmSpec(const std::string& spec, AlgorithmTable* table);

// Resolves kAuto and unsupported forced choices with a size-based default
// (ring or tree only: the other algorithms are chosen explicitly).
Algorithm ChooseAlgorithm(const CollectiveArgs& args, const AlgorithmTable& table);

// Builds the schedule of `args.rank`. `algo` must not be kAuto. A non-null
// args.topology must have one entry per rank (else InvalidArgument).
Status BuildSchedule(const CollectiveArgs& args, Algorithm algo, Schedule* out);

}  // namespace chorus
