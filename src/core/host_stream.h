// HostStream: an in-order queue of work served by its own thread, the host
// analogue of a CUDA stream. Work items are closures returning Status; the
// first failure is kept and returned by Synchronize.
#pragma once

#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>

#include "base/status.h"

namespace chorus {

class HostStream {
 public:
  HostStream();
  ~HostStream();  // drains the queue, then joins the worker
  HostStream(const HostStream&) = delete;
  HostStream& operator=(const HostStream&) = delete;

  void Enqueue(std::function<Status()> work);
  // Waits until everything enqueued so far ran. Returns the first failure
  // since the last Synchronize and clears it. Every item is itself bounded
  // by its communicator's timeout, so this wait is bounded too.
  Status Synchronize();
  // chorusInProgress while work is queued or running, else the first failure
  // (without clearing it: Synchronize still returns it).
  Status Query();

 private:
  void Serve();

  std::mutex mutex_;
  std::condition_variable work_cv_, idle_cv_;
  std::deque<std::function<Status()>> queue_;
  bool running_ = false;
  bool stopping_ = false;
  Status first_error_;
  std::thread worker_;
};

}  // namespace chorus
