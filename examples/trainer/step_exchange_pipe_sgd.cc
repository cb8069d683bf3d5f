// --pipe-sgd (Li et al. 2018, staleness 1): after `warmup` synchronous steps,
// step t enqueues the AllReduce of its gradient on a host stream and applies
// the averaged gradient of step t-1, so the AllReduce of step t runs while
// step t+1 computes. The first pipelined step applies nothing. Every rank
// applies the same averaged gradient, so weights stay identical.
//
// Steps alternate between two streams, and step t enqueues its AllReduce
// before it waits for step t-1's: the communicator runs calls in issue order,
// so step t's starts the moment step t-1's ends, without waiting for this
// thread to wake up, apply the update and enqueue (on cores shared with
// computing threads that wake-up alone can take a scheduler slice, with the
// link idle). Each stream has its own buffer and fp16 state, so the two
// calls in flight share nothing.
#include <algorithm>
#include <array>

#include "examples/trainer/step_exchange.h"

namespace trainer {
namespace {

class PipeSgdExchange : public StepExchange {
 public:
  PipeSgdExchange(chorusComm_t comm, GradientSync* sync, int warmup, std::unique_ptr<Optimizer> optimizer)
      : comm_(comm), sync_(sync), warmup_(warmup), optimizer_(std::move(optimizer)) {}

  ~PipeSgdExchange() override {
    for (Lane& lane : lanes_) {
      (void)chorusStreamSynchronize(lane.stream.get());  // the state must be idle before it is freed
      (void)chorusCompressStateDestroy(lane.fp16);
    }
  }

  chorus::Status Init(bool fp16_wire, size_t count) {
    for (Lane& lane : lanes_) {
      lane.gradient.resize(count);
      if (fp16_wire) {
        CHORUS_RETURN_IF_ERROR(CheckChorus(
            chorusCompressStateCreate(&lane.fp16, chorusCompressFp16, count, chorusFloat32, comm_), comm_,
            "chorusCompressStateCreate"));
      }
      CHORUS_RETURN_IF_ERROR(lane.stream.Create());
    }
    return chorus::Status::Ok();
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
    // This lane's previous call (step t-2) was waited for at step t-1, so
    // its buffer is free: it becomes the model's for step t+1 (no copy).
    Lane& mine = lanes_[step % 2];
    mine.gradient.swap(gradients);
    float* data = mine.gradient.data();
    const size_t count = mine.gradient.size();
    const chorusResult_t result =
        mine.fp16 != nullptr
            ? chorusAllReduceCompressed(data, data, count, chorusFloat32, mine.fp16, comm_, mine.stream.get())
            : chorusAllReduce(data, data, count, chorusFloat32, chorusSum, comm_, mine.stream.get());
    CHORUS_RETURN_IF_ERROR(CheckChorus(result, comm_, "pipelined gradient allreduce"));
    if (mine.fp16 == nullptr) counters_.gradient_bytes += count * sizeof(float);  // fp16: in Quiesce
    mine.enqueued = Clock::now();
    mine.waited = false;
    Lane* previous = pending_;
    pending_ = &mine;
    if (previous != nullptr) {
      CHORUS_RETURN_IF_ERROR(WaitFor(*previous));
      optimizer_->Step(weights, previous->gradient, 1.0f / static_cast<float>(sync_->nranks()), lr);
    }
    return chorus::Status::Ok();
  }

  // The last gradient stays in its lane and is applied by the next step.
  chorus::Status Quiesce() override {
    chorus::Status status = chorus::Status::Ok();
    if (pending_ != nullptr && !pending_->waited) status = WaitFor(*pending_);
    for (Lane& lane : lanes_) {
      if (lane.fp16 == nullptr) continue;
      unsigned long long wire = 0, uncompressed = 0;
      (void)chorusCompressStateGetBytes(lane.fp16, &wire, &uncompressed);
      counters_.wire_bytes += wire - lane.reported_wire;
      counters_.gradient_bytes += wire - lane.reported_wire;
      counters_.uncompressed_bytes += uncompressed - lane.reported_uncompressed;
      lane.reported_wire = wire;
      lane.reported_uncompressed = uncompressed;
    }
    return status;
  }

 private:
  // One stream with the gradient it is summing.
  struct Lane {
    HostStream stream;
    chorusCompressState_t fp16 = nullptr;
    std::vector<float> gradient;
    Clock::time_point enqueued;
    bool waited = false;  // its newest call is known complete
    unsigned long long reported_wire = 0, reported_uncompressed = 0;
  };

  chorus::Status WaitFor(Lane& lane) {
    if (lane.waited) return chorus::Status::Ok();  // Quiesce already waited for it
    const Clock::time_point start = Clock::now();
    chorus::Status status = CheckChorus(chorusStreamSynchronize(lane.stream.get()), comm_, "pipelined allreduce");
    const double waited = SecondsSince(start);
    counters_.blocking_seconds += waited;
    counters_.hidden_seconds += std::max(0.0, SecondsSince(lane.enqueued) - waited);
    lane.waited = true;
    return status;
  }

  chorusComm_t comm_;
  GradientSync* sync_;
  int warmup_;
  std::unique_ptr<Optimizer> optimizer_;
  std::array<Lane, 2> lanes_;
  Lane* pending_ = nullptr;  // the lane of the newest enqueued AllReduce, not yet applied
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
