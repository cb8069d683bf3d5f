#include "examples/trainer/elastic_update.h"

#include <algorithm>

#include "examples/trainer/lion_cub_math.h"

namespace trainer {
namespace {

chorus::Status Check(chorusResult_t result, chorusComm_t comm, const char* what) {
  if (result == chorusSuccess) return chorus::Status::Ok();
  return chorus::Status(result, chorus::StrCat(what, ": ", chorusGetLastError(comm)));
}

// SGD with momentum and weight decay, as SgdMomentum (optimizer.h), with the
// velocity kept where a shrink can resynchronise it.
void SgdStep(const OptimizerOptions& sgd, float rate, const float* gradient, std::vector<float>& velocity,
             std::vector<float>& weights) {
  for (size_t i = 0; i < weights.size(); ++i) {
    velocity[i] = sgd.momentum * velocity[i] + gradient[i] + sgd.weight_decay * weights[i];
    weights[i] -= rate * velocity[i];
  }
}

// exchange[0, n) *= share: the weighted terms of the global batch's mean.
void WeighByShare(float share, std::vector<float>& exchange, size_t n) {
  for (size_t i = 0; i < n; ++i) exchange[i] *= share;
}

void TakeSums(const std::vector<float>& exchange, size_t n, ElasticSums* sums) {
  sums->loss += exchange[n];
  sums->correct += exchange[n + 1];
}

class SyncUpdate : public ElasticUpdate {
 public:
  SyncUpdate(const OptimizerOptions& sgd, size_t n) : sgd_(sgd), velocity_(n, 0.0f) {}

  chorus::Status Step(int, float rate, float share, std::vector<float>& exchange, std::vector<float>& weights,
                      ElasticSums* sums) override {
    const size_t n = weights.size();
    WeighByShare(share, exchange, n);
    if (comm_ != nullptr) {
      CHORUS_RETURN_IF_ERROR(Check(chorusAllReduce(exchange.data(), exchange.data(), exchange.size(), chorusFloat32,
                                                   chorusSum, comm_, nullptr),
                                   comm_, "gradient allreduce"));
    }
    SgdStep(sgd_, rate, exchange.data(), velocity_, weights);
    TakeSums(exchange, n, sums);
    return chorus::Status::Ok();
  }
  chorus::Status Rebind(chorusComm_t comm) override {
    comm_ = comm;
    return chorus::Status::Ok();
  }
  std::vector<float>& shared_state() override { return velocity_; }

 private:
  OptimizerOptions sgd_;
  std::vector<float> velocity_;
  chorusComm_t comm_ = nullptr;
};

// Pipe-SGD, staleness 1: step t's [gradient, loss, hits] sum runs on a host
// stream while step t+1 computes; step t+1 applies it. Invariant (what a
// shrink relies on): the weights hold the gradient of every step before
// `next - pending`, `next` being the step the loop does next (a failed step
// is not counted). The epoch's last sum is applied by Drain with the rate
// of its own step.
class PipeSgdUpdate : public ElasticUpdate {
 public:
  PipeSgdUpdate(const OptimizerOptions& sgd, int warmup, size_t n)
      : sgd_(sgd), warmup_(warmup), velocity_(n, 0.0f), in_flight_(n + 2) {}
  ~PipeSgdUpdate() override { (void)Abandon(); }

  chorus::Status Init() { return comm_stream_.Create(); }

  chorus::Status Step(int step, float rate, float share, std::vector<float>& exchange, std::vector<float>& weights,
                      ElasticSums* sums) override {
    const size_t n = weights.size();
    WeighByShare(share, exchange, n);
    if (step < warmup_) {  // synchronous warm-up
      CHORUS_RETURN_IF_ERROR(AllReduce(exchange.data(), nullptr));
      SgdStep(sgd_, rate, exchange.data(), velocity_, weights);
      TakeSums(exchange, n, sums);
      return chorus::Status::Ok();
    }
    // Apply the previous step's sum first: if the enqueue below fails, the
    // weights still satisfy the invariant with nothing pending. One rank (no
    // communicator) keeps the staleness too, to train like the ranks it
    // stands for.
    CHORUS_RETURN_IF_ERROR(ApplyPending(rate, weights, sums));
    in_flight_.swap(exchange);
    CHORUS_RETURN_IF_ERROR(AllReduce(in_flight_.data(), comm_stream_.get()));
    pending_ = true;
    return chorus::Status::Ok();
  }

