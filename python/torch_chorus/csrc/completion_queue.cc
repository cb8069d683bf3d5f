#include "completion_queue.h"

namespace torch_chorus {

CompletionQueue::CompletionQueue() : thread_([this] { Loop(); }) {}

CompletionQueue::~CompletionQueue() { Stop(); }

bool CompletionQueue::Push(std::function<void()> complete) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (stopping_) return false;
    pending_.push_back(std::move(complete));
  }
  cv_.notify_one();
  return true;
}

void CompletionQueue::Stop() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void CompletionQueue::Loop() {
  for (;;) {
    std::function<void()> complete;
    {
      std::unique_lock<std::mutex> lock(mutex_);
      cv_.wait(lock, [&] { return stopping_ || !pending_.empty(); });
      if (pending_.empty()) return;  // stopping and drained
      complete = std::move(pending_.front());
      pending_.pop_front();
    }
    complete();  // releases the work it holds here, off the lock
  }
}

}  // namespace torch_chorus
