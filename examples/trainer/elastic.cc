#include "examples/trainer/elastic.h"

#include <signal.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <memory>

#include "examples/trainer/distributed_sampler.h"
#include "examples/trainer/elastic_update.h"
#include "examples/trainer/lr_schedule.h"
#include "examples/trainer/models.h"
#include "examples/trainer/softmax_cross_entropy.h"

namespace trainer {
namespace {

// Failures a shrink can cure: a peer died, stopped answering, or revoked
// the communicator.
bool PeerFailure(const chorus::Status& status) {
  return status.code() == chorusRemoteError || status.code() == chorusTimeout || status.code() == chorusRevoked;
}

chorus::Status Check(chorusResult_t result, chorusComm_t comm, const char* what) {
  if (result == chorusSuccess) return chorus::Status::Ok();
  return chorus::Status(result, chorus::StrCat(what, ": ", chorusGetLastError(comm)));
}

class ElasticLoop {
 public:
  ElasticLoop(const TrainOptions& options, const ElasticOptions& elastic, Model* model, const Dataset& train,
              const Dataset* test, chorusComm_t comm)
      : options_(options), elastic_(elastic), model_(model), train_(train), test_(test), comm_(comm) {
    if (comm_ != nullptr) {
      (void)chorusCommUserRank(comm_, &rank_);
      (void)chorusCommCount(comm_, &nranks_);
    }
    launch_rank_ = rank_;
    launch_ranks_ = nranks_;
  }

  ~ElasticLoop() {
    update_.reset();  // its stream and vote state go before the communicator
    if (owned_ != nullptr && chorusCommDestroy(owned_) != chorusSuccess) {
      std::fprintf(stderr, "[elastic] rank %d: destroying the shrunk communicator failed\n", launch_rank_);
    }
  }

  chorus::Status Init() {
    CHORUS_RETURN_IF_ERROR(CheckElasticMode(options_));
    steps_per_epoch_ = train_.count / options_.global_batch;
    if (options_.max_steps_per_epoch > 0) steps_per_epoch_ = std::min(steps_per_epoch_, options_.max_steps_per_epoch);
    if (steps_per_epoch_ < 1) {
      return chorus::InvalidArgument("the training set (", train_.count, " samples) is smaller than one global batch (",
                                     options_.global_batch, ")");
    }
    LrScheduleOptions lr = options_.lr;
    lr.global_batch = options_.global_batch;
    lr.total_steps = std::max(1, options_.epochs * steps_per_epoch_);
    lr.warmup_steps = static_cast<int>(std::lround(options_.warmup_epochs * steps_per_epoch_));
    lr.step_every = options_.lr_step_epochs > 0
                        ? std::max(1, static_cast<int>(std::lround(options_.lr_step_epochs * steps_per_epoch_)))
                        : lr.total_steps + lr.warmup_steps + 1;
    CHORUS_RETURN_IF_ERROR(LrSchedule::Create(lr, &schedule_));
    return MakeElasticUpdate(options_, model_->weights().size(), steps_per_epoch_, comm_, &update_);
  }

  int steps_per_epoch() const { return steps_per_epoch_; }

  chorus::Status Run(ElasticResult* result) {
    chorus::Status status = Resynchronize();  // rank 0's initial weights
    if (!status.ok() && PeerFailure(status) && comm_ != nullptr) status = Recover(status);
    CHORUS_RETURN_IF_ERROR(status);
    while (epochs_done_ < options_.epochs) {
      const bool epoch_over = step_ >= (epochs_done_ + 1) * steps_per_epoch_;
      status = epoch_over ? FinishEpoch(result) : Step();
      if (status.ok()) continue;
      if (!PeerFailure(status) || comm_ == nullptr) return status;
      CHORUS_RETURN_IF_ERROR(Recover(status));
    }
    result->recoveries = recoveries_;
    result->final_rank = rank_;
    result->final_ranks = nranks_;
    result->steps = step_;
    result->weights = model_->weights();
    return chorus::Status::Ok();
  }

