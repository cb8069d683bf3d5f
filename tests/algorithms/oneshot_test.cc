// The one-shot allreduce ("oneshot"): one round of whole-buffer messages,
// (p-1) buffers each way per rank, and the documented rank-order reduction
// giving bit-identical floats on every rank, in place or not.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <random>
#include <vector>

#include "algorithms/algorithm.h"
#include "collective_case.h"
#include "float_allreduce.h"
#include "virtual_executor.h"

namespace chorus::testing {
namespace {

CollectiveArgs Args(int nranks, int rank, size_t count, bool in_place = false) {
  CollectiveArgs args = RankArgs(Collective::kAllReduce, nranks, rank, count);
  args.in_place = in_place;
  return args;
}

TEST(OneShotAlgorithm, OneRoundOfWholeBuffers) {
  for (int p : {2, 3, 4, 8, 13}) {
    for (bool in_place : {false, true}) {
      const size_t count = 257;
      for (int r = 0; r < p; ++r) {
        Schedule schedule;
        ASSERT_TRUE(BuildSchedule(Args(p, r, count, in_place), Algorithm::kOneShot, &schedule).ok());
        EXPECT_EQ(schedule.algorithm, "oneshot");
        size_t sent = 0, received = 0;
        std::vector<int> to, from;
        for (const Step& step : schedule.steps) {
          if (step.kind == StepKind::kSend) {
            sent += step.bytes;
            to.push_back(step.peer);
            EXPECT_TRUE(step.deps.empty()) << "sends start at once";
          }
          if (step.kind == StepKind::kRecv) {
            received += step.bytes;
            from.push_back(step.peer);
            EXPECT_TRUE(step.deps.empty()) << "receives start at once";
          }
          EXPECT_NE(step.kind, StepKind::kRecvReduce);
        }
        EXPECT_EQ(sent, (p - 1) * count * 4);
        EXPECT_EQ(received, (p - 1) * count * 4);
        ASSERT_EQ(to.size(), size_t(p - 1));
        for (int k = 1; k < p; ++k) {
          EXPECT_EQ(to[k - 1], (r + k) % p);
          EXPECT_EQ(from[k - 1], (r - k + p) % p);
        }
        // Slot q holds rank q's input; in place, ranks >= 2 also keep their own.
        const int last_slot = std::max(r == p - 1 ? p - 2 : p - 1, in_place && r >= 2 ? r : 0);
        EXPECT_EQ(schedule.scratch_bytes, static_cast<size_t>(last_slot + 1) * count * 4) << "p=" << p << " rank " << r;
      }
    }
  }
}

TEST(OneShotAlgorithm, FloatsAreReducedInRankOrderOnEveryRank) {
  std::mt19937 random(7);
  std::uniform_real_distribution<float> value(-1000.0f, 1000.0f);
  for (int p : {2, 3, 5, 8}) {
    const size_t count = 301;
    std::vector<std::vector<float>> inputs(p, std::vector<float>(count));
    for (auto& input : inputs) {
      for (float& x : input) x = value(random) / 3.0f;  // inexact sums: the order shows
    }
    std::vector<float> expected(count);
    for (size_t i = 0; i < count; ++i) {
      float acc = inputs[0][i];
      for (int q = 1; q < p; ++q) acc = acc + inputs[q][i];
      expected[i] = acc;
    }
    ExpectBitIdenticalOnEveryRank(Algorithm::kOneShot, inputs, expected, {size_t{4}, size_t{100}, size_t{1} << 20},
                                  /*seed=*/3);
  }
}

TEST(OneShotAlgorithm, EveryTypeAndOpAcrossHosts) {
  for (const std::vector<int>& hosts : {std::vector<int>{0, 0, 1, 1}, std::vector<int>{0, 1, 2}}) {
    CollectiveCase c;
    c.coll = Collective::kAllReduce;
    c.algo = Algorithm::kOneShot;
    c.nranks = static_cast<int>(hosts.size());
    c.count = 77;
    c.host_of_rank = hosts;
    const std::string error = RunCollectiveCase(c);
    EXPECT_TRUE(error.empty()) << error;
  }
}

TEST(OneShotAlgorithm, ParsedByNameForAllReduceOnly) {
  AlgorithmTable table;
  ASSERT_TRUE(ParseAlgorithmSpec("one_shot", &table).ok());
  for (size_t i = 0; i < static_cast<size_t>(Collective::kCount); ++i) {
    EXPECT_EQ(table.forced[i], i == 0 ? Algorithm::kOneShot : Algorithm::kAuto);
  }
  EXPECT_STREQ(AlgorithmName(Algorithm::kOneShot), "oneshot");
  EXPECT_EQ(static_cast<int>(Algorithm::kOneShot), 11);  // appended: older values keep their numbers
}

}  // namespace
}  // namespace chorus::testing
