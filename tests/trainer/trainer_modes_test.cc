// The communication modes of the trainer (examples/trainer/step_exchange*.cc)
// end to end on generated images, ranks as threads: every mode learns; the
// synchronous ones (overlap, pipe-sgd, lion-cub) keep ranks bit-identical;
// gossip keeps them close; lion-cub's sign votes cut the wire bytes 32x.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "examples/trainer/gemm.h"
#include "tests/trainer/ranks_as_threads.h"

namespace trainer_test {
namespace {

class TrainerModes : public ::testing::Test {
 protected:
  void SetUp() override { SetBlasThreads(1); }
  const Dataset train_ = MakeBands(320, 1);
  const Dataset test_ = MakeBands(100, 2);
};

TrainOptions WithMode(const char* mode) {
  TrainOptions options = SmallRun();
  options.exchange.mode = mode;
  return options;
}

void ExpectLearned(const std::vector<RankResult>& ranks, double min_accuracy) {
  for (const RankResult& r : ranks) ASSERT_TRUE(r.ok) << r.error;
  ASSERT_EQ(ranks[0].epochs.size(), 2u);
  EXPECT_LT(ranks[0].epochs[1].train_loss, ranks[0].epochs[0].train_loss);
  EXPECT_GE(ranks[0].epochs[1].test_accuracy, min_accuracy);
  for (const RankResult& r : ranks) {
    for (float w : r.weights) ASSERT_TRUE(std::isfinite(w));
  }
}

TEST_F(TrainerModes, OverlapLearnsAndEqualsBucketedSync) {
  TrainOptions options = WithMode("overlap");
  options.bucket_bytes = 4096;  // many buckets, the last one partial
  const std::vector<RankResult> overlap = TrainRanks(2, options, train_, test_, "allreduce:ring");
  ExpectLearned(overlap, 0.8);
  EXPECT_EQ(overlap[0].weights, overlap[1].weights);
  EXPECT_GT(overlap[0].epochs[0].hidden_communication_seconds, 0.0);

  // Same bucket grid and algorithm as bucketed sync: the same sums, bit for bit.
  options.epochs = 1;
  options.max_steps_per_epoch = 3;
  const std::vector<RankResult> a = TrainRanks(2, options, train_, test_, "allreduce:ring");
  options.exchange.mode = "sync";
  const std::vector<RankResult> b = TrainRanks(2, options, train_, test_, "allreduce:ring");
  ASSERT_TRUE(a[0].ok && b[0].ok) << a[0].error << b[0].error;
  EXPECT_EQ(a[0].weights, b[0].weights);
}

// --timed-after-steps: the steady-state columns time the steps after the
// first N; by default they are the whole epoch.
TEST_F(TrainerModes, StepsAfterTheWarmUpAreTimedApart) {
  TrainOptions options = WithMode("pipe-sgd");
  options.exchange.warmup_steps = 3;
  options.timed_after_steps = 3;
  const std::vector<RankResult> ranks = TrainRanks(2, options, train_, test_);
  for (const RankResult& r : ranks) {
    ASSERT_TRUE(r.ok) << r.error;
    for (const EpochStats& e : r.epochs) {
      EXPECT_EQ(e.steady_steps, e.steps - 3);
      EXPECT_GT(e.steady_seconds, 0.0);
      EXPECT_LE(e.steady_seconds, e.seconds);
    }
  }
  options.timed_after_steps = 0;
  const std::vector<RankResult> whole = TrainRanks(1, options, train_, test_);
  ASSERT_TRUE(whole[0].ok) << whole[0].error;
  EXPECT_EQ(whole[0].epochs[0].steady_steps, whole[0].epochs[0].steps);
  EXPECT_LE(whole[0].epochs[0].steady_seconds, whole[0].epochs[0].seconds);
}

TEST_F(TrainerModes, PipeSgdLearnsAndStaysIdentical) {
  TrainOptions options = WithMode("pipe-sgd");
  options.exchange.warmup_steps = 3;
  const std::vector<RankResult> ranks = TrainRanks(2, options, train_, test_);
  ExpectLearned(ranks, 0.8);
  EXPECT_EQ(ranks[0].weights, ranks[1].weights);
  EXPECT_GT(ranks[0].epochs[0].hidden_communication_seconds, 0.0);
}

TEST_F(TrainerModes, PipeSgdAppliesEachGradientOneStepLate) {
  // Without warm-up, step 0 applies nothing and step 1 applies step 0's
  // gradient (taken at the same weights): one synchronous step, exactly.
  TrainOptions options = WithMode("pipe-sgd");
  options.epochs = 1;
  options.exchange.warmup_steps = 0;
  options.max_steps_per_epoch = 2;
  const std::vector<RankResult> pipe = TrainRanks(2, options, train_, test_, "allreduce:ring");
  options.exchange.mode = "sync";
  options.max_steps_per_epoch = 1;
  const std::vector<RankResult> sync = TrainRanks(2, options, train_, test_, "allreduce:ring");
  ASSERT_TRUE(pipe[0].ok && sync[0].ok) << pipe[0].error << sync[0].error;
  EXPECT_EQ(pipe[0].weights, sync[0].weights);
}

TEST_F(TrainerModes, PipeSgdFp16WireHalvesTheBytes) {
  TrainOptions options = WithMode("pipe-sgd");
  options.exchange.warmup_steps = 3;
  options.exchange.fp16_wire = true;
  const std::vector<RankResult> ranks = TrainRanks(2, options, train_, test_);
  // 10 bands (chance 0.1); with one step of staleness and the 16-bit wire,
  // 20 steps reach 0.78-0.8 depending on the convolution's rounding.
  ExpectLearned(ranks, 0.7);
  EXPECT_EQ(ranks[0].weights, ranks[1].weights);
  const EpochStats& first = ranks[0].epochs[0];
  const std::unique_ptr<Model> model = MakeLeNet(5, 0.25);
  const int steps = 320 / 32;
  // Steps 3..9 of the first epoch were pipelined, 4 bytes per parameter each.
  EXPECT_EQ(first.uncompressed_bytes, 4ull * model->weights().size() * (steps - 3));
  EXPECT_LE(2 * first.wire_bytes, first.uncompressed_bytes + 64);
  EXPECT_GT(first.wire_bytes, 0u);
  // Gradient bytes: 3 float32 warm-up steps, then the fp16 wire.
  EXPECT_EQ(first.gradient_bytes, 4ull * model->weights().size() * 3 + first.wire_bytes);
  EXPECT_EQ(first.steps, steps);
}

TEST_F(TrainerModes, GradientBytesCountEveryModesPayload) {
  const std::unique_ptr<Model> model = MakeLeNet(5, 0.25);
  const int steps = 320 / 32;
  const unsigned long long float32_epoch = 4ull * model->weights().size() * steps;
  TrainOptions options = WithMode("sync");
  options.epochs = 1;
  for (const char* mode : {"sync", "overlap", "pipe-sgd"}) {
    options.exchange.mode = mode;
    const std::vector<RankResult> ranks = TrainRanks(2, options, train_, test_);
    ASSERT_TRUE(ranks[0].ok) << mode << ": " << ranks[0].error;
    EXPECT_EQ(ranks[0].epochs[0].gradient_bytes, float32_epoch) << mode;
    EXPECT_EQ(ranks[0].epochs[0].steps, steps) << mode;
  }
  options.exchange.mode = "gossip";  // weights, not gradients
  const std::vector<RankResult> gossip = TrainRanks(2, options, train_, test_);
  ASSERT_TRUE(gossip[0].ok) << gossip[0].error;
  EXPECT_EQ(gossip[0].epochs[0].gradient_bytes, 0u);
  EXPECT_EQ(gossip[0].epochs[0].extra_bytes, float32_epoch);
  options.exchange.mode = "sync";  // one rank sends nothing
  const std::vector<RankResult> alone = TrainRanks(1, options, train_, test_);
  ASSERT_TRUE(alone[0].ok) << alone[0].error;
  EXPECT_EQ(alone[0].epochs[0].gradient_bytes, 0u);
}

TEST_F(TrainerModes, GossipLearnsWithCloseButDistinctReplicas) {
  // 4 ranks: with 2 the partner is always the other rank, an exact average.
  const std::vector<RankResult> ranks = TrainRanks(4, WithMode("gossip"), train_, test_);
  ExpectLearned(ranks, 0.6);
  EXPECT_NE(ranks[0].weights, ranks[1].weights);
  for (const RankResult& r : ranks) EXPECT_LT(MaxDifference(ranks[0].weights, r.weights), 0.05);
  EXPECT_GT(ranks[0].epochs[0].extra_bytes, 0u);
}

TrainOptions LionCub() {
  TrainOptions options = WithMode("lion-cub");
  options.optimizer.name = "lion";
  options.optimizer.weight_decay = 0.0f;
  options.lr.base_lr = 0.002f;
  return options;
}

TEST_F(TrainerModes, LionCubSignVoteLearnsWith32xFewerBytes) {
  const std::vector<RankResult> ranks = TrainRanks(2, LionCub(), train_, test_);
  ExpectLearned(ranks, 0.8);
  EXPECT_EQ(ranks[0].weights, ranks[1].weights);
  const std::unique_ptr<Model> model = MakeLeNet(5, 0.25);
  const unsigned long long float32_bytes = 4ull * model->weights().size() * (320 / 32);
  for (const EpochStats& e : ranks[0].epochs) {
    EXPECT_EQ(e.uncompressed_bytes, float32_bytes);
    EXPECT_GT(e.wire_bytes, 0u);
    EXPECT_LE(25 * e.wire_bytes, float32_bytes);
    EXPECT_EQ(e.extra_bytes, 4ull * model->weights().size());  // one momentum sync in 10 steps
    EXPECT_EQ(e.gradient_bytes, e.wire_bytes);  // the votes; momenta are not gradients
  }
}

TEST_F(TrainerModes, LionCubInt8LearnsAndStaysIdentical) {
  TrainOptions options = LionCub();
  options.exchange.lion_cub_int8 = true;
  const std::vector<RankResult> ranks = TrainRanks(2, options, train_, test_);
  ExpectLearned(ranks, 0.8);
  EXPECT_EQ(ranks[0].weights, ranks[1].weights);
  EXPECT_LE(4 * ranks[0].epochs[0].wire_bytes, ranks[0].epochs[0].uncompressed_bytes + 64);
}

}  // namespace
}  // namespace trainer_test
