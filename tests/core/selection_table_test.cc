// SelectionTable: for a grid of call shapes on one host, the table selects
// exactly what the rules before it chose (kExpected was printed by those
// rules: the communicator's algorithm choice, then the board's plan; since
// then hd from 256 KiB where 4 or 8 ranks share cores, and the board's
// read in place for 2 ranks with a core each), and the cache of recent
// shapes.
#include <gtest/gtest.h>

#include <atomic>
#include <string>
#include <vector>

#include "algorithms/topology.h"
#include "core/board_allreduce.h"
#include "core/selection_table.h"

namespace chorus {
namespace {

// One character per grid point, in the loop order of the grid test: an
// algorithm (kLetters[id]) for the schedule path, 'O' for the board's
// one-shot plan, 'T' for its two-phase plan, 'R' for its read in place;
// run-length coded (a letter, then its repeat count when above 1).
constexpr char kLetters[] = "?rtpshbcHSdo";
constexpr const char* kExpectedRuns =
    "o8ro7r2o7r191o7d2o5d3ro5d3rt8rt7r2t7r2t17rt8rd8rd7r2d7r2d8rd7r2d7r83o6d3o5d4o4d5t17rt8rt17rt8rd17r"
    "d7r2d17rd7r83O6R3O5R4O3R6r189O6od2O5d3rO3o2d3rt8rt7r2t7r2t17rt8rd8rd7r2d7r2d8rd7r2d7r83O6d3O5d4O3o"
    "d5t17rt8rt17rt8rd17rd7r2d17rd7r83O7TrO6Tr2O5TOr191O7ThO6Th2O5T2h2t8rt7r2t7r2t17rt8rd8rd7r2d7r2d8rd"
    "7r2d7r83O7T2O6T2hO5T3ht17rt8rt17rt8rd17rd7r2d17rd7r83o8ro7r2o7r191o7dho5d2h2o5d2h2t8rt7r2t7r2t17rt"
    "8rd8rd7r2d7r2d8rd7r2d7r83o6d2ho5d2h2o4d3h2t17rt8rt17rt8rd17rd7r2d17rd7r2675o27r189o27t8rt7r2t7r2t1"
    "7rt8rd8rd7r2d7r2d8rd7r2d7r83o27t17rt8rt17rt8rd17rd7r2d17rd7r83O6o3O5o4O3o6r189O6o3O5o4O3o6t8rt7r2t"
    "7r2t17rt8rd8rd7r2d7r2d8rd7r2d7r83O6o3O5o4O3o6t17rt8rt17rt8rd17rd7r2d17rd7r83O17oO8or189O17oO8ot8rt"
    "7r2t7r2t17rt8rd8rd7r2d7r2d8rd7r2d7r83O17oO8ot17rt8rt17rt8rd17rd7r2d17rd7r83o27r189o27t8rt7r2t7r2t1"
    "7rt8rd8rd7r2d7r2d8rd7r2d7r83o27t17rt8rt17rt8rd17rd7r2d17rd7r2675d27r54d54r81d27t8rt7r2t7r2t17rt8rd"
    "54r81d27t17rt8rt17rt8rd54r81d5Td6T2d6Td6r54d54r81d5Td6T2d6Td6t8rt7r2t7r2t17rt8rd54r81d5Td6T2d6Td6t"
    "17rt8rt17rt8rd54r81d5T4d3T5d3T6dr54d54r81d5T4d3T5d3T6dt8rt7r2t7r2t17rt8rd54r81d5T4d3T5d3T6dt17rt8r"
    "t17rt8rd54r81d27r54d54r81d27t8rt7r2t7r2t17rt8rd54r81d27t17rt8rt17rt8rd54r2673o7r2o5r4o5r193o5d4o4d"
    "4ro2d5r2t8rt7r2t6r3t17rt8rd8rd7r2d7r2d8rd7r2d6r84o5d4o4d5o2d6rt17rt8rt17rt8rd8rd7r2d7r2d8rd7r2d6r8"
    "4O6R3O5R4O3R6r189O5Td3O4Td3rO2Td4r2t8rt7r2t6r3t17rt8rd8rd7r2d7r2d8rd7r2d6r84O5Td3O4Td4O2Td5rt17rt8"
    "rt17rt8rd8rd7r2d7r2d8rd7r2d6r84O7TrO6Tr2O5Tr192O7ThO6Th2O5T2h2t8rt7r2t6r3t17rt8rd8rd7r2d7r2d8rd7r2"
    "d6r84O7T2O6T2hO5T3ht17rt8rt17rt8rd8rd7r2d7r2d8rd7r2d6r84o7r2o5r4o5r193o5d3ho4d3h2o2d5h2t8rt7r2t6r3"
    "t17rt8rd8rd7r2d7r2d8rd7r2d6r84o5d3ho4d3h2o2d5h2t17rt8rt17rt8rd8rd7r2d7r2d8rd7r2d6r2676o27r189o27t8"
    "rt7r2t6r3t17rt8rd8rd7r2d7r2d8rd7r2d6r84o27t17rt8rt17rt8rd8rd7r2d7r2d8rd7r2d6r84O6o3O5o4O3o6r189O6o"
    "3O5o4O3o6t8rt7r2t6r3t17rt8rd8rd7r2d7r2d8rd7r2d6r84O6o3O5o4O3o6t17rt8rt17rt8rd8rd7r2d7r2d8rd7r2d6r8"
    "4O17oO8or189O17oO8ot8rt7r2t6r3t17rt8rd8rd7r2d7r2d8rd7r2d6r84O17oO8ot17rt8rt17rt8rd8rd7r2d7r2d8rd7r"
    "2d6r84o27r189o27t8rt7r2t6r3t17rt8rd8rd7r2d7r2d8rd7r2d6r84o27t17rt8rt17rt8rd8rd7r2d7r2d8rd7r2d6r267"
    "6d27r54d54r81d27t8rt7r2t6r3t17rt8rd54r81d27t17rt8rt17rt8rd54r81d5Td6T2d6Td6r54d54r81d5Td6T2d6Td6t8"
    "rt7r2t6r3t17rt8rd54r81d5Td6T2d6Td6t17rt8rt17rt8rd54r81d5T4d3T5d3T6dr54d54r81d5T4d3T5d3T6dt8rt7r2t6"
    "r3t17rt8rd54r81d5T4d3T5d3T6dt17rt8rt17rt8rd54r81d27r54d54r81d27t8rt7r2t6r3t17rt8rd54r81d27t17rt8rt"
    "17rt8rd54r2673t8rt7r2t6r3t8rt7r2t6r3t8rt7r2t6r138t8rt7r2t6r3t8rt7r2t6r3t8rt7r2t6r138t8rt8rt7r2t8rt"
    "8rt7r2t8rt8rt7r137t6R3t5R4t3R6t8rt7r2t6r3t8rt7r2t6r138t8rt7r2t6r3t8rt7r2t6r3t8rt7r2t6r138t8rt8rt7r"
    "2t8rt8rt7r2t8rt8rt7r137O7TrO6Tr2O5Tr3t8rt7r2t6r3t8rt7r2t6r138O7TrO6Tr2O5Tr3t8rt7r2t6r3t8rt7r2t6r13"
    "8O7T2O6T2rO5T3rt8rt8rt7r2t8rt8rt7r137t8rt7r2t6r3t8rt7r2t6r3t8rt7r2t6r138t8rt7r2t6r3t8rt7r2t6r3t8rt"
    "7r2t6r138t8rt8rt7r2t8rt8rt7r2t8rt8rt7r2729o27t8rt7r2t6r3t8rt7r2t6r138o27t8rt7r2t6r3t8rt7r2t6r138o2"
    "7t8rt8rt7r2t8rt8rt7r137O6o3O5o4O3o6t8rt7r2t6r3t8rt7r2t6r138O6o3O5o4O3o6t8rt7r2t6r3t8rt7r2t6r138O6o"
    "3O5o4O3o6t8rt8rt7r2t8rt8rt7r137O17oO8ot8rt7r2t6r3t8rt7r2t6r138O17oO8ot8rt7r2t6r3t8rt7r2t6r138O17oO"
    "8ot8rt8rt7r2t8rt8rt7r137o27t8rt7r2t6r3t8rt7r2t6r138o27t8rt7r2t6r3t8rt7r2t6r138o27t8rt8rt7r2t8rt8rt"
    "7r2729d27t8rt7r2t6r3t8rt7r2t6r3d54r81d27t8rt7r2t6r3t8rt7r2t6r3d54r81d27t8rt8rt7r2t8rt8rt7r2d54r81d"
    "5Td6T2d6Td6t8rt7r2t6r3t8rt7r2t6r3d54r81d5Td6T2d6Td6t8rt7r2t6r3t8rt7r2t6r3d54r81d5Td6T2d6Td6t8rt8rt"
    "7r2t8rt8rt7r2d54r81d5T4d3T5d3T6dt8rt7r2t6r3t8rt7r2t6r3d54r81d5T4d3T5d3T6dt8rt7r2t6r3t8rt7r2t6r3d54"
    "r81d5T4d3T5d3T6dt8rt8rt7r2t8rt8rt7r2d54r81d27t8rt7r2t6r3t8rt7r2t6r3d54r81d27t8rt7r2t6r3t8rt7r2t6r3"
    "d54r81d27t8rt8rt7r2t8rt8rt7r2d54r2673"
    ;

std::string Expand(const char* runs) {
  std::string out;
  for (const char* p = runs; *p != '\0';) {
    const char letter = *p++;
    size_t count = 0;
    while (*p >= '0' && *p <= '9') count = count * 10 + static_cast<size_t>(*p++ - '0');
    out.append(count == 0 ? 1 : count, letter);
  }
  return out;
}

TunerModel GridModel(int which) {
  TunerModel model;
  if (which == 2) return model;  // none: the size rule
  model.chunk_bytes = 512 * 1024;
  const char* text = which == 0 ? "alpha_us=20 bandwidth_GBps=1.25 gamma_GBps=10"
                                : "alpha_us=2 bandwidth_GBps=10 gamma_GBps=10";
  EXPECT_TRUE(ParseTuneText(text, "grid", &model).ok());
  return model;
}

// The board as a provider of ranges only (its Run is never called here).
const BoardAllReduce kBoard(nullptr);

char Letter(const Selection& selection, bool grouped) {
  const BoardPlan plan = ToBoardPlan(selection.NativePlanFor(grouped));
  if (plan == BoardPlan::kOneShot) return 'O';
  if (plan == BoardPlan::kTwoPhase) return 'T';
  if (plan == BoardPlan::kReadInPlace) return 'R';
  return kLetters[static_cast<int>(selection.algorithm)];
}

TEST(SelectionTableTest, EveryShapeOnOneHostSelectsWhatTheEarlierRulesChose) {
  const char* specs[] = {"", "allreduce:oneshot", "direct"};
  const Algorithm requests[] = {Algorithm::kAuto, Algorithm::kRing};
  const int ranks[] = {2, 4, 8};
  const DataType dtypes[] = {chorusUint8, chorusFloat32, chorusFloat64};
  const size_t counts[] = {1, 3, 1024, 1025, 2048, 8192, 16384, 65536, 262145};
  const std::string expected = Expand(kExpectedRuns);
  ASSERT_EQ(expected.size(), 3u * 3 * 2 * 4 * 3 * kCollectiveCount * 3 * 9);
  size_t index = 0, mismatches = 0;
  for (int which = 0; which < 3; ++which) {
    for (const char* spec : specs) {
      SelectionInputs inputs;
      inputs.model = GridModel(which);
      ASSERT_TRUE(ParseAlgorithmSpec(spec, &inputs.algorithms).ok());
      for (Algorithm requested : requests) {
        // No board; the board with a core per rank; ranks sharing cores;
        // the same, launched in a group.
        for (int board = 0; board < 4; ++board) {
          for (int p : ranks) {
            Topology topology;
            topology.host_of_rank.assign(p, 0);
            inputs.nranks = p;
            inputs.topology = &topology;
            inputs.native = board != 0 ? &kBoard : nullptr;
            inputs.shares_cores = board >= 2;
            const SelectionTable table(inputs);
            for (size_t c = 0; c < kCollectiveCount; ++c) {
              for (DataType dtype : dtypes) {
                for (size_t count : counts) {
                  CollectiveArgs args;
                  args.coll = static_cast<Collective>(c);
                  args.count = count;
                  args.dtype = dtype;
                  args.nranks = p;
                  args.rank = 0;
                  args.topology = &topology;
                  ASSERT_LT(index, expected.size());
                  const char got = Letter(table.Select(args, requested), board == 3);
                  if (got != expected[index] && ++mismatches <= 20) {
                    ADD_FAILURE() << "model " << which << ", CHORUS_ALGO '" << spec << "', requested "
                                  << AlgorithmName(requested) << ", board state " << board << ", " << p << " ranks, "
                                  << CollectiveName(args.coll) << " " << count << " x " << DataTypeName(dtype)
                                  << ": expected '" << expected[index] << "', selected '" << got << "'";
                  }
                  ++index;
                }
              }
            }
          }
        }
      }
    }
  }
  EXPECT_EQ(index, expected.size());
  EXPECT_EQ(mismatches, 0u);
}

TEST(SelectionTableTest, BoardRangesAreTheBoardPlanRules) {
  // Ranks share cores, nothing forced: the board whatever the schedule,
  // one-shot then two-phase; below kBoardManyRanks ranks only up to
  // kBoardFewRanksMaxBytes, then where the schedule is oneshot or direct.
  const std::vector<NativeRange> few = BoardRanges(4, false, true);
  ASSERT_EQ(few.size(), 4u);
  EXPECT_EQ(few[0].last, kBoardOneShotMaxBytes);
  EXPECT_EQ(few[0].stands_in_for, Algorithm::kAuto);
  EXPECT_EQ(few[1].first, kBoardOneShotMaxBytes + 1);
  EXPECT_EQ(few[1].last, kBoardFewRanksMaxBytes);
  EXPECT_EQ(few[1].plan, ToNativePlan(BoardPlan::kTwoPhase));
  EXPECT_EQ(few[2].stands_in_for, Algorithm::kOneShot);
  EXPECT_EQ(few[3].stands_in_for, Algorithm::kDirect);
  EXPECT_EQ(few[3].last, kBoardAllReduceMaxBytes);
  EXPECT_EQ(BoardRanges(8, false, true).size(), 2u);
  // A core per rank: where the schedule is oneshot or direct, to 8 KiB;
  // then, two ranks only and nothing forced, read in place to 256 KiB.
  const std::vector<NativeRange> spare = BoardRanges(2, false, false);
  ASSERT_EQ(spare.size(), 3u);
  EXPECT_EQ(spare[0].last, kBoardSpareCoresMaxBytes);
  EXPECT_EQ(spare[1].first, kBoardTinyBytes + 1);
  EXPECT_EQ(spare[2].first, kBoardSpareCoresMaxBytes + 1);
  EXPECT_EQ(spare[2].last, kBoardReadInPlaceMaxBytes);
  EXPECT_EQ(spare[2].stands_in_for, Algorithm::kAuto);
  EXPECT_EQ(spare[2].plan, ToNativePlan(BoardPlan::kReadInPlace));
  EXPECT_EQ(BoardRanges(2, true, false).size(), 2u);
  EXPECT_EQ(BoardRanges(3, false, false).size(), 2u);
  EXPECT_TRUE(BoardRanges(1, false, true).empty());
}

TEST(SelectionTableTest, ForcedAlgorithmIsOneRangeAndTheSizeRuleTwo) {
  SelectionInputs inputs;
  inputs.nranks = 4;
  ASSERT_TRUE(ParseAlgorithmSpec("allreduce:hd", &inputs.algorithms).ok());
  const SelectionTable table(inputs);
  ASSERT_EQ(table.schedule_ranges(Collective::kAllReduce).size(), 1u);
  EXPECT_EQ(table.schedule_ranges(Collective::kAllReduce)[0].algorithm, Algorithm::kHalvingDoubling);
  EXPECT_EQ(table.schedule_ranges(Collective::kAllReduce)[0].source, ScheduleSource::kForced);
  const auto& broadcast = table.schedule_ranges(Collective::kBroadcast);
  ASSERT_EQ(broadcast.size(), 2u);
  EXPECT_EQ(broadcast[0].algorithm, Algorithm::kTree);
  EXPECT_EQ(broadcast[0].last, kTreeAlwaysBytes);
  EXPECT_EQ(broadcast[1].algorithm, Algorithm::kRing);
  ASSERT_EQ(table.schedule_ranges(Collective::kAllGather).size(), 1u);
  EXPECT_EQ(table.schedule_ranges(Collective::kAllGather)[0].algorithm, Algorithm::kRing);
}

TEST(SelectionTableTest, DescribeListsNativeRowsBeforeScheduleRows) {
  SelectionInputs inputs;
  inputs.nranks = 8;
  inputs.native = &kBoard;
  inputs.shares_cores = true;
  const std::string text = SelectionTable(inputs).Describe();
  for (const char* line : {"# selection table: p=8 board (ranks share cores)",
                           "allreduce 0..32768 B: native board-oneshot (instead of any schedule",
                           "allreduce 32769..1048576 B: native board-twophase",
                           "allreduce 0..262144 B: schedule tree (size rule)",
                           "allreduce 262145..inf B: schedule ring (size rule)",
                           "allgather 0..inf B: schedule ring (size rule)"}) {
    EXPECT_NE(text.find(line), std::string::npos) << line << "\n" << text;
  }
  EXPECT_LT(text.find("native board-oneshot"), text.find("schedule tree"));
}

// A provider of another collective takes its rows through the same table:
// nothing in the selection is particular to the board.
class BroadcastProvider final : public NativeProvider {
 public:
  const char* name() const override { return "test-provider"; }
  const char* PlanName(NativePlan plan) const override { return plan == 7 ? "test-plan" : "none"; }
  std::vector<NativeRange> Ranges(Collective coll, const NativeRangeInputs& inputs) const override {
    if (coll != Collective::kBroadcast || inputs.nranks < 2) return {};
    if (inputs.forced) return {{0, 100, Algorithm::kTree, 7}};
    return {{0, 100, Algorithm::kAuto, 7}};
  }
  Status Run(const Operation&, NativePlan, const std::atomic<bool>&, int, bool* served) override {
    *served = true;
    return Status::Ok();
  }
  int stuck_peer() const override { return -1; }
};

TEST(SelectionTableTest, AnyNativeProviderTakesItsRangesBeforeTheSchedules) {
  const BroadcastProvider provider;
  SelectionInputs inputs;
  inputs.nranks = 4;
  inputs.native = &provider;
  const SelectionTable table(inputs);
  CollectiveArgs args;
  args.coll = Collective::kBroadcast;
  args.dtype = chorusUint8;
  args.nranks = 4;
  args.count = 100;
  EXPECT_EQ(table.Select(args, Algorithm::kAuto).native_plan, 7);
  EXPECT_EQ(table.Select(args, Algorithm::kAuto).NativePlanFor(/*grouped=*/true), kNoNativePlan);
  args.count = 101;
  EXPECT_EQ(table.Select(args, Algorithm::kAuto).native_plan, kNoNativePlan);
  args.count = 100;
  // Pinned: the forced rows, only where the schedule is tree.
  EXPECT_EQ(table.Select(args, Algorithm::kTree).native_plan, 7);
  EXPECT_EQ(table.Select(args, Algorithm::kRing).native_plan, kNoNativePlan);
  args.coll = Collective::kAllReduce;
  EXPECT_EQ(table.Select(args, Algorithm::kAuto).native_plan, kNoNativePlan);
  const std::string text = table.Describe();
  EXPECT_NE(text.find("# selection table: p=4 test-provider"), std::string::npos) << text;
  EXPECT_NE(text.find("broadcast 0..100 B: native test-plan (instead of any schedule"), std::string::npos) << text;
  EXPECT_EQ(SelectionTable(SelectionInputs()).Describe().find("# selection table: p=1 no native provider"), 0u);
}

CollectiveArgs AllReduceOf(size_t count) {
  CollectiveArgs args;
  args.coll = Collective::kAllReduce;
  args.count = count;
  args.dtype = chorusFloat32;
  args.op = ReduceOp::kSum;
  args.nranks = 2;
  args.rank = 0;
  return args;
}

TEST(SelectionCacheTest, ShapesAreFoundUntilEightNewerOnesReplaceThem) {
  SelectionCache cache;
  Selection tree;
  tree.algorithm = Algorithm::kTree;
  EXPECT_EQ(cache.Find(AllReduceOf(2), Algorithm::kAuto), nullptr);
  cache.Remember(AllReduceOf(2), Algorithm::kAuto, tree);
  ASSERT_NE(cache.Find(AllReduceOf(2), Algorithm::kAuto), nullptr);
  EXPECT_EQ(cache.Find(AllReduceOf(2), Algorithm::kAuto)->selection.algorithm, Algorithm::kTree);

  // Another requested algorithm, count, op or placement is another shape.
  EXPECT_EQ(cache.Find(AllReduceOf(2), Algorithm::kTree), nullptr);
  EXPECT_EQ(cache.Find(AllReduceOf(4), Algorithm::kAuto), nullptr);
  CollectiveArgs max = AllReduceOf(2);
  max.op = ReduceOp::kMax;
  EXPECT_EQ(cache.Find(max, Algorithm::kAuto), nullptr);
  CollectiveArgs in_place = AllReduceOf(2);
  in_place.in_place = true;
  EXPECT_EQ(cache.Find(in_place, Algorithm::kAuto), nullptr);

  // Small and round robin: the oldest shape goes first.
  for (size_t count = 100; count < 107; ++count) cache.Remember(AllReduceOf(count), Algorithm::kAuto, Selection());
  EXPECT_NE(cache.Find(AllReduceOf(2), Algorithm::kAuto), nullptr);
  cache.Remember(AllReduceOf(107), Algorithm::kAuto, Selection());
  EXPECT_EQ(cache.Find(AllReduceOf(2), Algorithm::kAuto), nullptr);
  EXPECT_NE(cache.Find(AllReduceOf(107), Algorithm::kAuto), nullptr);
  cache.Clear();
  EXPECT_EQ(cache.Find(AllReduceOf(107), Algorithm::kAuto), nullptr);
}

}  // namespace
}  // namespace chorus
