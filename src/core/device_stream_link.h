// DeviceStreamLink: ties a host stream (core/host_stream.h) to a device's
// stream of work (a cudaStream_t), as NCCL orders a collective on the CUDA
// stream it is given:
//  - an item enqueued on the host stream starts only after the device work
//    queued on the device stream before the enqueue has finished;
//  - device work queued on the device stream after the enqueue starts only
//    after the item has run (succeeded or failed: a failure is reported by
//    the host stream, the device stream is never left waiting).
//
// Mechanism, one ticket per item: at the enqueue the link marks the device
// stream's current end (a CUDA event) and makes the device stream wait until
// a host-written word reaches the item's ticket (a stream memory wait, so no
// CPU thread blocks for the device); the worker waits for the mark, runs the
// item, then writes the ticket. Items run in order, so tickets are written in
// order and the word only grows.
//
// Subclasses supply the device side: the CUDA link (core/cuda_stream_link.h)
// and the tests' fake device stream.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>

#include "base/deadline.h"
#include "base/status.h"

namespace chorus {

// A point in a device stream: complete once the device work before it ran.
class DeviceMark {
 public:
  virtual ~DeviceMark() = default;
  // chorusSuccess once complete; chorusTimeout at `deadline`; a device error
  // (the work before the mark failed) as chorusSystemError.
  virtual Status Wait(Deadline deadline) = 0;
};

class DeviceStreamLink {
 public:
  // `wait_ms`: how long an item waits for the device work queued before it.
  explicit DeviceStreamLink(int wait_ms) : wait_ms_(wait_ms) {}
  virtual ~DeviceStreamLink() = default;
  DeviceStreamLink(const DeviceStreamLink&) = delete;
  DeviceStreamLink& operator=(const DeviceStreamLink&) = delete;

  // Called on the enqueuing thread, in enqueue order: returns `work` wrapped
  // to run between the device stream's work before and after this call.
  // Failures to link (a device error) become the wrapped item's failure; the
  // device stream is released either way.
  std::function<Status()> Bracket(std::function<Status()> work);

 protected:
  int wait_ms() const { return wait_ms_; }
  // The device stream's current end.
  virtual Status MarkQueued(std::unique_ptr<DeviceMark>* mark) = 0;
  // Device work queued from now on waits until Release(t) with t >= ticket
  // (cyclic comparison: tickets wrap at 2^32).
  virtual Status HoldUntil(uint32_t ticket) = 0;
  // The items up to `ticket` have run.
  virtual void Release(uint32_t ticket) = 0;

 private:
  const int wait_ms_;
  uint32_t issued_ = 0;  // the last ticket; enqueues are serialised by the caller
};

}  // namespace chorus