 private:
  // One global step: this rank's share of the global batch, its mean
  // gradient, loss and hits, then the mode's exchange and update.
  chorus::Status Step() {
    if (launch_rank_ == elastic_.kill_rank && step_ == elastic_.kill_at_step) {
      std::fprintf(stderr, "[elastic] launch rank %d: SIGKILL at step %d (--kill-rank)\n", launch_rank_, step_);
      std::fflush(nullptr);
      raise(SIGKILL);
    }
    const int epoch = step_ / steps_per_epoch_;
    const int batch = options_.global_batch;
    if (epoch != permutation_epoch_) {
      permutation_ = DistributedSampler(train_.count, 1, 0, options_.data_seed).EpochIndices(epoch);
      permutation_epoch_ = epoch;
    }
    const size_t first = static_cast<size_t>(step_ - epoch * steps_per_epoch_) * batch;
    mine_.clear();
    for (int k = rank_; k < batch; k += nranks_) mine_.push_back(permutation_[first + k]);
    std::vector<float>& weights = model_->weights();
    const size_t n = weights.size();
    exchange_.assign(n + 2, 0.0f);
    if (!mine_.empty()) {
      train_.Gather(mine_, 0, mine_.size(), &images_, &labels_);
      const LossResult loss = model_->ForwardBackward(images_, labels_);
      const std::vector<float>& gradients = model_->gradients();
      std::copy(gradients.begin(), gradients.end(), exchange_.begin());
      exchange_[n] = static_cast<float>(loss.mean_loss * mine_.size());
      exchange_[n + 1] = static_cast<float>(loss.correct);
    }
    const float share = static_cast<float>(mine_.size()) / batch;
    ElasticSums sums;
    CHORUS_RETURN_IF_ERROR(update_->Step(step_, schedule_.Rate(step_), share, exchange_, weights, &sums));
    loss_sum_ += sums.loss;
    correct_ += sums.correct;
    ++step_;
    return chorus::Status::Ok();
  }

  chorus::Status FinishEpoch(ElasticResult* result) {
    ElasticEpoch stats;
    stats.epoch = epochs_done_;
    ElasticSums sums;  // pipe-sgd: the epoch's last step
    CHORUS_RETURN_IF_ERROR(update_->Drain(schedule_.Rate(std::max(0, step_ - 1)), model_->weights(), &sums));
    loss_sum_ += sums.loss;
    correct_ += sums.correct;
    if (test_ != nullptr && test_->count > 0) CHORUS_RETURN_IF_ERROR(Evaluate(*test_, &stats.test_accuracy));
    const double samples = static_cast<double>(steps_per_epoch_) * options_.global_batch;
    stats.ranks = nranks_;
    stats.train_loss = loss_sum_ / samples;
    stats.train_accuracy = correct_ / samples;
    // A rank that ran ahead of the lowest survivor may have recorded this
    // epoch already; one that fell behind has a placeholder (ranks 0).
    result->epochs.resize(epochs_done_);
    result->epochs.push_back(stats);
    if (elastic_.print && rank_ == 0) {
      std::printf("epoch %d  ranks %d  loss %.4f  train acc %.4f  test acc %.4f\n", stats.epoch, stats.ranks,
                  stats.train_loss, stats.train_accuracy, stats.test_accuracy);
      std::fflush(stdout);
    }
    loss_sum_ = correct_ = 0.0;
    ++epochs_done_;
    return chorus::Status::Ok();
  }

  chorus::Status Evaluate(const Dataset& data, double* accuracy) {
    constexpr size_t kEvalBatch = 256;
    std::vector<uint32_t> share;
    for (int i = rank_; i < data.count; i += nranks_) share.push_back(static_cast<uint32_t>(i));
    double correct = 0.0;
    for (size_t begin = 0; begin < share.size(); begin += kEvalBatch) {
      const size_t end = std::min(share.size(), begin + kEvalBatch);
      data.Gather(share, begin, end, &images_, &labels_);
      correct += SoftmaxCrossEntropy(model_->Forward(images_), labels_, nullptr).correct;
    }
    CHORUS_RETURN_IF_ERROR(AllReduceSum(&correct, 1, chorusFloat64));
    *accuracy = correct / data.count;
    return chorus::Status::Ok();
  }

  // Shrinks until the survivors hold the lowest survivor's state again.
  chorus::Status Recover(chorus::Status why) {
    dropped_ += update_->Abandon();  // pipe-sgd: a sum in flight is redone
    for (int attempt = 0; attempt <= launch_ranks_; ++attempt) {
      if (elastic_.print) {
        std::fprintf(stderr, "[elastic] rank %d of %d (launch rank %d) at step %d: %s; shrinking\n", rank_, nranks_,
                     launch_rank_, step_, why.message().c_str());
      }
      chorusComm_t next = nullptr;
      chorus::Status status = Check(chorusCommShrink(comm_, &next), comm_, "chorusCommShrink");
      if (!status.ok()) {
        if (!PeerFailure(status)) return status;
        why = status;  // no agreement this time (another death): shrink the same communicator again
        continue;
      }
      if (owned_ != nullptr) (void)chorusCommAbort(owned_);
      comm_ = owned_ = next;
      (void)chorusCommUserRank(comm_, &rank_);
      (void)chorusCommCount(comm_, &nranks_);
      ++recoveries_;
      status = update_->Rebind(comm_);
      if (status.ok()) status = Resynchronize();
      if (status.ok()) {
        if (elastic_.print) {
          std::fprintf(stderr, "[elastic] launch rank %d is now rank %d of %d; redoing step %d\n", launch_rank_, rank_,
                       nranks_, step_);
        }
        return status;
      }
      if (!PeerFailure(status)) return status;
      why = status;
    }
    return why.WithContext("elastic: giving up after repeated shrinks");
  }

