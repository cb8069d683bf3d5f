// NativeProvider: something that runs some collectives of a communicator
// without schedules, by its own means (after UCC's TLs, each of which
// implements collectives natively and scores its ranges). The shared-memory
// board is one (core/board_allreduce.h). The selection table
// (core/selection_table.h) puts a provider's ranges before the schedules;
// the communicator hands it the calls those ranges select.
//
// A provider must be alike on every rank of a communicator (every rank has
// it or none), and its ranges a pure function of what every rank shares, so
// that every rank takes the same path for the same call: a rank running a
// call natively waits for peers that a rank in the executor never serves.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "algorithms/algorithm.h"
#include "base/status.h"
#include "core/operation.h"

namespace chorus {

// How a provider runs a call (its own codes; 0 is "not natively").
using NativePlan = uint8_t;
constexpr NativePlan kNoNativePlan = 0;

// A size range of one collective that a provider runs.
struct NativeRange {
  size_t first = 0, last = 0;  // bytes per rank, both included
  // Taken only where the schedule resolved to this algorithm; kAuto: always.
  Algorithm stands_in_for = Algorithm::kAuto;
  NativePlan plan = kNoNativePlan;
};

// The first of `ranges` that holds `bytes` and applies where the schedule
// resolved to `chosen`; null: none (the rule of every native row).
inline const NativeRange* FindNativeRange(const std::vector<NativeRange>& ranges, size_t bytes, Algorithm chosen) {
  for (const NativeRange& range : ranges) {
    if (bytes < range.first || bytes > range.last) continue;
    if (range.stands_in_for == Algorithm::kAuto || range.stands_in_for == chosen) return &range;
  }
  return nullptr;
}

// What a provider's ranges may depend on: alike on every rank.
struct NativeRangeInputs {
  int nranks = 1;
  bool forced = false;        // the algorithm was pinned by the call or CHORUS_ALGO
  bool shares_cores = false;  // the transport's shares_cores
};

class NativeProvider {
 public:
  virtual ~NativeProvider() = default;

  // Short name (chorus_info --tune).
  virtual const char* name() const = 0;
  // Name of `plan` (logs, the flight recorder's path), a string literal.
  virtual const char* PlanName(NativePlan plan) const = 0;
  // The ranges of `coll` it runs, in order (the first that matches
  // decides); empty: none.
  virtual std::vector<NativeRange> Ranges(Collective coll, const NativeRangeInputs& inputs) const = 0;
  // Runs `op` (a collective of count > 0, not in a group, buffers the CPU
  // can touch) by `plan`, one of its ranges' plans. *served false: every
  // rank agreed that this call runs its schedule instead (the range's
  // fallback), which the communicator then does; nothing was written.
  virtual Status Run(const Operation& op, NativePlan plan, const std::atomic<bool>& abort, int timeout_ms,
                     bool* served) = 0;
  // The peer the last failed Run was waiting for (-1: none; the flight
  // recorder's "waiting for").
  virtual int stuck_peer() const = 0;
};

}  // namespace chorus
