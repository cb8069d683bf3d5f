#include "core/host_stream.h"

namespace chorus {

HostStream::HostStream() : worker_([this] { Serve(); }) {}

HostStream::~HostStream() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  work_cv_.notify_all();
  worker_.join();
}

void HostStream::Enqueue(std::function<Status()> work) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    queue_.push_back(std::move(work));
  }
  work_cv_.notify_one();
}

Status HostStream::Synchronize() {
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
    work_cv_.wait(lock, [&] { return stopping_ || !queue_.empty(); });
    if (queue_.empty()) return;  // stopping and drained
    std::function<Status()> work = std::move(queue_.front());
    queue_.pop_front();
    running_ = true;
    lock.unlock();
    Status status = work();
    lock.lock();
    running_ = false;
    if (!status.ok() && first_error_.ok()) first_error_ = status;
    if (queue_.empty()) idle_cv_.notify_all();
  }
}

}  // namespace chorus
