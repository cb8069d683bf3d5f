#include "examples/trainer/step_exchange.h"

#include <algorithm>

namespace trainer {

chorus::Status CheckChorus(chorusResult_t result, chorusComm_t comm, const char* what) {
  if (result == chorusSuccess) return chorus::Status::Ok();
  return chorus::Status(result, chorus::StrCat(what, " failed: ", chorusGetErrorString(result), ": ",
                                               chorusGetLastError(comm)));
}

namespace {

// The reference behaviour: blocking AllReduce, then the optimizer.
class SyncExchange : public StepExchange {
 public:
  SyncExchange(GradientSync* sync, std::unique_ptr<Optimizer> optimizer)
      : sync_(sync), optimizer_(std::move(optimizer)) {}

  chorus::Status Update(int, std::vector<float>& weights, std::vector<float>& gradients, float lr) override {
    const Clock::time_point start = Clock::now();
    CHORUS_RETURN_IF_ERROR(sync_->AverageGradients(gradients));
    counters_.blocking_seconds += SecondsSince(start);
    if (sync_->nranks() > 1) counters_.gradient_bytes += gradients.size() * sizeof(float);
    optimizer_->Step(weights, gradients, lr);
    return chorus::Status::Ok();
  }

 private:
  GradientSync* sync_;
  std::unique_ptr<Optimizer> optimizer_;
};

}  // namespace

std::unique_ptr<StepExchange> MakeSyncExchange(GradientSync* sync, std::unique_ptr<Optimizer> optimizer) {
  return std::make_unique<SyncExchange>(sync, std::move(optimizer));
}

chorus::Status MakeStepExchange(const ExchangeOptions& options, const OptimizerOptions& optimizer_options,
                                chorusComm_t comm, GradientSync* sync, size_t parameter_count,
                                int steps_per_epoch, std::unique_ptr<StepExchange>* out) {
  const bool distributed = comm != nullptr && sync->nranks() > 1;
  if (options.mode == "lion-cub") {
    if (!distributed) return chorus::InvalidArgument("--lion-cub needs at least 2 ranks");
    return MakeLionCubExchange(comm, optimizer_options, options.lion_cub_int8, options.momentum_sync_steps,
                               parameter_count, out);
  }
  std::unique_ptr<Optimizer> optimizer;
  CHORUS_RETURN_IF_ERROR(MakeOptimizer(optimizer_options, &optimizer));
  if (options.mode == "sync" || (!distributed && options.mode != "gossip")) {
    if (options.mode != "sync" && options.mode != "overlap" && options.mode != "pipe-sgd") {
      return chorus::InvalidArgument("unknown communication mode '", options.mode, "'");
    }
    *out = MakeSyncExchange(sync, std::move(optimizer));  // one rank: nothing to communicate
    return chorus::Status::Ok();
  }
  if (options.mode == "overlap") {
    const size_t bucket = options.bucket_bytes == 0 ? kDefaultOverlapBucketBytes : options.bucket_bytes;
    return MakeOverlapExchange(comm, bucket, std::move(optimizer), out);
  }
  if (options.mode == "pipe-sgd") {
    const int warmup = options.warmup_steps >= 0 ? options.warmup_steps : std::min(20, steps_per_epoch);
    return MakePipeSgdExchange(comm, sync, warmup, options.fp16_wire, parameter_count, std::move(optimizer), out);
  }
  if (options.mode == "gossip") {
    if (!distributed) return chorus::InvalidArgument("--gossip needs at least 2 ranks");
    return MakeGossipExchange(comm, options.gossip_seed, std::move(optimizer), out);
  }
  return chorus::InvalidArgument("unknown communication mode '", options.mode, "'");
}

}  // namespace trainer
