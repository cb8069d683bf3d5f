// SelectionTable: what runs each call shape on one communicator, decided in
// one place (after UCC's score map, ucc_coll_score: per collective a list
// of size ranges, each saying what runs there). A range holds either
//   - a schedule: an algorithm id (base/algorithm_descriptor.h), fixed for
//     the range (CHORUS_ALGO, or the size rule without a tuner) or chosen
//     per size by the cost model (CHORUS_TUNER=model, CHORUS_TUNE_FILE),
//     whose predicted time is the score; or
//   - a native provider (core/native_provider.h), which runs the call
//     without schedules: the shm board (core/board_allreduce.h) is one; in
//     its range always or where the schedule resolved to the algorithm it
//     stands in for. Its fallback is the range's schedule, which runs a call
//     the provider cannot take (one launched in a group).
// Native ranges come first: the first one that matches decides.
//
// Every input is alike on every rank (the options, the agreed tuner model,
// the hosts, the native provider, the transport's shares_cores), so every
// rank selects alike for the same call.
//
// SelectionCache remembers the selection and the schedule of the last few
// call shapes, so that a repeated call neither selects again nor looks the
// schedule up: a few compares, no lock (one launch runs at a time).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "algorithms/algorithm.h"
#include "core/native_provider.h"
#include "core/tuner.h"
#include "transports/transport.h"

namespace chorus {

// What a table range is looked up by.
struct SelectionKey {
  Collective coll = Collective::kAllReduce;
  size_t bytes = 0;  // per rank: count * element size
  // Where the buffers live. Only host memory has ranges so far, and calls
  // are looked up as host whatever their buffers: each rank classifies its
  // own buffers, which may differ between ranks, and every rank must take
  // the same path. Device buffers take the host ranges' paths, staged (the
  // executor's staging; around a native provider, Communicator::RunNative).
  MemoryKind memory = MemoryKind::kHost;
};

// Where a range's schedule comes from.
enum class ScheduleSource : uint8_t {
  kForced,     // CHORUS_ALGO for the collective
  kSizeRule,   // no tuner: tree for small buffers, ring above (algorithms/algorithm.h)
  kCostModel,  // the tuner: the fastest predicted algorithm for each size
};

struct ScheduleRange {
  size_t first = 0, last = 0;  // bytes, both included
  ScheduleSource source = ScheduleSource::kSizeRule;
  Algorithm algorithm = Algorithm::kRing;  // kForced, kSizeRule
};

struct SelectionInputs {
  int nranks = 1;
  // Hosts of the ranks (the hierarchical and direct costs depend on them);
  // null: one host. Must outlive the table.
  const Topology* topology = nullptr;
  TunerModel model;           // valid(): selection by cost
  AlgorithmTable algorithms;  // CHORUS_ALGO
  // Runs the calls of its ranges (every rank has it or none); null: none.
  // Must outlive the table.
  const NativeProvider* native = nullptr;
  bool shares_cores = false;  // the transport's shares_cores
};

// What runs one call shape.
struct Selection {
  // The schedule's algorithm; with a native plan, the fallback.
  Algorithm algorithm = Algorithm::kRing;
  NativePlan native_plan = kNoNativePlan;  // the native provider's plan; none: the schedule
  ScheduleSource source = ScheduleSource::kSizeRule;  // kForced also for a call that pinned its algorithm
  double predicted_s = 0;  // the cost model's time for `algorithm`; 0 unless kCostModel
  // What a call launched in a group runs: never natively.
  NativePlan NativePlanFor(bool grouped) const { return grouped ? kNoNativePlan : native_plan; }
};

class SelectionTable {
 public:
  SelectionTable() : SelectionTable(SelectionInputs()) {}
  explicit SelectionTable(const SelectionInputs& inputs);

  // What runs a collective of `args` (count > 0); `requested`: an algorithm
  // the call pinned (internal calls), kAuto: the table's. With
  // `candidates`, the cost model's candidates, fastest first (for the log).
  Selection Select(const CollectiveArgs& args, Algorithm requested,
                   std::vector<std::pair<Algorithm, double>>* candidates = nullptr) const;

  const std::vector<ScheduleRange>& schedule_ranges(Collective coll) const {
    return schedules_[static_cast<size_t>(coll)];
  }
  // The native provider's ranges of `coll`; `forced`: the algorithm was
  // pinned by the call or CHORUS_ALGO.
  const std::vector<NativeRange>& native_ranges(Collective coll, bool forced) const {
    return native_[forced ? 1 : 0][static_cast<size_t>(coll)];
  }

  // One line per range, collective by collective (chorus_info --tune).
  std::string Describe() const;

 private:
  Algorithm ScheduleAlgorithm(const SelectionKey& key, const CollectiveArgs& args, Selection* selection,
                              std::vector<std::pair<Algorithm, double>>* candidates) const;

  SelectionInputs inputs_;
  std::array<std::vector<ScheduleRange>, kCollectiveCount> schedules_;
  std::array<std::array<std::vector<NativeRange>, kCollectiveCount>, 2> native_;  // [forced][collective]
};

class SelectionCache {
 public:
  struct Entry {
    Selection selection;
    std::shared_ptr<const Schedule> schedule;  // built on first use by the schedule path
  };
  // The entry of this shape if it is among the recent ones.
  Entry* Find(const CollectiveArgs& args, Algorithm requested);
  Entry* Remember(const CollectiveArgs& args, Algorithm requested, const Selection& selection);
  void Clear();

 private:
  using Key = std::tuple<int, size_t, int, int, int, bool, int, size_t, int>;
  static Key KeyOf(const CollectiveArgs& args, Algorithm requested);
  struct Slot {
    Key key{};
    bool known = false;
    Entry entry;
  };
  std::array<Slot, 8> slots_{};
  size_t next_ = 0;
};

}  // namespace chorus