  // Everyone takes rank 0's progress, weights and optimizer state, and
  // redoes the steps whose exchange rank 0 dropped.
  chorus::Status Resynchronize() {
    double progress[5] = {static_cast<double>(step_), static_cast<double>(epochs_done_), loss_sum_, correct_,
                          static_cast<double>(dropped_)};
    CHORUS_RETURN_IF_ERROR(Broadcast(progress, 5, chorusFloat64));
    CHORUS_RETURN_IF_ERROR(Broadcast(model_->weights().data(), model_->weights().size(), chorusFloat32));
    std::vector<float>& state = update_->shared_state();
    CHORUS_RETURN_IF_ERROR(Broadcast(state.data(), state.size(), chorusFloat32));
    step_ = static_cast<int>(progress[0]) - static_cast<int>(progress[4]);
    dropped_ = 0;
    epochs_done_ = static_cast<int>(progress[1]);
    loss_sum_ = progress[2];
    correct_ = progress[3];
    return chorus::Status::Ok();
  }

  chorus::Status AllReduceSum(void* data, size_t count, chorusDataType_t dtype) {
    if (comm_ == nullptr) return chorus::Status::Ok();
    return Check(chorusAllReduce(data, data, count, dtype, chorusSum, comm_, nullptr), comm_, "evaluation allreduce");
  }

  chorus::Status Broadcast(void* data, size_t count, chorusDataType_t dtype) {
    if (comm_ == nullptr) return chorus::Status::Ok();
    return Check(chorusBroadcast(data, data, count, dtype, 0, comm_, nullptr), comm_, "state broadcast");
  }

  const TrainOptions& options_;
  const ElasticOptions& elastic_;
  Model* model_;
  const Dataset& train_;
  const Dataset* test_;
  chorusComm_t comm_;             // the communicator in use
  chorusComm_t owned_ = nullptr;  // the last one made by shrink
  int rank_ = 0, nranks_ = 1;
  int launch_rank_ = 0, launch_ranks_ = 1;
  int recoveries_ = 0;
  int steps_per_epoch_ = 0;
  LrSchedule schedule_;
  std::unique_ptr<ElasticUpdate> update_;
  int dropped_ = 0;  // steps whose exchange was dropped in flight (pipe-sgd), to redo
  std::vector<float> exchange_;
  std::vector<uint32_t> permutation_, mine_;
  int permutation_epoch_ = -1;
  Tensor images_;
  std::vector<uint8_t> labels_;
  // Progress, the same on every rank (rank 0's after a shrink).
  int step_ = 0;
  int epochs_done_ = 0;
  double loss_sum_ = 0.0, correct_ = 0.0;  // this epoch's global sums
};

}  // namespace

chorus::Status TrainElastic(const TrainOptions& options, const ElasticOptions& elastic, Model* model,
                            const Dataset& train, const Dataset* test, chorusComm_t comm, ElasticResult* result) {
  ElasticLoop loop(options, elastic, model, train, test, comm);
  CHORUS_RETURN_IF_ERROR(loop.Init());
  return loop.Run(result);
}

int RunElasticRank(const std::string& model_name, uint64_t seed, const TrainOptions& options,
                   const ElasticOptions& elastic, const Dataset& train, const Dataset& test, chorusComm_t comm) {
  int rank = 0, nranks = 1;
  if (comm != nullptr) {
    (void)chorusCommUserRank(comm, &rank);
    (void)chorusCommCount(comm, &nranks);
  }
  std::unique_ptr<Model> model;
  chorus::Status status = MakeModel(model_name, seed, &model);
  ElasticResult result;
  if (status.ok()) {
    if (elastic.print && rank == 0) {
      std::printf("elastic %s on %d train / %d test images, %d rank(s), global batch %d\n", model_name.c_str(),
                  train.count, test.count, nranks, options.global_batch);
      std::fflush(stdout);
    }
    status = TrainElastic(options, elastic, model.get(), train, &test, comm, &result);
  }
  if (!status.ok()) {
    std::fprintf(stderr, "chorus_trainer (launch rank %d): %s\n", rank, status.message().c_str());
    return 1;
  }
  if (elastic.print && result.final_rank == 0) {
    std::printf("elastic: finished %d epochs (%d steps) on %d rank(s) after %d shrink(s)\n",
                static_cast<int>(result.epochs.size()), result.steps, result.final_ranks, result.recoveries);
  }
  return 0;
}

}  // namespace trainer