  chorus::Status Drain(float rate, std::vector<float>& weights, ElasticSums* sums) override {
    return ApplyPending(rate, weights, sums);
  }

  int Abandon() override {
    if (comm_stream_.get() != nullptr) (void)chorusStreamSynchronize(comm_stream_.get());
    const int dropped = pending_ ? 1 : 0;
    pending_ = false;
    return dropped;
  }

  chorus::Status Rebind(chorusComm_t comm) override {
    comm_ = comm;
    return chorus::Status::Ok();
  }
  std::vector<float>& shared_state() override { return velocity_; }

 private:
  // Waits for the pending sum and applies it (nothing when none is pending).
  chorus::Status ApplyPending(float rate, std::vector<float>& weights, ElasticSums* sums) {
    if (!pending_) return chorus::Status::Ok();
    if (comm_ != nullptr) {
      CHORUS_RETURN_IF_ERROR(
          Check(chorusStreamSynchronize(comm_stream_.get()), comm_, "pipelined gradient allreduce"));
    }
    pending_ = false;
    SgdStep(sgd_, rate, in_flight_.data(), velocity_, weights);
    TakeSums(in_flight_, weights.size(), sums);
    return chorus::Status::Ok();
  }

  chorus::Status AllReduce(float* data, chorusStream_t stream) {
    if (comm_ == nullptr) return chorus::Status::Ok();
    return Check(chorusAllReduce(data, data, in_flight_.size(), chorusFloat32, chorusSum, comm_, stream), comm_,
                 "gradient allreduce");
  }

  OptimizerOptions sgd_;
  int warmup_;
  std::vector<float> velocity_;
  std::vector<float> in_flight_;  // the pending step's [gradient, loss, hits] sum
  bool pending_ = false;
  HostStream comm_stream_;
  chorusComm_t comm_ = nullptr;
};

// Lion Cub: c = b1 m + (1 - b1) g from this rank's mean gradient, the ranks
// vote on sign(c) (chorusAllReduceCompressed), w -= lr (d + wd w), local
// m = b2 m + (1 - b2) g, momenta averaged every K steps. The loss and hits
// take a 2-float AllReduce of their own (the vote carries signs only). Every
// collective of a step comes before its first local change (the new momentum
// waits in its own buffer), so a step that fails leaves the state as it was
// and is redone once.
class LionCubUpdate : public ElasticUpdate {
 public:
  LionCubUpdate(const OptimizerOptions& lion, bool int8, int momentum_sync_steps, size_t n)
      : lion_(lion),
        int8_(int8),
        momentum_sync_steps_(momentum_sync_steps),
        momentum_(n, 0.0f),
        next_momentum_(n),
        direction_(n) {}
  ~LionCubUpdate() override { (void)chorusCompressStateDestroy(vote_); }

  chorus::Status Step(int step, float rate, float, std::vector<float>& exchange, std::vector<float>& weights,
                      ElasticSums* sums) override {
    const size_t n = weights.size();
    LionCubDirectionAndMomentum(lion_.beta1, lion_.beta2, exchange.data(), momentum_.data(), next_momentum_.data(),
                                direction_.data(), n);
    float stats[2] = {exchange[n], exchange[n + 1]};
    if (comm_ != nullptr) {
      CHORUS_RETURN_IF_ERROR(Check(chorusAllReduceCompressed(direction_.data(), direction_.data(), n, chorusFloat32,
                                                             vote_, comm_, nullptr),
                                   comm_, "sign vote"));
      CHORUS_RETURN_IF_ERROR(
          Check(chorusAllReduce(stats, stats, 2, chorusFloat32, chorusSum, comm_, nullptr), comm_, "loss allreduce"));
    } else {
      for (float& d : direction_) d = d > 0.0f ? 1.0f : (d < 0.0f ? -1.0f : 0.0f);
    }
    if (comm_ != nullptr && momentum_sync_steps_ > 0 && (step + 1) % momentum_sync_steps_ == 0) {
      CHORUS_RETURN_IF_ERROR(Check(chorusAllReduce(next_momentum_.data(), next_momentum_.data(), n, chorusFloat32,
                                                   chorusSum, comm_, nullptr),
                                   comm_, "momentum allreduce"));
      int nranks = 1;
      (void)chorusCommCount(comm_, &nranks);
      const float inverse = 1.0f / static_cast<float>(nranks);
      for (float& m : next_momentum_) m *= inverse;
    }
    LionCubApply(rate, lion_.weight_decay, direction_.data(), weights.data(), n);
    momentum_.swap(next_momentum_);
    sums->loss += stats[0];
    sums->correct += stats[1];
    return chorus::Status::Ok();
  }

