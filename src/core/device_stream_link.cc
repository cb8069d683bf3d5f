#include "core/device_stream_link.h"

#include <utility>

namespace chorus {

std::function<Status()> DeviceStreamLink::Bracket(std::function<Status()> work) {
  const uint32_t ticket = ++issued_;
  std::unique_ptr<DeviceMark> mark;
  Status linked = MarkQueued(&mark);
  // Held even when the mark failed: the ticket's release below must be what
  // lets later device work go, whatever happened to this item.
  Status held = HoldUntil(ticket);
  if (linked.ok()) linked = held;
  // shared_ptr: std::function needs a copyable closure.
  return [this, ticket, linked, mark = std::shared_ptr<DeviceMark>(std::move(mark)), work = std::move(work)]() mutable {
    Status status = linked;
    if (status.ok()) status = mark->Wait(Deadline::AfterMs(wait_ms_));
    if (status.ok()) status = work();
    work = nullptr;  // release what the item holds before later device work starts
    Release(ticket);
    return status;
  };
}

}  // namespace chorus
