// The data-parallel trainer end to end on generated images: ranks as
// threads with chorus communicators. Loss goes down, and 2 ranks with the
// same global batch take the same step as 1 rank (up to float rounding).
#include <gtest/gtest.h>

#include <cmath>
#include <thread>
#include <vector>

#include "examples/trainer/data_parallel_trainer.h"
#include "examples/trainer/gemm.h"
#include "examples/trainer/models.h"
#include "examples/trainer/random.h"

namespace trainer_test {
namespace {

using namespace trainer;

// Class k is a bright horizontal band at rows 2k+4.. plus noise: learnable
// in a few steps by a small LeNet.
Dataset MakeBands(int count, uint64_t seed) {
  Dataset data;
  data.count = count;
  data.sample = Shape{1, 1, 28, 28};
  data.images.resize(static_cast<size_t>(count) * 784);
  data.labels.resize(count);
  Rng rng(seed);
  for (int i = 0; i < count; ++i) {
    const int label = static_cast<int>(rng.Below(10));
    data.labels[i] = static_cast<uint8_t>(label);
    for (int p = 0; p < 784; ++p) {
      const int row = p / 28;
      const bool band = row >= 2 * label + 4 && row < 2 * label + 7;
      data.images[static_cast<size_t>(i) * 784 + p] = static_cast<float>((band ? 1.5 : -0.5) + 0.3 * rng.Normal());
    }
  }
  return data;
}

TrainOptions SmallRun() {
  TrainOptions options;
  options.epochs = 2;
  options.global_batch = 32;
  options.data_seed = 11;
  options.lr.kind = "constant";
  options.lr.base_lr = 0.02f;
  return options;
}

struct RankResult {
  std::vector<float> weights;
  std::vector<EpochStats> epochs;
  bool ok = false;
  std::string error;
};

void TrainOneRank(const TrainOptions& options, const Dataset& train, const Dataset& test, chorusComm_t comm,
                  RankResult* result) {
  std::unique_ptr<Model> model = MakeLeNet(/*seed=*/5, /*width=*/0.25);
  std::unique_ptr<DataParallelTrainer> trainer;
  chorus::Status status = DataParallelTrainer::Create(options, model.get(), &train, &test, comm, &trainer);
  if (status.ok()) status = trainer->SynchronizeWeights();
  for (int epoch = 0; status.ok() && epoch < options.epochs; ++epoch) {
    EpochStats stats;
    status = trainer->TrainEpoch(epoch, &stats);
    result->epochs.push_back(stats);
  }
  result->ok = status.ok();
  result->error = status.message();
  result->weights = model->weights();
}

// Runs `nranks` ranks as threads, each with its own communicator forced to
// `algo` (nullptr: automatic choice).
std::vector<RankResult> TrainRanks(int nranks, const TrainOptions& options, const Dataset& train,
                                   const Dataset& test, const char* algo = nullptr) {
  std::vector<RankResult> results(nranks);
  chorusUniqueId id;
  EXPECT_EQ(chorusGetUniqueId(&id), chorusSuccess);
  std::vector<std::thread> threads;
  for (int rank = 0; rank < nranks; ++rank) {
    threads.emplace_back([&, rank] {
      chorusConfig_t config = CHORUS_CONFIG_INITIALIZER;
      config.algo = algo;
      chorusComm_t comm = nullptr;
      if (chorusCommInitRankConfig(&comm, nranks, id, rank, &config) != chorusSuccess) {
        results[rank].error = chorusGetLastError(nullptr);
        return;
      }
      TrainOneRank(options, train, test, comm, &results[rank]);
      (void)chorusCommDestroy(comm);
    });
  }
  for (auto& thread : threads) thread.join();
  return results;
}

double MaxDifference(const std::vector<float>& a, const std::vector<float>& b) {
  double worst = 0.0;
  for (size_t i = 0; i < a.size(); ++i) worst = std::max(worst, std::abs(static_cast<double>(a[i]) - b[i]));
  return worst;
}

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

  for (const char* algo : {"allreduce:ring", "allreduce:tree"}) {
    const std::vector<RankResult> pair = TrainRanks(2, options, train_, test_, algo);
    for (const RankResult& r : pair) ASSERT_TRUE(r.ok) << r.error;
    // Only the summation order of the gradients differs.
    EXPECT_LT(MaxDifference(single.weights, pair[0].weights), 1e-5) << algo;
    EXPECT_EQ(pair[0].weights, pair[1].weights) << algo;
    EXPECT_NEAR(single.epochs[0].train_loss, pair[0].epochs[0].train_loss, 1e-5) << algo;
  }
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
