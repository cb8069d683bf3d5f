// The part of an elastic step that differs by communication mode
// (elastic.h, docs/trainer.md "Elastic training"): turning this rank's
// share-weighted gradient into a weight update. The loop owns the data, the
// shrink and the resynchronisation; a rule owns its optimizer state and its
// communication:
//  - sync:     one blocking AllReduce of [gradient, loss, hits], SGD with momentum;
//  - pipe-sgd: after the warm-up, step t's AllReduce runs on a host stream
//              while step t+1 computes and step t's sum is applied at t+1;
//  - lion-cub: Lion whose direction is the ranks' 1-bit (or int8) vote,
//              momenta averaged every K steps.
#pragma once

#include <memory>
#include <vector>

#include "base/status.h"
#include "chorus/chorus.h"
#include "examples/trainer/data_parallel_trainer.h"

namespace trainer {

// Loss and hit sums of the global batches whose exchange completed in a call.
struct ElasticSums {
  double loss = 0.0;
  double correct = 0.0;
};

class ElasticUpdate {
 public:
  virtual ~ElasticUpdate() = default;
  // `exchange` holds this rank's mean gradient (n floats, zeros without
  // samples), then its loss sum and hit count; the rule may overwrite it.
  // `share` is this rank's part of the global batch (its samples / B), the
  // weight of its gradient in the averaging modes. `rate` is the learning
  // rate of global step `step`.
  virtual chorus::Status Step(int step, float rate, float share, std::vector<float>& exchange,
                              std::vector<float>& weights, ElasticSums* sums) = 0;
  // End of an epoch: completes and applies whatever is in flight (evaluation
  // uses the communicator next).
  virtual chorus::Status Drain(float /*rate*/, std::vector<float>& /*weights*/, ElasticSums* /*sums*/) {
    return chorus::Status::Ok();
  }
  // Before a shrink: waits out the work in flight and forgets it. Returns how
  // many steps' exchanges were dropped unapplied (they are redone).
  virtual int Abandon() { return 0; }
  // After a shrink (or at the start): the communicator to use from now on.
  virtual chorus::Status Rebind(chorusComm_t comm) = 0;
  // Optimizer state that every rank takes from rank 0 after a shrink.
  virtual std::vector<float>& shared_state() = 0;
};

// Rejects modes that are not elastic (gossip, overlap, fp16 wire) with a
// message naming them, and optimizers other than the mode's.
chorus::Status CheckElasticMode(const TrainOptions& options);

// The rule for options.exchange.mode; `comm` may be null (one rank).
chorus::Status MakeElasticUpdate(const TrainOptions& options, size_t parameter_count, int steps_per_epoch,
                                 chorusComm_t comm, std::unique_ptr<ElasticUpdate>* out);

}  // namespace trainer
