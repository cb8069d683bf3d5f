// The structs behind the public opaque handles, and per-handle error text.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>

#include "base/status.h"
#include "bootstrap/heartbeat.h"
#include "bootstrap/shrink.h"
#include "core/communicator.h"
#include "core/host_event.h"
#include "core/host_stream.h"

// A communicator handle. Destroy and Abort release the Communicator but keep
// this small shell (a deliberate tombstone of a few hundred bytes), so that a
// later call with the stale handle is reported as invalid usage instead of
// touching freed memory.
struct chorusComm {
  enum State : uint32_t { kLive = 0x11ce11ce, kDestroyed = 0xdead0001, kAborted = 0xdead0002 };
  std::atomic<uint32_t> state{kLive};
  std::unique_ptr<chorus::Communicator> impl;
  // CHORUS_HEARTBEAT_MS: calls impl from its thread, so it is stopped first
  // (declared after impl, destroyed before it; reset explicitly before it).
  std::unique_ptr<chorus::Heartbeat> heartbeat;
  // Listener and peer addresses for chorusCommShrink; released with impl,
  // except that communicators made from this one keep it (and its listener
  // answering late ranks) once a shrink of it was agreed in this process.
  std::shared_ptr<chorus::RecoveryEndpoint> recovery;
  std::mutex error_mutex;
  char last_error[1024] = "";
};

struct chorusStream {
  chorusStream() = default;
  // A stream ordered with a device stream (chorusStreamFromCuda).
  explicit chorusStream(std::unique_ptr<chorus::DeviceStreamLink> link) : stream(std::move(link)) {}
  chorus::HostStream stream;
};

// Shared with the markers still queued on streams, so that destroying a
// pending event is safe.
struct chorusEvent {
  std::shared_ptr<chorus::HostEvent> event = std::make_shared<chorus::HostEvent>();
};

namespace chorus {

// Stores `status`'s message as the last error of `comm` (if any) and of the
// calling thread, and returns its code: every public entry point ends here.
chorusResult_t Report(chorusComm* comm, const Status& status);

// The calling thread's last error not tied to a communicator.
const char* ThreadLastErrorText();

// Checks that `comm` is a live communicator handle.
Status CheckComm(const chorusComm* comm);

}  // namespace chorus
