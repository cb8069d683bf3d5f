// --pipe-sgd (Li et al. 2018, staleness 1): after `warmup` synchronous steps,
// step t enqueues the AllReduce of its gradient on a host stream and applies
// the averaged gradient of step t-1, so the AllReduce of step t runs while
// step t+1 computes. The first pipelined step applies nothing. Every rank
// applies the same averaged gradient, so weights stay identical.
#include <algorithm>

#include "examples/trainer/step_exchange.h"

namespace trainer {
namespace {

class PipeSgdExchange : public StepExchange {
 public:
  PipeSgdExchange(chorusComm_t comm, GradientSync* sync, int warmup, std::unique_ptr<Optimizer> optimizer)
      : comm_(comm), sync_(sync), warmup_(warmup), optimizer_(std::move(optimizer)) {}

  ~PipeSgdExchange() override {
    (void)chorusStreamSynchronize(stream_.get());  // the state must be idle before it is freed
    (void)chorusCompressStateDestroy(fp16_);
  }

  chorus::Status Init(bool fp16_wire, size_t count) {
    in_flight_.resize(count);
    ready_.resize(count);
    if (fp16_wire) {
      CHORUS_RETURN_IF_ERROR(CheckChorus(
          chorusCompressStateCreate(&fp16_, chorusCompressFp16, count, chorusFloat32, comm_), comm_,
          "chorusCompressStateCreate"));
    }
    return stream_.Create();
  }

  chorus::Status Update(int step, std::vector<float>& weights, std::vector<float>& gradients, float lr) override {
    if (step < warmup_) {
      const Clock::time_point start = Clock::now();
      CHORUS_RETURN_IF_ERROR(sync_->AverageGradients(gradients));
      counters_.blocking_seconds += SecondsSince(start);
      counters_.gradient_bytes += gradients.size() * sizeof(float);
      optimizer_->Step(weights, gradients, lr);
      return chorus::Status::Ok();
    }
    const bool have_previous = pending_;
    if (pending_) {
      CHORUS_RETURN_IF_ERROR(WaitForInFlight());
      in_flight_.swap(ready_);
    }
    std::copy(gradients.begin(), gradients.end(), in_flight_.begin());
    float* data = in_flight_.data();
    const chorusResult_t result =
        fp16_ != nullptr
            ? chorusAllReduceCompressed(data, data, in_flight_.size(), chorusFloat32, fp16_, comm_, stream_.get())
            : chorusAllReduce(data, data, in_flight_.size(), chorusFloat32, chorusSum, comm_, stream_.get());
    CHORUS_RETURN_IF_ERROR(CheckChorus(result, comm_, "pipelined gradient allreduce"));
    if (fp16_ == nullptr) counters_.gradient_bytes += in_flight_.size() * sizeof(float);  // fp16: in Quiesce
    pending_ = true;
    enqueued_ = Clock::now();
    if (have_previous) {
      const float inverse = 1.0f / static_cast<float>(sync_->nranks());
      for (float& g : ready_) g *= inverse;
      optimizer_->Step(weights, ready_, lr);
    }
    return chorus::Status::Ok();
  }

  // The last gradient stays in in_flight_ and is applied by the next step.
  chorus::Status Quiesce() override {
    chorus::Status status = chorus::Status::Ok();
    if (pending_ && !waited_) {
      status = WaitForInFlight();
      waited_ = true;
    }
    if (fp16_ != nullptr) {
      unsigned long long wire = 0, uncompressed = 0;
      (void)chorusCompressStateGetBytes(fp16_, &wire, &uncompressed);
      counters_.wire_bytes += wire - reported_wire_;
      counters_.gradient_bytes += wire - reported_wire_;
      counters_.uncompressed_bytes += uncompressed - reported_uncompressed_;
      reported_wire_ = wire;
      reported_uncompressed_ = uncompressed;
    }
    return status;
  }

 private:
  chorus::Status WaitForInFlight() {
    if (waited_) {  // Quiesce already waited for it
      waited_ = false;
      return chorus::Status::Ok();
    }
    const Clock::time_point start = Clock::now();
    chorus::Status status = CheckChorus(chorusStreamSynchronize(stream_.get()), comm_, "pipelined allreduce");
    const double waited = SecondsSince(start);
    counters_.blocking_seconds += waited;
    counters_.hidden_seconds += std::max(0.0, SecondsSince(enqueued_) - waited);
    return status;
  }

  chorusComm_t comm_;
  GradientSync* sync_;
  int warmup_;
  std::unique_ptr<Optimizer> optimizer_;
  HostStream stream_;
  chorusCompressState_t fp16_ = nullptr;
  std::vector<float> in_flight_;  // this step's gradient, being summed
  std::vector<float> ready_;      // the previous step's sum
  bool pending_ = false;          // in_flight_ holds an enqueued AllReduce
  bool waited_ = false;           // ... which has already completed
  Clock::time_point enqueued_;
  unsigned long long reported_wire_ = 0, reported_uncompressed_ = 0;
};

}  // namespace

chorus::Status MakePipeSgdExchange(chorusComm_t comm, GradientSync* sync, int warmup_steps, bool fp16_wire,
                                   size_t parameter_count, std::unique_ptr<Optimizer> optimizer,
                                   std::unique_ptr<StepExchange>* out) {
  auto exchange = std::make_unique<PipeSgdExchange>(comm, sync, warmup_steps, std::move(optimizer));
  CHORUS_RETURN_IF_ERROR(exchange->Init(fp16_wire, parameter_count));
  *out = std::move(exchange);
  return chorus::Status::Ok();
}

}  // namespace trainer
