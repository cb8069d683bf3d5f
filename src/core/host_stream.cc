#include "core/host_stream.h"

#include "core/spin_wait.h"

namespace chorus {
namespace {
using std::chrono::microseconds;

// The worker keeps polling this long after its last item: back-to-back
// calls (issue, synchronize, issue, ...) then never pay a wake-up.
constexpr SpinBudget kWorkerPoll{microseconds(2), microseconds(50)};
// Synchronize polls this long before sleeping: a small collective is done
// by then on idle cores; longer ones are worth the sleep.
constexpr SpinBudget kSynchronizePoll{microseconds(2), microseconds(50)};
}  // namespace

HostStream::HostStream() : worker_([this] { Serve(); }) {}

HostStream::~HostStream() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_.store(true, std::memory_order_release);
  }
  work_cv_.notify_all();
  worker_.join();
}

void HostStream::Enqueue(std::function<Status()> work) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    queue_.push_back(std::move(work));
    outstanding_.fetch_add(1, std::memory_order_relaxed);
    queued_.fetch_add(1, std::memory_order_release);
  }
  // Cheap when the worker is not asleep (no waiter, no syscall).
  work_cv_.notify_one();
}

Status HostStream::Synchronize() {
  SpinThenYield(kSynchronizePoll, [&] { return outstanding_.load(std::memory_order_acquire) == 0; });
  std::unique_lock<std::mutex> lock(mutex_);
  idle_cv_.wait(lock, [&] { return queue_.empty() && !running_; });
  Status status = first_error_;
  first_error_ = Status::Ok();
  return status;
}

Status HostStream::Query() {
  std::lock_guard<std::mutex> lock(mutex_);
  if (!queue_.empty() || running_) return Status(chorusInProgress, "work is pending on the stream");
  return first_error_;  // kept until Synchronize reports it
}

void HostStream::Serve() {
  std::unique_lock<std::mutex> lock(mutex_);
  for (;;) {
    if (queue_.empty() && !stopping_.load(std::memory_order_relaxed)) {
      lock.unlock();
      SpinThenYield(kWorkerPoll, [&] {
        return queued_.load(std::memory_order_acquire) > 0 || stopping_.load(std::memory_order_acquire);
      });
      lock.lock();
      work_cv_.wait(lock, [&] { return stopping_.load(std::memory_order_relaxed) || !queue_.empty(); });
    }
    if (queue_.empty()) return;  // stopping and drained
    std::function<Status()> work = std::move(queue_.front());
    queue_.pop_front();
    queued_.fetch_sub(1, std::memory_order_relaxed);
    running_ = true;
    lock.unlock();
    Status status = work();
    work = nullptr;  // release what the item holds before it counts as done
    lock.lock();
    running_ = false;
    if (!status.ok() && first_error_.ok()) first_error_ = status;
    outstanding_.fetch_sub(1, std::memory_order_release);
    if (queue_.empty()) idle_cv_.notify_all();
  }
}

}  // namespace chorus
