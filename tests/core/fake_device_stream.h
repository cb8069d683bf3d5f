// A device stream for tests, standing in for a CUDA stream where there is no
// GPU: a thread that runs queued "kernels" (closures) in order. Its link
// (core/device_stream_link.h) puts marks and memory waits in the same queue,
// as the CUDA link puts events and cuStreamWaitValue32 in a CUDA stream.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>

#include "core/device_stream_link.h"

namespace chorus::testing {

class FakeDeviceStream {
 public:
  FakeDeviceStream();
  ~FakeDeviceStream();  // runs what is queued, then joins
  FakeDeviceStream(const FakeDeviceStream&) = delete;
  FakeDeviceStream& operator=(const FakeDeviceStream&) = delete;

  // Queues `kernel` behind everything queued before it.
  void Launch(std::function<void()> kernel);
  // Waits until the queue has run; false after `timeout_ms` (a test failure,
  // never a hang).
  bool Synchronize(int timeout_ms = 10000);
  // A link to this stream; it must not outlive the stream. A memory wait
  // that is not released within 10 s gives up (and counts in
  // abandoned_waits()), so that a broken link fails a test instead of
  // hanging it.
  std::unique_ptr<DeviceStreamLink> Link(int wait_ms);

  // Memory waits queued by links, and those that gave up.
  int memory_waits() const { return memory_waits_.load(); }
  int abandoned_waits() const { return abandoned_waits_.load(); }

 private:
  class StreamLink;
  void Serve();

  std::mutex mutex_;
  std::condition_variable work_cv_, idle_cv_;
  std::deque<std::function<void()>> queue_;
  bool running_ = false;
  bool stopping_ = false;
  std::atomic<int> memory_waits_{0};
  std::atomic<int> abandoned_waits_{0};
  std::thread worker_;  // last: starts once everything above exists
};

}  // namespace chorus::testing
