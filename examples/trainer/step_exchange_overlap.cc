// --overlap: bucket k of the flat gradient is [k * B, (k + 1) * B), the same
// grid as GradientSync, so the result equals bucketed sync. The backward pass
// finishes layers last to first, so buckets are enqueued from the end of the
// buffer towards the front, in the same order on every rank.
#include <algorithm>

#include "examples/trainer/step_exchange.h"

namespace trainer {
namespace {

class OverlapExchange : public StepExchange {
 public:
  OverlapExchange(chorusComm_t comm, size_t bucket_floats, std::unique_ptr<Optimizer> optimizer)
      : comm_(comm), bucket_floats_(std::max<size_t>(1, bucket_floats)), optimizer_(std::move(optimizer)) {
    (void)chorusCommCount(comm_, &nranks_);
  }

  chorus::Status Init() { return stream_.Create(); }
  bool wants_gradient_hook() const override { return true; }

  void GradientsReady(std::vector<float>& gradients, size_t ready_begin) override {
    if (pending_end_ == kNone) {
      pending_end_ = gradients.size();
      first_enqueue_ = Clock::now();
    }
    while (pending_end_ > 0 && status_.ok()) {
      const size_t begin = (pending_end_ - 1) / bucket_floats_ * bucket_floats_;
      if (begin < ready_begin) break;  // the bucket still waits for earlier layers
      float* slice = gradients.data() + begin;
      status_ = CheckChorus(chorusAllReduce(slice, slice, pending_end_ - begin, chorusFloat32, chorusSum, comm_,
                                            stream_.get()),
                            comm_, "overlapped gradient allreduce");
      counters_.gradient_bytes += (pending_end_ - begin) * sizeof(float);
      pending_end_ = begin;
    }
  }

  chorus::Status Update(int, std::vector<float>& weights, std::vector<float>& gradients, float lr) override {
    GradientsReady(gradients, 0);  // whatever the hook did not cover (layers without parameters first)
    const Clock::time_point wait_start = Clock::now();
    chorus::Status status = CheckChorus(chorusStreamSynchronize(stream_.get()), comm_, "overlapped allreduce");
    const double waited = SecondsSince(wait_start);
    // The stream was busy from the first enqueue until the wait ended, at
    // most; all of that but the wait ran under the backward pass.
    counters_.blocking_seconds += waited;
    counters_.hidden_seconds += std::max(0.0, SecondsSince(first_enqueue_) - waited);
    pending_end_ = kNone;
    if (!status_.ok()) status = status_;
    status_ = chorus::Status::Ok();
    CHORUS_RETURN_IF_ERROR(status);
    const float inverse = 1.0f / static_cast<float>(nranks_);
    for (float& g : gradients) g *= inverse;
    optimizer_->Step(weights, gradients, lr);
    return chorus::Status::Ok();
  }

 private:
  static constexpr size_t kNone = static_cast<size_t>(-1);

  chorusComm_t comm_;
  size_t bucket_floats_;
  std::unique_ptr<Optimizer> optimizer_;
  int nranks_ = 1;
  HostStream stream_;
  size_t pending_end_ = kNone;  // buckets at and after this offset are enqueued
  Clock::time_point first_enqueue_;
  chorus::Status status_;  // first enqueue failure of this step
};

}  // namespace

chorus::Status MakeOverlapExchange(chorusComm_t comm, size_t bucket_bytes, std::unique_ptr<Optimizer> optimizer,
                                   std::unique_ptr<StepExchange>* out) {
  auto exchange = std::make_unique<OverlapExchange>(comm, bucket_bytes / sizeof(float), std::move(optimizer));
  CHORUS_RETURN_IF_ERROR(exchange->Init());
  *out = std::move(exchange);
  return chorus::Status::Ok();
}

}  // namespace trainer
