// The data-parallel trainer end to end on generated images: ranks as
// threads with chorus communicators. Loss goes down, and 2 ranks with the
// same global batch take the same step as 1 rank (up to float rounding).
#include <gtest/gtest.h>

#include <cmath>
#include <thread>
#include <vector>

#include "examples/trainer/gemm.h"
#include "tests/trainer/ranks_as_threads.h"

namespace trainer_test {
namespace {

class TrainerEndToEnd : public ::testing::Test {
 protected:
  void SetUp() override { SetBlasThreads(1); }
  const Dataset train_ = MakeBands(320, 1);
  const Dataset test_ = MakeBands(100, 2);
};

TEST_F(TrainerEndToEnd, TwoRanksLearnAndStayIdentical) {
  const std::vector<RankResult> ranks = TrainRanks(2, SmallRun(), train_, test_);
  for (const RankResult& r : ranks) ASSERT_TRUE(r.ok) << r.error;
  ASSERT_EQ(ranks[0].epochs.size(), 2u);
  EXPECT_LT(ranks[0].epochs[1].train_loss, ranks[0].epochs[0].train_loss);
  EXPECT_LT(ranks[0].epochs[1].train_loss, 1.0);
  EXPECT_GE(ranks[0].epochs[1].test_accuracy, 0.8);
  // Same averaged gradients, same optimizer: bit-identical weights.
  EXPECT_EQ(ranks[0].weights, ranks[1].weights);
  EXPECT_GT(ranks[0].epochs[0].images_per_second, 0.0);
  EXPECT_GT(ranks[0].epochs[0].communication_seconds, 0.0);
}

TEST_F(TrainerEndToEnd, OneStepOnTwoRanksEqualsOneStepOnOne) {
  TrainOptions options = SmallRun();
  options.epochs = 1;
  options.max_steps_per_epoch = 1;
  RankResult single;
  TrainOneRank(options, train_, test_, nullptr, &single);
  ASSERT_TRUE(single.ok) << single.error;
  const std::unique_ptr<Model> initial = MakeLeNet(5, 0.25);
  ASSERT_GT(MaxDifference(single.weights, initial->weights()), 1e-3);  // the step moved the weights

  for (const char* algo : {"allreduce:ring", "allreduce:tree", "allreduce:direct"}) {
    const std::vector<RankResult> pair = TrainRanks(2, options, train_, test_, algo);
    for (const RankResult& r : pair) ASSERT_TRUE(r.ok) << r.error;
    // Only the summation order of the gradients differs.
    EXPECT_LT(MaxDifference(single.weights, pair[0].weights), 1e-5) << algo;
    EXPECT_EQ(pair[0].weights, pair[1].weights) << algo;
    EXPECT_NEAR(single.epochs[0].train_loss, pair[0].epochs[0].train_loss, 1e-5) << algo;
  }
}

// --step-trace's record: one entry per step, in order, each step's phases in
// time order, and nothing recorded until it is switched on.
TEST_F(TrainerEndToEnd, RecordsEveryStepsTimestampsInOrder) {
  TrainOptions options = SmallRun();
  options.epochs = 2;
  options.max_steps_per_epoch = 3;
  std::unique_ptr<Model> model = MakeLeNet(/*seed=*/5, /*width=*/0.25);
  std::unique_ptr<DataParallelTrainer> trainer;
  ASSERT_TRUE(DataParallelTrainer::Create(options, model.get(), &train_, &test_, nullptr, &trainer).ok());
  EpochStats stats;
  ASSERT_TRUE(trainer->TrainEpoch(0, &stats).ok());
  EXPECT_TRUE(trainer->step_timings().empty());
  trainer->set_record_step_timings(true);
  ASSERT_TRUE(trainer->TrainEpoch(1, &stats).ok());
  const std::vector<StepTiming>& timings = trainer->step_timings();
  ASSERT_EQ(timings.size(), 3u);
  for (size_t i = 0; i < timings.size(); ++i) {
    EXPECT_EQ(timings[i].step, 3 + static_cast<int>(i));  // global steps: epoch 0 took 0-2
    EXPECT_LE(timings[i].begin, timings[i].computed);
    EXPECT_LE(timings[i].computed, timings[i].updated);
    if (i > 0) {
      EXPECT_LE(timings[i - 1].updated, timings[i].begin);
    }
  }
  EXPECT_GT(timings.back().updated, timings.front().begin);  // forward and backward take time
}

TEST_F(TrainerEndToEnd, BucketedAllReduceMatchesFused) {
  TrainOptions options = SmallRun();
  options.epochs = 1;
  options.max_steps_per_epoch = 2;
  const std::vector<RankResult> fused = TrainRanks(2, options, train_, test_, "allreduce:ring");
  options.bucket_bytes = 4096;  // many buckets, the last one partial
  const std::vector<RankResult> bucketed = TrainRanks(2, options, train_, test_, "allreduce:ring");
  ASSERT_TRUE(fused[0].ok && bucketed[0].ok) << fused[0].error << bucketed[0].error;
  // Ring AllReduce sums each element in an order set by its position in the
  // buffer, so buckets may round differently.
  EXPECT_LT(MaxDifference(fused[0].weights, bucketed[0].weights), 1e-5);
}

TEST_F(TrainerEndToEnd, BatchNotDivisibleByRanksIsRejected) {
  TrainOptions options = SmallRun();
  options.global_batch = 33;
  const std::vector<RankResult> ranks = TrainRanks(2, options, train_, test_);
  ASSERT_FALSE(ranks[0].ok);
  EXPECT_NE(ranks[0].error.find("multiple of the 2 ranks"), std::string::npos) << ranks[0].error;
}

}  // namespace
}  // namespace trainer_test
