#include "examples/trainer/data_parallel_trainer.h"

#include <algorithm>
#include <chrono>
#include <cmath>

namespace trainer {

DataParallelTrainer::DataParallelTrainer(const TrainOptions& options, Model* model, const Dataset* train,
                                         const Dataset* test, chorusComm_t comm)
    : options_(options),
      model_(model),
      train_(train),
      test_(test),
      sync_(comm, options.bucket_bytes),
      sampler_(train->count, sync_.nranks(), sync_.rank(), options.data_seed) {}

chorus::Status DataParallelTrainer::Create(const TrainOptions& options, Model* model, const Dataset* train,
                                           const Dataset* test, chorusComm_t comm,
                                           std::unique_ptr<DataParallelTrainer>* out) {
  std::unique_ptr<DataParallelTrainer> trainer(new DataParallelTrainer(options, model, train, test, comm));
  const int nranks = trainer->sync_.nranks();
  if (options.global_batch < nranks || options.global_batch % nranks != 0) {
    return chorus::InvalidArgument("the global batch (", options.global_batch, ") must be a multiple of the ",
                                   nranks, " ranks");
  }
  if (!(train->sample == model->sample_shape())) {
    return chorus::InvalidArgument("training images are ", train->sample.c, "x", train->sample.h, "x",
                                   train->sample.w, " but the model expects ", model->sample_shape().c, "x",
                                   model->sample_shape().h, "x", model->sample_shape().w);
  }
  trainer->local_batch_ = options.global_batch / nranks;
  trainer->steps_per_epoch_ = trainer->sampler_.samples_per_rank() / trainer->local_batch_;
  if (options.max_steps_per_epoch > 0) {
    trainer->steps_per_epoch_ = std::min(trainer->steps_per_epoch_, options.max_steps_per_epoch);
  }
  if (trainer->steps_per_epoch_ < 1) {
    return chorus::InvalidArgument("the training set (", train->count, " samples) is smaller than one global batch (",
                                   options.global_batch, ")");
  }
  if (options.exchange.mode == "gossip") {  // GossipGraD's ring shuffle of samples
    trainer->sampler_.EnableRingShuffle(trainer->local_batch_, trainer->steps_per_epoch_);
  }
  LrScheduleOptions lr = options.lr;
  lr.global_batch = options.global_batch;
  lr.total_steps = std::max(1, options.epochs * trainer->steps_per_epoch_);
  lr.warmup_steps = static_cast<int>(std::lround(options.warmup_epochs * trainer->steps_per_epoch_));
  lr.step_every = options.lr_step_epochs > 0
                      ? std::max(1, static_cast<int>(std::lround(options.lr_step_epochs * trainer->steps_per_epoch_)))
                      : lr.total_steps + lr.warmup_steps + 1;
  CHORUS_RETURN_IF_ERROR(LrSchedule::Create(lr, &trainer->schedule_));
  ExchangeOptions exchange = options.exchange;
  exchange.bucket_bytes = options.bucket_bytes;
  CHORUS_RETURN_IF_ERROR(MakeStepExchange(exchange, options.optimizer, comm, &trainer->sync_,
                                          model->weights().size(), trainer->steps_per_epoch_,
                                          &trainer->exchange_));
  *out = std::move(trainer);
  return chorus::Status::Ok();
}

chorus::Status DataParallelTrainer::SynchronizeWeights() { return sync_.BroadcastWeights(model_->weights()); }

chorus::Status DataParallelTrainer::TrainEpoch(int epoch, EpochStats* stats) {
  const std::vector<uint32_t> indices = sampler_.EpochIndices(epoch);
  double loss_sum = 0.0, correct = 0.0;
  float rate = 0.0f;
  const auto gradients_ready = [this](size_t begin) { exchange_->GradientsReady(model_->gradients(), begin); };
  const Clock::time_point epoch_start = Clock::now();
  const int untimed = std::min(options_.timed_after_steps, steps_per_epoch_);
  Clock::time_point steady_start = epoch_start;
  for (int s = 0; s < steps_per_epoch_; ++s, ++step_) {
    if (s == untimed && s > 0) steady_start = Clock::now();
    const Clock::time_point step_begin = record_step_timings_ ? Clock::now() : Clock::time_point{};
    const size_t begin = static_cast<size_t>(s) * local_batch_;
    train_->Gather(indices, begin, begin + local_batch_, &batch_images_, &batch_labels_);
    const LossResult loss = exchange_->wants_gradient_hook()
                                ? model_->ForwardBackward(batch_images_, batch_labels_, gradients_ready)
                                : model_->ForwardBackward(batch_images_, batch_labels_);
    loss_sum += loss.mean_loss * local_batch_;
    correct += loss.correct;
    rate = schedule_.Rate(step_);
    const Clock::time_point computed = record_step_timings_ ? Clock::now() : Clock::time_point{};
    CHORUS_RETURN_IF_ERROR(exchange_->Update(step_, model_->weights(), model_->gradients(), rate));
    if (record_step_timings_) {
      const auto seconds = [](Clock::time_point t) { return std::chrono::duration<double>(t.time_since_epoch()).count(); };
      step_timings_.push_back(StepTiming{step_, seconds(step_begin), seconds(computed), seconds(Clock::now())});
    }
    if (step_observer_) step_observer_(s + 1);
  }
  CHORUS_RETURN_IF_ERROR(exchange_->Quiesce());
  const Clock::time_point epoch_end = Clock::now();
  const double seconds = std::chrono::duration<double>(epoch_end - epoch_start).count();
  const double steady_seconds =
      untimed < steps_per_epoch_ ? std::chrono::duration<double>(epoch_end - steady_start).count() : 0.0;
  const ExchangeCounters counters = exchange_->TakeCounters();
  const double samples = static_cast<double>(steps_per_epoch_) * options_.global_batch;
  std::vector<double> totals{loss_sum, correct};
  CHORUS_RETURN_IF_ERROR(sync_.SumAcrossRanks(totals));

  *stats = EpochStats{};
  stats->epoch = epoch;
  stats->learning_rate = rate;
  stats->train_loss = totals[0] / samples;
  stats->train_accuracy = totals[1] / samples;
  stats->seconds = seconds;
  stats->compute_seconds = seconds - counters.blocking_seconds;
  stats->communication_seconds = counters.blocking_seconds;
  stats->hidden_communication_seconds = counters.hidden_seconds;
  stats->wire_bytes = counters.wire_bytes;
  stats->uncompressed_bytes = counters.uncompressed_bytes;
  stats->extra_bytes = counters.extra_bytes;
  stats->gradient_bytes = counters.gradient_bytes;
  stats->steps = steps_per_epoch_;
  stats->steady_seconds = steady_seconds;
  stats->steady_steps = steps_per_epoch_ - untimed;
  stats->images_per_second = samples / seconds;
  stats->test_accuracy = -1.0;
  if (test_ != nullptr) CHORUS_RETURN_IF_ERROR(Evaluate(*test_, &stats->test_accuracy));
  return chorus::Status::Ok();
}

chorus::Status DataParallelTrainer::Evaluate(const Dataset& data, double* accuracy) {
  constexpr int kEvalBatch = 256;
  std::vector<uint32_t> mine;
  for (int i = sync_.rank(); i < data.count; i += sync_.nranks()) mine.push_back(static_cast<uint32_t>(i));
  double correct = 0.0;
  for (size_t begin = 0; begin < mine.size(); begin += kEvalBatch) {
    const size_t end = std::min(mine.size(), begin + kEvalBatch);
    data.Gather(mine, begin, end, &batch_images_, &batch_labels_);
    correct += SoftmaxCrossEntropy(model_->Forward(batch_images_), batch_labels_, nullptr).correct;
  }
  std::vector<double> totals{correct};
  CHORUS_RETURN_IF_ERROR(sync_.SumAcrossRanks(totals));
  *accuracy = data.count > 0 ? totals[0] / data.count : 0.0;
  return chorus::Status::Ok();
}

}  // namespace trainer
