// One descriptor per algorithm: its id, name, one-line description, the
// collectives it serves and where the tuner may pick it, expanded from its
// entry in base/algorithms.def (which also gives the enum and, to the
// algorithms layer, the builders). Everything that names an algorithm reads
// this table: AlgorithmName, the CHORUS_ALGO parser and its error message,
// the CHORUS_ALGO help (base/config.cc), chorus_info, the tuner and the
// simulator. Adding an algorithm: docs/algorithms.md, "Adding an algorithm".
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "base/collective_kind.h"

namespace chorus {

// Values are stable (logged, cached, compared): the entries of
// base/algorithms.def in order, after kAuto.
enum class Algorithm : uint8_t {
  kAuto = 0,
#define CHORUS_BUILDER(coll, builder)
#define CHORUS_ALGORITHM(folder, id, name, description, single_host_only, ...) k##id,
#include "base/algorithms.def"
#undef CHORUS_ALGORITHM
#undef CHORUS_BUILDER
  kCount  // number of values (not an algorithm)
};

constexpr size_t kAlgorithmCount = static_cast<size_t>(Algorithm::kCount);

// A set of collectives, one bit per Collective value.
using CollectiveSet = uint16_t;
static_assert(kCollectiveCount <= 16, "CollectiveSet holds one bit per collective");

constexpr CollectiveSet CollectiveBit(Collective coll) {
  return static_cast<CollectiveSet>(CollectiveSet{1} << static_cast<unsigned>(coll));
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

// In enum order (checked below); the collectives are those with a builder.
inline constexpr AlgorithmDescriptor kAlgorithmDescriptors[] = {
    {Algorithm::kAuto, "auto", "nothing forced: the tuner (or the static size rule) picks per call", 0, false},
#define CHORUS_BUILDER(coll, builder) | CollectiveBit(Collective::k##coll)
#define CHORUS_ALGORITHM(folder, id, name, description, single_host_only, ...) \
  {Algorithm::k##id, name, description, static_cast<CollectiveSet>(0 __VA_ARGS__), single_host_only},
#include "base/algorithms.def"
#undef CHORUS_ALGORITHM
#undef CHORUS_BUILDER
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
