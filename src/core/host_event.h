// HostEvent: a point in a host stream's queue, the host analogue of a CUDA
// event. Recording arms a new generation and enqueues a marker; when the
// stream's worker reaches the marker, everything enqueued before it has run
// and the generation completes with the stream's first failure not yet
// cleared by Synchronize (CUDA's sticky errors: a failed collective makes
// every later event on its stream report the failure).
//
// Re-recording moves the event to the new point; queries and waits refer to
// the latest recording made before they were called. The state is shared
// with the markers, so destroying an event whose marker is still queued is
// safe.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>

#include "base/status.h"
#include "core/host_stream.h"

namespace chorus {

class HostEvent {
 public:
  // Places the event after the work already enqueued on `stream`, or marks
  // it complete at once when `stream` is null (NULL-stream calls block, so
  // their work has finished).
  static void Record(const std::shared_ptr<HostEvent>& event, HostStream* stream);

  // chorusInProgress while the latest recording is pending, else its result.
  // An event never recorded is complete (as in CUDA).
  Status Query() const;
  // Waits for the latest recording at the time of the call and returns its
  // result. Bounded because every item before the marker is bounded by its
  // communicator's timeout.
  Status Wait() const;
  // Makes `stream` wait (in its queue, not the caller) for the latest
  // recording at the time of the call; a failure of the awaited work fails
  // the waiting stream's item too, so the stream reports it.
  static void EnqueueWait(const std::shared_ptr<HostEvent>& event, HostStream* stream);

 private:
  uint64_t Arm();
  void Complete(uint64_t generation, const Status& result);
  Status WaitFor(uint64_t generation) const;

  mutable std::mutex mutex_;
  mutable std::condition_variable done_cv_;
  uint64_t recorded_ = 0;                 // generations armed so far
  std::atomic<uint64_t> completed_{0};    // the highest generation completed; polled without the lock
  std::atomic<bool> cores_shared_{false};  // of the latest record's work: then waits do not poll
  Status result_;                         // of generation completed_
};

}  // namespace chorus
