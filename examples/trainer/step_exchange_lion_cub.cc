// --lion-cub: distributed Lion whose update direction is a vote. Each rank
// forms c = b1 * m + (1 - b1) * g from its own momentum and gradient; the
// ranks agree on d = sign(sum of votes) with chorusAllReduceCompressed
// (chorusCompressSignVote: 1 bit per parameter; --lion-cub-int8:
// chorusCompressInt8, 8 bits, votes weighted by magnitude). Every rank
// applies w -= lr * (d + wd * w) with the same d, so weights stay identical.
// Momenta are local (m = b2 * m + (1 - b2) * g) and drift apart, so every K
// steps they are averaged with a plain float32 AllReduce.
#include "examples/trainer/lion_cub_math.h"
#include "examples/trainer/step_exchange.h"

namespace trainer {
namespace {

class LionCubExchange : public StepExchange {
 public:
  LionCubExchange(chorusComm_t comm, const OptimizerOptions& lion, int momentum_sync_steps)
      : comm_(comm), lion_(lion), momentum_sync_steps_(momentum_sync_steps) {
    (void)chorusCommCount(comm_, &nranks_);
  }
  ~LionCubExchange() override { (void)chorusCompressStateDestroy(state_); }

  chorus::Status Init(bool int8, size_t count) {
    momentum_.assign(count, 0.0f);
    direction_.resize(count);
    return CheckChorus(chorusCompressStateCreate(&state_, int8 ? chorusCompressInt8 : chorusCompressSignVote, count,
                                                 chorusFloat32, comm_),
                       comm_, "chorusCompressStateCreate");
  }

  chorus::Status Update(int step, std::vector<float>& weights, std::vector<float>& gradients, float lr) override {
    // The momentum advances in the same pass (nothing reads it before the
    // next step but the momentum sync below, which wants the new one).
    LionCubDirectionAndMomentum(lion_.beta1, lion_.beta2, gradients.data(), momentum_.data(), momentum_.data(),
                                direction_.data(), weights.size());
    const Clock::time_point start = Clock::now();
    CHORUS_RETURN_IF_ERROR(CheckChorus(chorusAllReduceCompressed(direction_.data(), direction_.data(),
                                                                 direction_.size(), chorusFloat32, state_, comm_,
                                                                 nullptr),
                                       comm_, "sign vote"));
    LionCubApply(lr, lion_.weight_decay, direction_.data(), weights.data(), weights.size());
    if (momentum_sync_steps_ > 0 && (step + 1) % momentum_sync_steps_ == 0) {
      CHORUS_RETURN_IF_ERROR(CheckChorus(chorusAllReduce(momentum_.data(), momentum_.data(), momentum_.size(),
                                                         chorusFloat32, chorusSum, comm_, nullptr),
                                         comm_, "momentum allreduce"));
      const float inverse = 1.0f / static_cast<float>(nranks_);
      for (float& m : momentum_) m *= inverse;
      counters_.extra_bytes += momentum_.size() * sizeof(float);
    }
    counters_.blocking_seconds += SecondsSince(start);
    return chorus::Status::Ok();
  }

  chorus::Status Quiesce() override {
    unsigned long long wire = 0, uncompressed = 0;
    CHORUS_RETURN_IF_ERROR(
        CheckChorus(chorusCompressStateGetBytes(state_, &wire, &uncompressed), comm_, "chorusCompressStateGetBytes"));
    counters_.wire_bytes += wire - reported_wire_;
    counters_.gradient_bytes += wire - reported_wire_;
    counters_.uncompressed_bytes += uncompressed - reported_uncompressed_;
    reported_wire_ = wire;
    reported_uncompressed_ = uncompressed;
    return chorus::Status::Ok();
  }

 private:
  chorusComm_t comm_;
  OptimizerOptions lion_;
  int momentum_sync_steps_;
  int nranks_ = 1;
  chorusCompressState_t state_ = nullptr;
  std::vector<float> momentum_;
  std::vector<float> direction_;  // c, then the voted sign
  unsigned long long reported_wire_ = 0, reported_uncompressed_ = 0;
};

}  // namespace

chorus::Status MakeLionCubExchange(chorusComm_t comm, const OptimizerOptions& lion, bool int8,
                                   int momentum_sync_steps, size_t parameter_count,
                                   std::unique_ptr<StepExchange>* out) {
  auto exchange = std::make_unique<LionCubExchange>(comm, lion, momentum_sync_steps);
  CHORUS_RETURN_IF_ERROR(exchange->Init(int8, parameter_count));
  *out = std::move(exchange);
  return chorus::Status::Ok();
}

}  // namespace trainer
