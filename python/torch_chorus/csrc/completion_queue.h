// CompletionQueue: the thread that finishes works whose futures someone
// holds (DDP's reducer, comm hooks, get_future()) when nobody waits on them.
// A work joins it only when its future is first asked for: works that are
// waited on finish on the waiting thread, and a plain blocking call costs no
// wake-up of this thread. Works are finished in the order they joined, each
// after its event (bounded by the communicator's timeout). Shared with the
// works, so a work whose group is gone finishes on the caller's thread.
#pragma once

#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>

namespace torch_chorus {

class CompletionQueue {
 public:
  CompletionQueue();
  ~CompletionQueue();  // Stop() must have been called
  CompletionQueue(const CompletionQueue&) = delete;
  CompletionQueue& operator=(const CompletionQueue&) = delete;

  // Queues `complete` (which blocks until its work ended, then finishes it).
  // False once stopped: the caller runs it itself.
  bool Push(std::function<void()> complete);
  // Runs what is queued, then joins the thread.
  void Stop();

 private:
  void Loop();

  std::mutex mutex_;
  std::condition_variable cv_;
  std::deque<std::function<void()>> pending_;
  bool stopping_ = false;
  std::thread thread_;  // last: starts once the members above exist
};

}  // namespace torch_chorus
