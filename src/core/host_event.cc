#include "core/host_event.h"

#include "base/spin_wait.h"

namespace chorus {
namespace {
// A wait polls (2 us spinning, then yielding) this long before sleeping: a
// small collective ends within it on idle cores, and a condition-variable
// wake-up costs as much again. Work of ranks that outnumber the CPUs is
// waited for without polling, as HostStream::Synchronize does.
constexpr SpinBudget kWaitPoll{std::chrono::microseconds(2), std::chrono::microseconds(20)};
}  // namespace

uint64_t HostEvent::Arm() {
  std::lock_guard<std::mutex> lock(mutex_);
  return ++recorded_;
}

void HostEvent::Complete(uint64_t generation, const Status& result) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    // A later recording on a faster stream may have completed first.
    if (generation <= completed_.load(std::memory_order_relaxed)) return;
    result_ = result;
    completed_.store(generation, std::memory_order_release);
  }
  done_cv_.notify_all();
}

void HostEvent::Record(const std::shared_ptr<HostEvent>& event, HostStream* stream) {
  const uint64_t generation = event->Arm();
  if (stream == nullptr) {
    event->Complete(generation, Status::Ok());
    return;
  }
  const bool cores_shared = stream->last_cores_shared();
  event->cores_shared_.store(cores_shared, std::memory_order_relaxed);
  stream->Enqueue(
      [event, generation, stream] {
        // Every earlier item has run: the stream's kept failure is theirs.
        event->Complete(generation, stream->PendingFailure());
        return Status::Ok();
      },
      cores_shared);
}

Status HostEvent::Query() const {
  std::lock_guard<std::mutex> lock(mutex_);
  if (completed_.load(std::memory_order_relaxed) < recorded_) {
    return Status(chorusInProgress, "the event's work is pending");
  }
  return result_;
}

Status HostEvent::WaitFor(uint64_t generation) const {
  const auto done = [&] { return completed_.load(std::memory_order_acquire) >= generation; };
  if (!cores_shared_.load(std::memory_order_relaxed)) SpinThenYield(kWaitPoll, done);
  std::unique_lock<std::mutex> lock(mutex_);
  done_cv_.wait(lock, done);
  return result_;
}

Status HostEvent::Wait() const {
  uint64_t generation;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    generation = recorded_;
  }
  return WaitFor(generation);
}

void HostEvent::EnqueueWait(const std::shared_ptr<HostEvent>& event, HostStream* stream) {
  uint64_t generation;
  {
    std::lock_guard<std::mutex> lock(event->mutex_);
    generation = event->recorded_;
  }
  if (generation == 0) return;  // never recorded: nothing to wait for
  stream->Enqueue([event, generation] { return event->WaitFor(generation); });
}

}  // namespace chorus
