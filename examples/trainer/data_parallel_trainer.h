// DataParallelTrainer: data-parallel training for one rank. Each step
// the rank runs forward/backward on its share (global_batch / nranks) of the
// global batch; its StepExchange (the communication mode) then combines the
// ranks' gradients and updates the weights. In sync mode gradients are
// averaged and every rank applies the same step, so weights stay identical.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "base/status.h"
#include "examples/trainer/dataset.h"
#include "examples/trainer/distributed_sampler.h"
#include "examples/trainer/gradient_sync.h"
#include "examples/trainer/lr_schedule.h"
#include "examples/trainer/model.h"
#include "examples/trainer/optimizer.h"
#include "examples/trainer/step_exchange.h"

namespace trainer {

struct TrainOptions {
  int epochs = 1;
  int global_batch = 64;
  uint64_t data_seed = 1;  // shuffling; the same on every rank
  int max_steps_per_epoch = 0;  // 0: the whole epoch
  OptimizerOptions optimizer;
  LrScheduleOptions lr;  // global_batch, total_steps and step_every in steps are filled in by Create
  float warmup_epochs = 0.0f;
  float lr_step_epochs = 0.0f;  // step schedule: decay every this many epochs (0: never)
  size_t bucket_bytes = 0;      // 0: one fused AllReduce (overlap: its default bucket)
  ExchangeOptions exchange;     // communication mode; its bucket_bytes comes from above
  int timed_after_steps = 0;    // EpochStats::steady_*: time the epoch's steps from this one on
};

struct EpochStats {
  int epoch = 0;
  double learning_rate = 0.0;  // at the epoch's last step
  double train_loss = 0.0;     // mean over the epoch's samples, all ranks
  double train_accuracy = 0.0;
  double test_accuracy = 0.0;  // -1 when no test set
  double seconds = 0.0;        // training only, evaluation excluded
  double compute_seconds = 0.0;
  double communication_seconds = 0.0;  // the loop waited on communication
  double hidden_communication_seconds = 0.0;  // overlap / pipe-sgd: ran under compute (upper bound)
  unsigned long long wire_bytes = 0;          // this rank's compressed payload (pipe-sgd fp16, lion-cub)
  unsigned long long uncompressed_bytes = 0;  // the same collectives as float32 AllReduces
  unsigned long long extra_bytes = 0;         // this rank's plain payload beside them (gossip, momentum sync)
  unsigned long long gradient_bytes = 0;      // this rank's payload of gradient collectives, every mode
  int steps = 0;                              // optimizer steps in the epoch
  // The epoch's steps from TrainOptions::timed_after_steps on (all of them
  // by default): the steady state, without pipe-sgd's synchronous warm-up.
  double steady_seconds = 0.0;
  int steady_steps = 0;
  double images_per_second = 0.0;  // global
};

// One training step's timestamps: steady_clock seconds, which on Linux is
// CLOCK_MONOTONIC and so comparable between processes on one machine (the
// emulated cluster's hosts). For --step-trace.
struct StepTiming {
  int step = 0;           // global step
  double begin = 0.0;     // before the batch is gathered
  double computed = 0.0;  // forward and backward done
  double updated = 0.0;   // the exchange's Update returned: the weights hold this step's update
};

class DataParallelTrainer {
 public:
  // `comm` may be null (one rank). Validates the options.
  static chorus::Status Create(const TrainOptions& options, Model* model, const Dataset* train,
                               const Dataset* test, chorusComm_t comm, std::unique_ptr<DataParallelTrainer>* out);

  // Broadcasts rank 0's weights; call once before training.
  chorus::Status SynchronizeWeights();
  chorus::Status TrainEpoch(int epoch, EpochStats* stats);
  // Accuracy of the model over `data`, each rank scoring a strided share.
  chorus::Status Evaluate(const Dataset& data, double* accuracy);

  // Called after every step of TrainEpoch with the steps done so far in the
  // epoch (a progress bar).
  void set_step_observer(std::function<void(int steps_done)> observer) { step_observer_ = std::move(observer); }
  // Records every step's StepTiming from now on (off by default: no clock
  // reads in the loop).
  void set_record_step_timings(bool on) { record_step_timings_ = on; }
  const std::vector<StepTiming>& step_timings() const { return step_timings_; }

  int steps_per_epoch() const { return steps_per_epoch_; }
  int local_batch() const { return local_batch_; }

 private:
  DataParallelTrainer(const TrainOptions& options, Model* model, const Dataset* train, const Dataset* test,
                      chorusComm_t comm);

  TrainOptions options_;
  Model* model_;
  const Dataset* train_;
  const Dataset* test_;
  GradientSync sync_;
  DistributedSampler sampler_;
  std::unique_ptr<StepExchange> exchange_;
  LrSchedule schedule_;
  int local_batch_ = 0;
  int steps_per_epoch_ = 0;
  int step_ = 0;  // global step count
  Tensor batch_images_;
  std::vector<uint8_t> batch_labels_;
  std::function<void(int)> step_observer_;
  bool record_step_timings_ = false;
  std::vector<StepTiming> step_timings_;
};

}  // namespace trainer
