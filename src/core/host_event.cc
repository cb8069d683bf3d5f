#include "core/host_event.h"

#include <thread>

namespace chorus {
namespace {
// A wait polls this long before sleeping: a small collective ends within it
// on idle cores, and a condition-variable wake-up costs as much again.
constexpr auto kWaitPoll = std::chrono::microseconds(20);
}  // namespace

uint64_t HostEvent::Arm() {
  std::lock_guard<std::mutex> lock(mutex_);
  return ++recorded_;
}

void HostEvent::Complete(uint64_t generation, const Status& result) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    // A later recording on a faster stream may have completed first.
    if (generation <= completed_) return;
    completed_ = generation;
    result_ = result;
  }
  done_cv_.notify_all();
}

void HostEvent::Record(const std::shared_ptr<HostEvent>& event, HostStream* stream) {
  const uint64_t generation = event->Arm();
  if (stream == nullptr) {
    event->Complete(generation, Status::Ok());
    return;
  }
  stream->Enqueue([event, generation, stream] {
    // Every earlier item has run: the stream's kept failure is theirs.
    event->Complete(generation, stream->PendingFailure());
    return Status::Ok();
  });
}

Status HostEvent::Query() const {
  std::lock_guard<std::mutex> lock(mutex_);
  if (completed_ < recorded_) return Status(chorusInProgress, "the event's work is pending");
  return result_;
}

Status HostEvent::WaitFor(uint64_t generation) const {
  const auto poll_end = std::chrono::steady_clock::now() + kWaitPoll;
  std::unique_lock<std::mutex> lock(mutex_);
  while (completed_ < generation && std::chrono::steady_clock::now() < poll_end) {
    lock.unlock();
    std::this_thread::yield();
    lock.lock();
  }
  done_cv_.wait(lock, [&] { return completed_ >= generation; });
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
