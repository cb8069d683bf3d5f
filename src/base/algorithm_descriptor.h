// One descriptor per algorithm: its id, name, one-line description, the
// collectives it serves and where the tuner may pick it. Everything that
// names an algorithm reads this table: AlgorithmName, the CHORUS_ALGO parser
// and its error message, the CHORUS_ALGO help (base/config.cc), chorus_info,
// the tuner and the simulator. What needs the layers above registers by id
// in a table of its own layer, indexed by the enum and checked complete at
// compile time: the builders (algorithms/algorithm.cc) and the closed-form
// costs (sim/cost_model.cc). Adding an algorithm: docs/algorithms.md,
// "Adding an algorithm".
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "base/collective_kind.h"

namespace chorus {

// Values are stable (logged, cached, compared): append new ones at the end.
enum class Algorithm : uint8_t {
  kAuto = 0,
  kRing,
  kTree,
  kParameterServer,
  kShardedParameterServer,
  kHalvingDoubling,
  kDoubleBinaryTree,
  kChain,
  kHierarchical,
  kHierarchicalSliced,
  kDirect,
  kOneShot,
  kCount  // number of values (not an algorithm)
};

constexpr size_t kAlgorithmCount = static_cast<size_t>(Algorithm::kCount);

// A set of collectives, one bit per Collective value.
using CollectiveSet = uint16_t;
static_assert(kCollectiveCount <= 16, "CollectiveSet holds one bit per collective");

constexpr CollectiveSet CollectiveBit(Collective coll) {
  return static_cast<CollectiveSet>(CollectiveSet{1} << static_cast<unsigned>(coll));
}
template <typename... Colls>
constexpr CollectiveSet CollectiveSetOf(Colls... colls) {
  return static_cast<CollectiveSet>((CollectiveSet{0} | ... | CollectiveBit(colls)));
}
constexpr CollectiveSet kEveryCollective = static_cast<CollectiveSet>((1u << kCollectiveCount) - 1);

struct AlgorithmDescriptor {
  Algorithm id;
  const char* name;         // CHORUS_ALGO, schedules, logs, chorus_info
  const char* description;  // one line, for chorus_info
  CollectiveSet collectives;  // those it has a builder for (Supports)
  // Its cost model assumes what only one host gives (a port serving p-1
  // inbound flows at full rate): the tuner lists it across hosts but picks
  // it only when every rank shares a host.
  bool single_host_only;
};

// In enum order (checked below).
inline constexpr AlgorithmDescriptor kAlgorithmDescriptors[] = {
    {Algorithm::kAuto, "auto", "nothing forced: the tuner (or the static size rule) picks per call", 0, false},
    {Algorithm::kRing, "ring", "reduce-scatter then allgather around a ring; bandwidth-optimal", kEveryCollective,
     false},
    {Algorithm::kTree, "tree", "FireCaffe's binomial tree: reduce to the root, then broadcast; latency-optimal",
     CollectiveSetOf(Collective::kAllReduce, Collective::kBroadcast, Collective::kReduce), false},
    {Algorithm::kParameterServer, "ps", "central parameter server: one server rank (the root) reduces everything",
     CollectiveSetOf(Collective::kAllReduce, Collective::kBroadcast, Collective::kReduce), false},
    {Algorithm::kShardedParameterServer, "ps_sharded", "sharded parameter server (BytePS): k servers, each owns 1/k",
     CollectiveSetOf(Collective::kAllReduce), false},
    {Algorithm::kHalvingDoubling, "hd", "Rabenseifner's recursive halving-doubling",
     CollectiveSetOf(Collective::kAllReduce), false},
    {Algorithm::kDoubleBinaryTree, "dbtree", "NCCL's double binary tree: two complementary trees, half the data each",
     CollectiveSetOf(Collective::kAllReduce, Collective::kBroadcast, Collective::kReduce), false},
    {Algorithm::kChain, "chain", "pipelined chain with explicit segments",
     CollectiveSetOf(Collective::kBroadcast, Collective::kReduce), false},
    {Algorithm::kHierarchical, "hier", "host-local trees, then a ring among the host leaders",
     CollectiveSetOf(Collective::kAllReduce), false},
    {Algorithm::kHierarchicalSliced, "hier_sliced", "host-local rings, then one ring per slice across hosts",
     CollectiveSetOf(Collective::kAllReduce), false},
    {Algorithm::kDirect, "direct", "every rank exchanges its slices with every peer itself; two rounds deep",
     CollectiveSetOf(Collective::kAllReduce, Collective::kReduceScatter, Collective::kAllGather), true},
    {Algorithm::kOneShot, "oneshot", "one round: every rank sends its whole buffer to every peer; for tiny calls",
     CollectiveSetOf(Collective::kAllReduce), false},
};

// Checks a table indexed by the enum: row i describes Algorithm(i).
template <typename Row, size_t N>
constexpr bool RowsInEnumOrder(const Row (&rows)[N]) {
  for (size_t i = 0; i < N; ++i) {
    if (static_cast<size_t>(rows[i].id) != i) return false;
  }
  return N == kAlgorithmCount;
}
static_assert(RowsInEnumOrder(kAlgorithmDescriptors), "one descriptor per Algorithm value, in enum order");

// The descriptor of `algo`; null for kCount and values past it.
constexpr const AlgorithmDescriptor* FindAlgorithmDescriptor(Algorithm algo) {
  const size_t index = static_cast<size_t>(algo);
  return index < kAlgorithmCount ? &kAlgorithmDescriptors[index] : nullptr;
}

// "ring", "hier_sliced", ...; "unknown" for a value without a descriptor.
const char* AlgorithmName(Algorithm algo);

// True when `algo` has a builder for `coll` (kAuto: none).
bool Supports(Algorithm algo, Collective coll);

// The spelling rule of names: case, '_' and '-' ignored, surrounding blanks trimmed
// ("Hier-Sliced" == "hier_sliced", "all_reduce" == "allreduce").
std::string NormalizeName(std::string_view text);

// The algorithm named `text` (under NormalizeName), kAuto included.
bool ParseAlgorithmName(std::string_view text, Algorithm* algo);

// The names joined by ", " with `last_joiner` before the last one
// ("auto, ring, ... direct or oneshot"), in enum order; `with_auto` adds
// "auto" in front.
std::string AlgorithmNameList(bool with_auto, const char* last_joiner);

}  // namespace chorus
