// --gossip (GossipGraD, Daily et al. 2018): no AllReduce. Each rank takes an
// optimizer step with its own gradient, then averages its WEIGHTS with one
// partner by chorusGossip (cube partners, rotation on, shared seed). Weights,
// not gradients: averaging gradients alone has no force that pulls the
// replicas back together, so their differences would random-walk; averaging
// weights is a consensus step. Momentum stays local. Replicas are close but
// not identical (with 2 ranks the partner is always the other rank and the
// average is exact; with more ranks it takes log2(p) steps to spread).
// GossipGraD's other half, the ring shuffle of samples (each step's batch
// moves to rank - 1), is in the sampler: DistributedSampler's gossip mode,
// switched on by the trainer with --gossip.
#include "examples/trainer/step_exchange.h"

namespace trainer {
namespace {

class GossipExchange : public StepExchange {
 public:
  GossipExchange(chorusComm_t comm, uint64_t seed, std::unique_ptr<Optimizer> optimizer)
      : comm_(comm), optimizer_(std::move(optimizer)) {
    state_.partner = chorusGossipCube;
    state_.rotate = 1;
    state_.seed = seed;
    state_.step = 0;
  }

  chorus::Status Update(int, std::vector<float>& weights, std::vector<float>& gradients, float lr) override {
    optimizer_->Step(weights, gradients, lr);
    const Clock::time_point start = Clock::now();
    CHORUS_RETURN_IF_ERROR(CheckChorus(chorusGossip(weights.data(), weights.data(), weights.size(), chorusFloat32,
                                                    &state_, comm_, nullptr),
                                       comm_, "weight gossip"));
    counters_.blocking_seconds += SecondsSince(start);
    counters_.extra_bytes += weights.size() * sizeof(float);
    return chorus::Status::Ok();
  }

 private:
  chorusComm_t comm_;
  std::unique_ptr<Optimizer> optimizer_;
  chorusGossipState_t state_;
};

}  // namespace

chorus::Status MakeGossipExchange(chorusComm_t comm, uint64_t seed, std::unique_ptr<Optimizer> optimizer,
                                  std::unique_ptr<StepExchange>* out) {
  *out = std::make_unique<GossipExchange>(comm, seed, std::move(optimizer));
  return chorus::Status::Ok();
}

}  // namespace trainer
