#include "core/selection_table.h"

#include <algorithm>
#include <limits>
#include <sstream>

namespace chorus {
namespace {

constexpr size_t kEveryByte = std::numeric_limits<size_t>::max();

const char* SourceName(ScheduleSource source) {
  switch (source) {
    case ScheduleSource::kForced: return "CHORUS_ALGO";
    case ScheduleSource::kSizeRule: return "size rule";
    case ScheduleSource::kCostModel: return "cost model";
  }
  return "?";
}

std::string BytesText(size_t bytes) { return bytes == kEveryByte ? std::string("inf") : std::to_string(bytes); }

// Where the ranks of one shared-memory host outnumber its cores, an
// allreduce from here up runs hd when p is a power of two (4 or more): its
// log2(p) rounds against the ring's p - 1 and direct's fan-in, each round
// costing a switch between ranks on a core. 4 processes on 2 cores,
// 256 KiB-4 MiB, buffers in the shared heap: hd 2.2-2.4x Open MPI in every
// run, the cost model's pick (direct, then ring) 1.6-1.8x; with ordinary
// buffers within the runs' spread of it (docs/tuning.md).
constexpr size_t kSharedCoresHdBytes = 256 * 1024;

bool SharedCoresHd(Collective coll, const SelectionInputs& inputs) {
  const bool power_of_two = (inputs.nranks & (inputs.nranks - 1)) == 0;
  return coll == Collective::kAllReduce && inputs.native != nullptr && inputs.shares_cores && inputs.nranks >= 4 &&
         power_of_two;
}

// The schedule ranges of `coll` without a call-pinned algorithm.
std::vector<ScheduleRange> ScheduleRangesOf(Collective coll, const SelectionInputs& inputs) {
  const Algorithm forced = inputs.algorithms.forced[static_cast<size_t>(coll)];
  if (forced != Algorithm::kAuto) {
    return {{0, kEveryByte, ScheduleSource::kForced, Supports(forced, coll) ? forced : Algorithm::kRing}};
  }
  if (inputs.model.valid() && inputs.nranks > 1 && SharedCoresHd(coll, inputs)) {
    return {{0, kSharedCoresHdBytes - 1, ScheduleSource::kCostModel, Algorithm::kAuto},
            {kSharedCoresHdBytes, kEveryByte, ScheduleSource::kSizeRule, Algorithm::kHalvingDoubling}};
  }
  if (inputs.model.valid() && inputs.nranks > 1) return {{0, kEveryByte, ScheduleSource::kCostModel, Algorithm::kAuto}};
  // ChooseAlgorithm's size rule as ranges.
  if (!Supports(Algorithm::kTree, coll)) return {{0, kEveryByte, ScheduleSource::kSizeRule, Algorithm::kRing}};
  const size_t tree_last = inputs.nranks >= kTreeManyRanks ? kTreeManyRanksBytes : kTreeAlwaysBytes;
  return {{0, tree_last, ScheduleSource::kSizeRule, Algorithm::kTree},
          {tree_last + 1, kEveryByte, ScheduleSource::kSizeRule, Algorithm::kRing}};
}

}  // namespace

SelectionTable::SelectionTable(const SelectionInputs& inputs) : inputs_(inputs) {
  for (size_t c = 0; c < kCollectiveCount; ++c) schedules_[c] = ScheduleRangesOf(static_cast<Collective>(c), inputs_);
  if (inputs_.native == nullptr) return;
  for (size_t c = 0; c < kCollectiveCount; ++c) {
    for (bool forced : {false, true}) {
      NativeRangeInputs native;
      native.nranks = inputs_.nranks;
      native.forced = forced;
      native.shares_cores = inputs_.shares_cores;
      native_[forced ? 1 : 0][c] = inputs_.native->Ranges(static_cast<Collective>(c), native);
    }
  }
}

Algorithm SelectionTable::ScheduleAlgorithm(const SelectionKey& key, const CollectiveArgs& args, Selection* selection,
                                            std::vector<std::pair<Algorithm, double>>* candidates) const {
  for (const ScheduleRange& range : schedule_ranges(key.coll)) {
    if (key.bytes < range.first || key.bytes > range.last) continue;
    selection->source = range.source;
    if (range.source != ScheduleSource::kCostModel) return range.algorithm;
    CollectiveArgs placed = args;
    placed.topology = inputs_.topology;  // the hosts that the hierarchical and direct costs depend on
    TunerChoice choice = ChooseByCost(placed, inputs_.model);
    selection->predicted_s = choice.predicted_s;
    if (candidates != nullptr) *candidates = std::move(choice.candidates);
    return choice.algorithm;
  }
  return Algorithm::kRing;  // the ranges cover every size; not reached
}

Selection SelectionTable::Select(const CollectiveArgs& args, Algorithm requested,
                                 std::vector<std::pair<Algorithm, double>>* candidates) const {
  SelectionKey key;
  key.coll = args.coll;
  key.bytes = args.count * DataTypeSize(args.dtype);
  Selection selection;
  const bool pinned = requested != Algorithm::kAuto;
  if (pinned) {
    selection.algorithm = Supports(requested, args.coll) ? requested : Algorithm::kRing;
    selection.source = ScheduleSource::kForced;
  } else {
    selection.algorithm = ScheduleAlgorithm(key, args, &selection, candidates);
  }
  if (args.count == 0 || key.memory != MemoryKind::kHost) return selection;
  const bool forced = pinned || selection.source == ScheduleSource::kForced;
  const NativeRange* range = FindNativeRange(native_ranges(key.coll, forced), key.bytes, selection.algorithm);
  if (range != nullptr) selection.native_plan = range->plan;
  return selection;
}

std::string SelectionTable::Describe() const {
  std::ostringstream out;
  const NativeProvider* native = inputs_.native;
  out << "# selection table: p=" << inputs_.nranks << " " << (native != nullptr ? native->name() : "no native provider")
      << (native != nullptr ? (inputs_.shares_cores ? " (ranks share cores)" : " (a core per rank)") : "")
      << "; first matching row per collective; native rows before schedules\n";
  for (size_t c = 0; c < kCollectiveCount; ++c) {
    const Collective coll = static_cast<Collective>(c);
    for (const NativeRange& range : native_ranges(coll, false)) {
      out << "  " << CollectiveName(coll) << " " << range.first << ".." << BytesText(range.last) << " B: native "
          << native->PlanName(range.plan) << " (";
      if (range.stands_in_for == Algorithm::kAuto) out << "instead of any schedule";
      else out << "where the schedule is " << AlgorithmName(range.stands_in_for);
      out << "; fallback in a group: the schedule)\n";
    }
    for (const ScheduleRange& range : schedule_ranges(coll)) {
      out << "  " << CollectiveName(coll) << " " << range.first << ".." << BytesText(range.last) << " B: schedule ";
      if (range.source == ScheduleSource::kCostModel) out << "by cost (the tuner rows)";
      else out << AlgorithmName(range.algorithm) << " (" << SourceName(range.source) << ")";
      out << "\n";
    }
  }
  return out.str();
}

SelectionCache::Key SelectionCache::KeyOf(const CollectiveArgs& args, Algorithm requested) {
  return Key{static_cast<int>(args.coll), args.count, static_cast<int>(args.dtype), static_cast<int>(args.op),
             args.root, args.in_place, static_cast<int>(requested), args.segment_bytes, args.server_count};
}

SelectionCache::Entry* SelectionCache::Find(const CollectiveArgs& args, Algorithm requested) {
  const Key key = KeyOf(args, requested);
  for (Slot& slot : slots_) {
    if (slot.known && slot.key == key) return &slot.entry;
  }
  return nullptr;
}

SelectionCache::Entry* SelectionCache::Remember(const CollectiveArgs& args, Algorithm requested,
                                                const Selection& selection) {
  Slot& slot = slots_[next_];
  next_ = (next_ + 1) % slots_.size();
  slot.key = KeyOf(args, requested);
  slot.known = true;
  slot.entry.selection = selection;
  slot.entry.schedule.reset();
  return &slot.entry;
}

void SelectionCache::Clear() {
  for (Slot& slot : slots_) {
    slot.known = false;
    slot.entry.schedule.reset();
  }
  next_ = 0;
}

}  // namespace chorus