  // The vote's state belongs to one communicator: a new one per shrink.
  chorus::Status Rebind(chorusComm_t comm) override {
    (void)chorusCompressStateDestroy(vote_);
    vote_ = nullptr;
    comm_ = comm;
    if (comm_ == nullptr) return chorus::Status::Ok();
    return Check(chorusCompressStateCreate(&vote_, int8_ ? chorusCompressInt8 : chorusCompressSignVote,
                                           momentum_.size(), chorusFloat32, comm_),
                 comm_, "chorusCompressStateCreate");
  }
  std::vector<float>& shared_state() override { return momentum_; }

 private:
  OptimizerOptions lion_;
  bool int8_;
  int momentum_sync_steps_;
  std::vector<float> momentum_;
  std::vector<float> next_momentum_;  // this step's, until its collectives succeeded
  std::vector<float> direction_;  // c, then the voted direction
  chorusCompressState_t vote_ = nullptr;
  chorusComm_t comm_ = nullptr;
};

}  // namespace

chorus::Status CheckElasticMode(const TrainOptions& options) {
  const ExchangeOptions& exchange = options.exchange;
  const std::string& optimizer = options.optimizer.name;
  if (exchange.mode == "gossip" || exchange.mode == "overlap") {
    return chorus::InvalidArgument("--elastic does not support --", exchange.mode,
                                   " (elastic modes: synchronous, --pipe-sgd, --lion-cub)");
  }
  if (exchange.fp16_wire) return chorus::InvalidArgument("--elastic does not support --fp16-wire");
  if (exchange.mode == "lion-cub") {
    if (optimizer != "lion") return chorus::InvalidArgument("--elastic --lion-cub uses --optimizer lion");
    return chorus::Status::Ok();
  }
  if (exchange.mode != "sync" && exchange.mode != "pipe-sgd") {
    return chorus::InvalidArgument("--elastic: unknown communication mode '", exchange.mode, "'");
  }
  if (optimizer != "sgd") {
    return chorus::InvalidArgument("--elastic supports --optimizer sgd only in the synchronous and --pipe-sgd modes");
  }
  return chorus::Status::Ok();
}

chorus::Status MakeElasticUpdate(const TrainOptions& options, size_t parameter_count, int steps_per_epoch,
                                 chorusComm_t comm, std::unique_ptr<ElasticUpdate>* out) {
  CHORUS_RETURN_IF_ERROR(CheckElasticMode(options));
  const ExchangeOptions& exchange = options.exchange;
  std::unique_ptr<ElasticUpdate> update;
  if (exchange.mode == "lion-cub") {
    update = std::make_unique<LionCubUpdate>(options.optimizer, exchange.lion_cub_int8, exchange.momentum_sync_steps,
                                             parameter_count);
  } else if (exchange.mode == "pipe-sgd") {
    const int warmup = exchange.warmup_steps >= 0 ? exchange.warmup_steps : std::min(20, steps_per_epoch);
    auto pipe = std::make_unique<PipeSgdUpdate>(options.optimizer, warmup, parameter_count);
    CHORUS_RETURN_IF_ERROR(pipe->Init());
    update = std::move(pipe);
  } else {
    update = std::make_unique<SyncUpdate>(options.optimizer, parameter_count);
  }
  CHORUS_RETURN_IF_ERROR(update->Rebind(comm));
  *out = std::move(update);
  return chorus::Status::Ok();
}

}  // namespace trainer
