// ScheduleExecutor: runs one or more schedules of this rank over a transport,
// cutting steps into chunks so that receive, reduce and send of different
// chunks overlap. The rules it implements are those of algorithms/schedule.h.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <vector>

#include "algorithms/schedule.h"
#include "base/deadline.h"
#include "base/memory_kind.h"
#include "base/status.h"
#include "core/local_engine.h"
#include "core/waiting_peers.h"
#include "core/workspace.h"
#include "transports/transport.h"

namespace chorus {

// A schedule bound to real memory for one launch.
struct BoundSchedule {
  const Schedule* schedule = nullptr;
  uint8_t* send = nullptr;
  uint8_t* recv = nullptr;
  uint8_t* scratch = nullptr;
  // Tag carried by every message of this schedule; peers must use the same
  // tag for matching messages (it catches ranks calling different ops).
  uint64_t tag = 0;
  // Where each buffer lives: local work on it goes to that kind's engine,
  // and a transport that does not take the kind gets it staged.
  MemoryKind send_kind = MemoryKind::kHost;
  MemoryKind recv_kind = MemoryKind::kHost;
  MemoryKind scratch_kind = MemoryKind::kHost;
};

// Registrations covering a bound schedule's buffers (RegistrationCache),
// passed in every request on them (TransferRequest::memory). Receive-reduce
// staging slots carry none.
struct BoundMemory {
  MemoryHandle send;
  MemoryHandle recv;
  MemoryHandle scratch;
};

struct ExecutionState;  // core/execution.h

// The executor's per-launch working memory (step states, dependency and
// chunk tables, per-peer channels and their slots), kept between launches so
// that a warm launch of a shape seen before allocates nothing: each launch
// clears it and reuses its capacity. One launch at a time may use it.
class ExecutorContext {
 public:
  ExecutorContext();
  ~ExecutorContext();
  ExecutorContext(const ExecutorContext&) = delete;
  ExecutorContext& operator=(const ExecutorContext&) = delete;

  ExecutionState& state() { return *state_; }

 private:
  std::unique_ptr<ExecutionState> state_;
};

struct ExecutorOptions {
  size_t chunk_bytes = 512 * 1024;
  // Chunks of a device call's messages to a peer whose endpoint moves the
  // call's device memory itself (CUDA IPC): each is one synchronous GPU copy
  // or reduce, whose fixed cost is microseconds, so they are larger. Decided
  // per peer from the call's kind, alike on both sides. 0: chunk_bytes.
  size_t device_chunk_bytes = 0;
  int max_inflight_per_peer = 8;  // chunks in flight per peer and direction
  // How far (in chunks) a paced receive (schedule.h rule 5) may run ahead
  // of the steps that consume it; 0 turns pacing off.
  size_t pace_chunks = 8;
  // Host staging: receive-reduce chunks that are not combined on receipt,
  // and chunks of buffers whose kind the transport does not take
  // (TransportCapabilities::memory_kinds); required.
  Workspace* staging = nullptr;
  // The engine of each memory kind (core/local_engine.h); null:
  // DefaultLocalEngines(). A bound buffer of a kind without one fails the
  // launch before anything is posted.
  const LocalEngines* engines = nullptr;
  // Let endpoints that can (Endpoint::combine_on_receive) reduce receive-
  // reduce chunks as the bytes arrive, with no staging; false: always stage.
  bool combine_on_receive = true;
  // Reusable working memory (the communicator keeps one); null: the call
  // makes a fresh one, which allocates.
  ExecutorContext* context = nullptr;
  // When the launch fails (timeout, dead peer, abort): the peers it still
  // waited on, for the flight recorder; null: not wanted.
  WaitingPeers* waiting = nullptr;
  // One per schedule, when the transport needs registered memory
  // (TransportCapabilities::needs_memory_registration); null: requests
  // carry null handles.
  const std::vector<BoundMemory>* memory = nullptr;
  // A failed run shuts the transport down (posted requests cannot be
  // cancelled): with the notice this holds (EncodeCloseNotice, read then)
  // if nonzero, so that the peers learn why; null or 0: a plain Shutdown.
  const std::atomic<uint64_t>* close_notice = nullptr;
};

// Runs `schedules` to completion as one unit. On an error, abort or timeout
// it shuts the transport down (its requests may still be posted there), so
// the transport is unusable afterwards. Messages to a peer are posted
// in the order of `schedules`, then step order, then chunk order. Returns the
// transport's error, chorusTimeout at `deadline`, or chorusRemoteError when
// `abort` becomes true.
Status ExecuteSchedules(Transport* transport, int rank, const std::vector<BoundSchedule>& schedules,
                        const ExecutorOptions& options, const std::atomic<bool>& abort, Deadline deadline);

}  // namespace chorus
