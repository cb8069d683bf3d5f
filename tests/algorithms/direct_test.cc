// The direct algorithm ("direct"): traffic per rank, the rotation of peers,
// bit-identical float results on every rank whatever the execution order,
// and multi-host placements.
#include <gtest/gtest.h>

#include <cstdint>
#include <random>
#include <vector>

#include "algorithms/algorithm.h"
#include "algorithms/segments.h"
#include "collective_case.h"
#include "float_allreduce.h"
#include "virtual_executor.h"

namespace chorus::testing {
namespace {

struct Traffic {
  size_t sent = 0;
  size_t received = 0;
};

Traffic TrafficOf(const Schedule& schedule) {
  Traffic t;
  for (const Step& step : schedule.steps) {
    if (step.kind == StepKind::kSend) t.sent += step.bytes;
    if (step.kind == StepKind::kRecv || step.kind == StepKind::kRecvReduce) t.received += step.bytes;
  }
  return t;
}

TEST(DirectAlgorithm, AllReduceMovesTwiceTheBufferOverP) {
  for (int p : {2, 3, 4, 5, 8, 13}) {
    for (bool in_place : {false, true}) {
      const size_t count = 1000 * p;  // divisible: exactly 2(p-1)/p n
      for (int r = 0; r < p; ++r) {
        CollectiveArgs args = RankArgs(Collective::kAllReduce, p, r, count);
        args.in_place = in_place;
        Schedule schedule;
        ASSERT_TRUE(BuildSchedule(args, Algorithm::kDirect, &schedule).ok());
        const Traffic t = TrafficOf(schedule);
        EXPECT_EQ(t.sent, 2 * (p - 1) * count / p * 4) << "p=" << p << " rank " << r;
        EXPECT_EQ(t.received, 2 * (p - 1) * count / p * 4) << "p=" << p << " rank " << r;
        EXPECT_EQ(schedule.scratch_bytes, 0u);
        EXPECT_EQ(schedule.algorithm, "direct");
      }
    }
  }
}

TEST(DirectAlgorithm, UnevenCountsMoveTheRingsSlices) {
  // Rank r owns slice r of the ring's split: it sends every other slice once
  // and its own p-1 times, and receives the same amounts.
  const int p = 7;
  const size_t count = 1000 * p + 3;
  for (int r = 0; r < p; ++r) {
    Schedule schedule;
    ASSERT_TRUE(BuildSchedule(RankArgs(Collective::kAllReduce, p, r, count), Algorithm::kDirect, &schedule).ok());
    const size_t own = EvenSegment(count, p, r).count * 4;
    const Traffic t = TrafficOf(schedule);
    EXPECT_EQ(t.sent, count * 4 - own + (p - 1) * own);
    EXPECT_EQ(t.received, t.sent);
  }
}

TEST(DirectAlgorithm, ReduceScatterAndAllGatherMovePMinusOneBlocks) {
  for (int p : {2, 5, 8}) {
    const size_t count = 333;
    for (Collective coll : {Collective::kReduceScatter, Collective::kAllGather}) {
      for (int r = 0; r < p; ++r) {
        Schedule schedule;
        ASSERT_TRUE(BuildSchedule(RankArgs(coll, p, r, count), Algorithm::kDirect, &schedule).ok());
        const Traffic t = TrafficOf(schedule);
        EXPECT_EQ(t.sent, (p - 1) * count * 4) << CollectiveName(coll);
        EXPECT_EQ(t.received, (p - 1) * count * 4) << CollectiveName(coll);
      }
    }
  }
}

TEST(DirectAlgorithm, RoundKTalksToRPlusKAndRMinusK) {
  // No rank is everyone's first peer: at round k rank r sends to r+k and
  // receives from r-k, in both phases.
  const int p = 6;
  for (int r = 0; r < p; ++r) {
    Schedule schedule;
    ASSERT_TRUE(BuildSchedule(RankArgs(Collective::kAllReduce, p, r, 600), Algorithm::kDirect, &schedule).ok());
    std::vector<int> to, from;
    for (const Step& step : schedule.steps) {
      if (step.kind == StepKind::kSend) to.push_back(step.peer);
      if (step.kind == StepKind::kRecv || step.kind == StepKind::kRecvReduce) from.push_back(step.peer);
    }
    ASSERT_EQ(to.size(), size_t(2 * (p - 1)));
    ASSERT_EQ(from.size(), size_t(2 * (p - 1)));
    for (int k = 1; k < p; ++k) {
      for (int phase = 0; phase < 2; ++phase) {
        EXPECT_EQ(to[phase * (p - 1) + k - 1], (r + k) % p);
        EXPECT_EQ(from[phase * (p - 1) + k - 1], (r - k + p) % p);
      }
    }
  }
}

TEST(DirectAlgorithm, FloatResultsAreBitIdenticalOnEveryRankAndEveryOrder) {
  std::mt19937 random(42);
  std::uniform_real_distribution<float> value(-1000.0f, 1000.0f);
  for (int p : {3, 4, 7}) {
    const size_t count = 1031;
    std::vector<std::vector<float>> inputs(p, std::vector<float>(count));
    for (auto& input : inputs) {
      for (float& x : input) x = value(random) / 3.0f;  // inexact sums: order matters
    }
    // The documented order: slice r = ((x_r + x_{r-1}) + x_{r-2}) + ...
    std::vector<float> expected(count);
    for (int owner = 0; owner < p; ++owner) {
      const Segment s = EvenSegment(count, p, owner);
      for (size_t i = s.offset; i < s.offset + s.count; ++i) {
        float acc = inputs[owner][i];
        for (int k = 1; k < p; ++k) acc = acc + inputs[(owner - k + p) % p][i];
        expected[i] = acc;
      }
    }
    ExpectBitIdenticalOnEveryRank(Algorithm::kDirect, inputs, expected,
                                  {size_t{4}, size_t{64}, size_t{1000}, size_t{1} << 20}, /*seed=*/1);
  }
}

TEST(DirectAlgorithm, WorksAcrossHostsIgnoringTheTopology) {
  // Allowed on several hosts: every pair still talks directly.
  for (const std::vector<int>& hosts : {std::vector<int>{0, 0, 1, 1}, std::vector<int>{0, 1, 0, 1, 2},
                                        std::vector<int>{0, 1, 2}}) {
    for (Collective coll : {Collective::kAllReduce, Collective::kReduceScatter, Collective::kAllGather}) {
      CollectiveCase c;
      c.coll = coll;
      c.algo = Algorithm::kDirect;
      c.nranks = static_cast<int>(hosts.size());
      c.count = 101;
      c.host_of_rank = hosts;
      c.in_place = hosts.size() % 2 == 1;
      const std::string error = RunCollectiveCase(c);
      EXPECT_TRUE(error.empty()) << error;
    }
  }
}

TEST(DirectAlgorithm, ParsedByNameForItsCollectivesOnly) {
  AlgorithmTable table;
  ASSERT_TRUE(ParseAlgorithmSpec("Direct", &table).ok());
  for (size_t i = 0; i < static_cast<size_t>(Collective::kCount); ++i) {
    const auto coll = static_cast<Collective>(i);
    const bool has = coll == Collective::kAllReduce || coll == Collective::kReduceScatter ||
                     coll == Collective::kAllGather;
    EXPECT_EQ(table.forced[i], has ? Algorithm::kDirect : Algorithm::kAuto) << CollectiveName(coll);
  }
  EXPECT_STREQ(AlgorithmName(Algorithm::kDirect), "direct");
  EXPECT_EQ(static_cast<int>(Algorithm::kDirect), 10);  // appended: older values keep their numbers
  const Status status = ParseAlgorithmSpec("allreduce:direkt", &table);
  EXPECT_EQ(status.code(), chorusInvalidArgument);
  EXPECT_NE(status.message().find("direct"), std::string::npos) << status.message();
}

}  // namespace
}  // namespace chorus::testing
