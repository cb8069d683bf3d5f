// Helpers of the end-to-end trainer tests: generated images and ranks as
// threads with chorus communicators.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <thread>
#include <vector>

#include "examples/trainer/data_parallel_trainer.h"
#include "examples/trainer/models.h"
#include "examples/trainer/random.h"

namespace trainer_test {

using namespace trainer;

// Class k is a bright horizontal band at rows 2k+4.. plus noise: learnable
// in a few steps by a small LeNet.
inline Dataset MakeBands(int count, uint64_t seed) {
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

inline TrainOptions SmallRun() {
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

inline void TrainOneRank(const TrainOptions& options, const Dataset& train, const Dataset& test, chorusComm_t comm,
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
inline std::vector<RankResult> TrainRanks(int nranks, const TrainOptions& options, const Dataset& train,
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

inline double MaxDifference(const std::vector<float>& a, const std::vector<float>& b) {
  double worst = 0.0;
  for (size_t i = 0; i < a.size(); ++i) worst = std::max(worst, std::abs(static_cast<double>(a[i]) - b[i]));
  return worst;
}

}  // namespace trainer_test
