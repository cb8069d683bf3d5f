// HostStream: an in-order queue of work served by its own thread, the host
// analogue of a CUDA stream. Work items are closures returning Status; the
// first failure is kept and returned by Synchronize.
//
// Hand-off: a sleeping thread takes microseconds to wake, more than a small
// collective runs, so the worker polls for new work for a while after each
// item, and Synchronize polls for completion, both spinning then yielding
// (base/spin_wait.h), before they sleep on a condition variable. Both polls
// are adaptive: where they keep running out (long collectives, a training
// loop that enqueues once per step) they stop, leaving the CPU to the
// computation. The worker asks the kernel for a short scheduler slice, so it
// runs soon after the network wakes it even when computing threads fill the
// cores. Work enqueued for a communicator whose ranks outnumber the CPUs
// (Communicator::cores_shared) is waited for without polling: the worker
// after it, and Synchronize while it is the last item, check once and
// sleep, leaving the core to the ranks (base/spin_wait.h).
//
// A stream made with a DeviceStreamLink (chorusStreamFromCuda) also keeps
// its items in order with a device stream's work (core/device_stream_link.h).
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>

#include "base/status.h"
#include "base/spin_wait.h"
#include "core/device_stream_link.h"
#include "topology/host_topology.h"

namespace chorus {

class HostStream {
 public:
  // `link`: the device stream every item is ordered with (null: none).
  explicit HostStream(std::unique_ptr<DeviceStreamLink> link = nullptr);
  ~HostStream();  // drains the queue, then joins the worker
  HostStream(const HostStream&) = delete;
  HostStream& operator=(const HostStream&) = delete;

  // `cores_shared`: the work's communicator shares cores (no polling for it).
  void Enqueue(std::function<Status()> work, bool cores_shared = false);
  // Restricts the worker to `cpus` (topology/thread_placement.h): the first
  // non-empty list given wins, later ones change nothing. One relaxed load
  // once placed.
  void PlaceWorker(const CpuList& cpus);
  // Waits until everything enqueued so far ran. Returns the first failure
  // since the last Synchronize and clears it. Every item is itself bounded
  // by its communicator's timeout, so this wait is bounded too.
  Status Synchronize();
  // chorusInProgress while work is queued or running, else the first failure
  // (without clearing it: Synchronize still returns it).
  Status Query();
  // The first failure not yet cleared by Synchronize, whatever is pending
  // (an event marker reads it once the items before it have run).
  Status PendingFailure();

  // Whether the last item enqueued belongs to a communicator whose ranks
  // outnumber the CPUs (waits for it should not poll).
  bool last_cores_shared() const { return last_cores_shared_.load(std::memory_order_relaxed); }

  // ready() checks made by the worker's and Synchronize's polls (tests).
  uint64_t worker_polls() const { return worker_poll_.polls(); }
  uint64_t synchronize_polls() const { return synchronize_poll_.polls(); }

 private:
  struct Item {
    std::function<Status()> work;
    bool cores_shared;
  };
  void Serve();

  const std::unique_ptr<DeviceStreamLink> link_;  // outlives the worker, whose items use it
  std::mutex mutex_;
  std::condition_variable work_cv_, idle_cv_;
  std::deque<Item> queue_;
  bool running_ = false;
  Status first_error_;
  // Read without the lock by the polling stages of the waits; written under it.
  std::atomic<size_t> outstanding_{0};  // queued or running items
  std::atomic<size_t> queued_{0};       // items in queue_
  std::atomic<bool> stopping_{false};
  std::atomic<bool> last_cores_shared_{false};  // of the last item enqueued
  std::atomic<bool> placed_{false};             // PlaceWorker took a list
  AdaptiveSpin worker_poll_;       // the worker, for new work
  AdaptiveSpin synchronize_poll_;  // Synchronize, for completion
  std::thread worker_;             // last: starts once everything above exists
};

}  // namespace chorus
