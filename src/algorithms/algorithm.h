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

// Up to this size a collective is latency-bound everywhere: the binomial tree
// pays 2*ceil(log2 p) message latencies against the ring's 2(p-1).
constexpr size_t kTreeAlwaysBytes = 64 * 1024;
// Above that, bandwidth starts to count. A pipelined tree moves about
// log2(p) buffers through the root's link, the ring 2(p-1)/p buffers through
// every link. With TCP-like costs (alpha ~ 20 us, ~2.5 GB/s) at 256 KiB the
// two break even around 8 ranks (tree ~435 us, ring ~465 us), and the tree
// wins clearly beyond (16 ranks: ~580 vs ~800 us); with 4 ranks the ring
// already wins. The tuner refines this with measured alpha/beta.
constexpr size_t kTreeManyRanksBytes = 256 * 1024;
constexpr int kTreeManyRanks = 8;

// Resolves kAuto and unsupported forced choices with a size-based default
// (ring or tree only: the other algorithms are chosen explicitly).
Algorithm ChooseAlgorithm(const CollectiveArgs& args, const AlgorithmTable& table);

// Builds the schedule of `args.rank`. `algo` must not be kAuto. A non-null
// args.topology must have one entry per rank (else InvalidArgument).
Status BuildSchedule(const CollectiveArgs& args, Algorithm algo, Schedule* out);

}  // namespace chorus
