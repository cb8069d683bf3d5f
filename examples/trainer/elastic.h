// Elastic training (--elastic): synchronous data-parallel SGD that goes on
// when ranks die. When a collective fails with a peer failure, the survivors
// call chorusCommShrink, take the lowest survivor's weights, momentum and
// progress (broadcast), and redo the step that failed on the smaller
// communicator. The global batch stays the same whatever the rank count:
// step g uses positions [s*B, (s+1)*B) of the epoch's permutation and rank r
// of p takes every p-th of them from r, so ranks hold B/p or B/p + 1 samples;
// gradients are weighted by each rank's share, so a step equals the
// one-process step on the same global batch (up to float summation order).
// Elastic modes: synchronous and --pipe-sgd (sgd), --lion-cub (lion); the
// per-mode exchange is in elastic_update.h. --gossip, --overlap and
// --fp16-wire are rejected.
#pragma once

#include <string>
#include <vector>

#include "base/status.h"
#include "chorus/chorus.h"
#include "examples/trainer/data_parallel_trainer.h"
#include "examples/trainer/dataset.h"
#include "examples/trainer/model.h"

namespace trainer {

struct ElasticOptions {
  bool enabled = false;   // --elastic
  int kill_rank = -1;     // --kill-rank R (debugging): launch rank R SIGKILLs itself
  int kill_at_step = -1;  // --kill-at-step N: just before global step N's gradient allreduce
  bool print = true;      // the current rank 0 prints epochs; survivors print recoveries
};

struct ElasticEpoch {
  int epoch = 0;
  int ranks = 0;  // communicator size at the epoch's end
  double train_loss = 0.0;  // mean over the epoch's global batches
  double train_accuracy = 0.0;
  double test_accuracy = -1.0;  // -1 without a test set
};

struct ElasticResult {
  std::vector<ElasticEpoch> epochs;
  int recoveries = 0;  // shrinks this rank took part in
  int final_rank = 0, final_ranks = 1;
  int steps = 0;  // global steps done
  std::vector<float> weights;
};

// Trains `model` on `comm` (not owned, may be null for one rank; it may end
// up failed: the caller destroys it). Communicators made by shrink are owned
// and released here.
chorus::Status TrainElastic(const TrainOptions& options, const ElasticOptions& elastic, Model* model,
                            const Dataset& train, const Dataset* test, chorusComm_t comm, ElasticResult* result);

// chorus_trainer's rank body for --elastic: exit status 0 on success.
int RunElasticRank(const std::string& model_name, uint64_t seed, const TrainOptions& options,
                   const ElasticOptions& elastic, const Dataset& train, const Dataset& test, chorusComm_t comm);

}  // namespace trainer
