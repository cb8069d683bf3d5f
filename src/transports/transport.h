// The transport interface: how bytes move between two ranks. Transports know
// nothing of collectives; the executor drives them through this interface
// and chooses on capabilities, never on names.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "base/deadline.h"
#include "base/memory_kind.h"
#include "base/status.h"
#include "topology/host_topology.h"

namespace chorus {

struct TransportCapabilities {
  bool same_host_only = false;   // peers must share a host (shm, cuda_ipc)
  // The kinds of memory PostSend/PostRecv may be given (base/memory_kind.h).
  // The executor stages the others through host chunks; a transport that
  // reads device memory itself (CUDA IPC) adds kCudaDevice.
  MemoryKindMask memory_kinds = kCpuAccessibleKinds;
  bool one_sided_write = false;  // RDMA-style writes into registered memory
  int max_inflight = 0;          // per endpoint, 0 = unbounded
  // Some endpoints combine on receipt (TransferRequest::combine); ask the
  // endpoint, since one transport facade may mix kinds.
  bool combine_on_receive = false;
  // The ranks this transport connects on this host outnumber the CPUs they
  // may run on (decided at Connect, alike on every rank): a thread waiting
  // for them should not spin, since the rank it waits for needs the core.
  bool shares_cores = false;
  // Transfers need memory registered with RegisterMemory first (verbs, UCX):
  // the caller then passes the handle in TransferRequest::memory. TCP and
  // shared memory move bytes from any address and leave it false.
  bool needs_memory_registration = false;
  // Moves bytes straight from and into memory registered with
  // RegisterMemory (no staging copy) when a request carries its handle,
  // though it needs none (verbs): buffers the user registers with the
  // communicator (chorusCommRegister) are registered with it.
  bool takes_registered_memory = false;
};

namespace shm {
class ShmBoard;  // transports/shm/shm_board.h
}  // namespace shm

class Transport;
struct MemoryHandleSet;

// A registration made by Transport::RegisterMemory; opaque to the caller.
// The null handle is what transports that need no registration hand out,
// and what a request carries when its buffer was not registered.
struct MemoryHandle {
  uint64_t id = 0;
  void* data = nullptr;  // transport-private (e.g. an ibv_mr*)
  // Set when one registration spans several transports (TransportMux): a
  // transport finds its own handle with For(this).
  const MemoryHandleSet* set = nullptr;
  bool null() const { return id == 0 && data == nullptr && set == nullptr; }
  // The handle `transport` made: this one, or its entry in `set`.
  MemoryHandle For(const Transport* transport) const;
};

struct MemoryHandleSet {
  std::vector<std::pair<const Transport*, MemoryHandle>> handles;
};

inline MemoryHandle MemoryHandle::For(const Transport* transport) const {
  if (set == nullptr) return *this;
  for (const auto& entry : set->handles) {
    if (entry.first == transport) return entry.second;
  }
  return MemoryHandle();
}

// Combine on receipt: a receive that hands the incoming bytes to a function
// instead of copying them into TransferRequest::buffer, so that the caller can
// fold them into its data (e.g. reduce) while they are hot, or without them
// ever landing in memory. The transport only calls the function.
struct ReceiveCombiner {
  // Called in order with consecutive pieces of the message: `offset` is the
  // piece's position in the message, `incoming` is readable only during the
  // call. Every piece but the last is a multiple of kCombinePieceAlign bytes,
  // so a piece never splits an element. A zero-byte message makes no call.
  void (*fn)(void* context, size_t offset, const void* incoming, size_t bytes) = nullptr;
  void* context = nullptr;
  // The kinds of memory `fn` may be handed as `incoming`: a transport that
  // holds the payload in another kind (a peer's device buffer, for CUDA IPC)
  // copies it into host memory first.
  MemoryKindMask readable = kCpuAccessibleKinds;
};
constexpr size_t kCombinePieceAlign = 64;

// One message transfer. Owned by the caller, who must keep it (and the
// buffer) alive until `done` is set by Transport::Progress. The transport
// links requests into its queues through the private fields, so posting
// allocates nothing.
struct TransferRequest {
  // Set by the caller.
  void* buffer = nullptr;
  size_t bytes = 0;
  uint64_t tag = 0;  // checked: sender's and receiver's tags must match
  // Receives only, and only on endpoints whose combine_on_receive() is true
  // (others would copy into `buffer`): when set, the transport passes the
  // payload to it and never writes `buffer`. Must outlive the request.
  const ReceiveCombiner* combine = nullptr;
  // The registration covering `buffer` (RegisterMemory; a transport reads
  // memory.For(this)), null where no transport needs one
  // (capabilities().needs_memory_registration false).
  MemoryHandle memory;
  // Where `buffer` lives; a transport touches it only if its endpoint takes
  // the kind (Endpoint::memory_kinds), else the caller staged it.
  MemoryKind kind = MemoryKind::kHost;
  // The kind of the user's buffers of the call this transfer belongs to (not
  // always `kind`: scratch and staging are host memory). It is the same on
  // every rank of a correct program, so a transport may choose its wire
  // protocol by it (CUDA IPC: device calls pull from peers' buffers, the
  // others pass through); ranks that disagree get a matching error.
  MemoryKind call_kind = MemoryKind::kHost;

  // Set by the transport.
  bool done = false;

  // Transport-private.
  TransferRequest* next = nullptr;
  size_t progress = 0;
  uint32_t lane = 0;
};

// Why a rank closes its connections, told to its peers so that they can
// tell a deliberate close from a crash (chorusCommRevoke). Transports carry
// it and pass it on; only the layer above gives `reason` a meaning.
struct CloseNotice {
  int32_t origin = -1;  // the rank that first closed with it
  uint32_t reason = 0;  // nonzero
};

// A notice as one 64-bit word (a transport that keeps it in shared memory).
inline uint64_t EncodeCloseNotice(const CloseNotice& notice) {
  return (static_cast<uint64_t>(static_cast<uint32_t>(notice.origin) + 1) << 32) | notice.reason;
}
inline bool DecodeCloseNotice(uint64_t word, CloseNotice* notice) {
  if (word == 0) return false;
  notice->origin = static_cast<int32_t>((word >> 32) - 1);
  notice->reason = static_cast<uint32_t>(word);
  return true;
}

// A connection to one peer. Messages in each direction match in posting
// order: the k-th PostSend on A to B meets the k-th PostRecv on B from A.
// The receiver's `bytes` and `tag` must equal the sender's, otherwise
// Progress fails with an error naming the peer (it means the ranks called
// different collectives or the stream is corrupt).
class Endpoint {
 public:
  virtual ~Endpoint() = default;
  virtual int peer() const = 0;
  virtual Status PostSend(TransferRequest* request) = 0;
  virtual Status PostRecv(TransferRequest* request) = 0;
  // Whether PostRecv honours TransferRequest::combine on this endpoint.
  virtual bool combine_on_receive() const { return false; }
  // The kinds of memory PostSend/PostRecv may be given on this endpoint
  // (one transport facade may mix endpoints that take different kinds);
  // the executor stages the others through host chunks.
  virtual MemoryKindMask memory_kinds() const { return kCpuAccessibleKinds; }
};

// What carries an overlay transport's messages to one peer
// (TransportDescriptor::overlay): the endpoint of the transport chosen for
// the peer, and that transport, which the overlay may progress while it
// connects. Both outlive the overlay.
struct Carrier {
  Transport* transport = nullptr;
  Endpoint* endpoint = nullptr;
};

// What every transport is given; a transport's own settings (CHORUS_NSOCKS,
// CHORUS_SHM_RING_BYTES, ...) are its own options, read by its descriptor
// (transports/transport_registry.h).
struct TransportOptions {
  int rank = 0;
  int nranks = 1;
  uint8_t secret[16] = {};   // every connection proves it knows this
  std::string ifname;        // CHORUS_SOCKET_IFNAME syntax ("", "eth0", "^lo", "=eth0")
  int timeout_ms = 300000;   // connection set-up deadline
  // The rank's host topology (topology/host_topology.h) and its rank among
  // those on its host, for a transport that places itself by them (TCP with
  // an empty ifname and several candidate NICs picks the nearest to the
  // rank's binding, topology/nic_choice.h, ties spread by local rank).
  const HostTopology* topology = nullptr;  // nullptr: no placement (first-match rule)
  int local_rank = 0;
};

class Transport {
 public:
  virtual ~Transport() = default;

  virtual const char* name() const = 0;
  virtual TransportCapabilities capabilities() const = 0;
  // Optional: a board of one slot per rank (transports/shm/shm_board.h) in
  // which every rank this transport connects publishes round by round, when
  // they all are; null when the transport offers none. Core builds the
  // board allreduce on it; the transport knows no collective.
  virtual shm::ShmBoard* SharedBoard() const { return nullptr; }

  // Opaque address of this rank, exchanged through the bootstrap.
  virtual std::string LocalAddress() const = 0;

  // Connects to every peer; addresses[i] is rank i's LocalAddress(), or
  // empty for a peer this transport does not reach (its descriptor said so
  // alike on both sides). Collective over all ranks; bounded by `deadline`.
  virtual Status Connect(const std::vector<std::string>& addresses, Deadline deadline) = 0;

  // Endpoint to `peer` (!= own rank), valid after Connect.
  virtual Endpoint* endpoint(int peer) = 0;

  // Overlay transports only (TransportDescriptor::overlay), called once
  // before Connect: per peer, what carries its messages (null members for a
  // peer not overlaid). The overlay adds a way of moving some memory (CUDA
  // IPC: device buffers) and passes the rest to the carrier.
  virtual Status SetCarriers(const std::vector<Carrier>& carriers) {
    (void)carriers;
    return InternalError(name(), " is not an overlay transport");
  }
  // Work in flight whose completion no carrier will signal (an overlay
  // waiting for a peer's acknowledgement written in shared memory): a
  // caller should then poll rather than block in a carrier's Progress.
  virtual bool InFlight() const { return false; }

  // Moves bytes of posted requests, marking finished ones done. Blocks at
  // most `timeout_ms` when nothing can progress (0 = poll). An error here
  // (peer closed, reset, bad header) names the peer and leaves the
  // transport unusable.
  virtual Status Progress(int timeout_ms) = 0;

  // Makes a Progress() blocked in another thread return promptly (and a
  // wait armed with ArmWait, through its fd).
  virtual void Wakeup() = 0;

  // Waiting on several transports at once (core/transport_mux.h), as UCX's
  // ucp_worker_arm and its event fd: ArmWait takes a last look for work and,
  // when there is none, arranges that `fd` becomes readable (poll(2),
  // POLLIN) as soon as there is, or Wakeup is called; the caller then
  // sleeps in poll on the fds of all its transports, at most
  // `max_sleep_ms` (-1: no limit of this transport's), calls DisarmWait on
  // every transport it armed, and drives each with Progress(0). `ready`:
  // the last look found work (or a Wakeup), so do not sleep. fd -1: this
  // transport cannot be waited on that way (the default); the caller waits
  // in its Progress instead. With `look_only` the transport takes the same
  // last look and reports it but arranges no wake-up (peers are not told to
  // signal the fd), and no DisarmWait follows: the caller polls with it
  // before it sleeps. Called from the thread that drives Progress.
  struct WaitArm {
    int fd = -1;
    bool ready = false;
    int max_sleep_ms = -1;
  };
  virtual Status ArmWait(bool look_only, WaitArm* arm) {
    (void)look_only;
    *arm = WaitArm();
    return Status::Ok();
  }
  virtual void DisarmWait() {}

  // Closes every connection at once so that peers see the failure quickly
  // (used on abort and after an error). After it returns the transport never
  // touches posted requests or their buffers again. Idempotent.
  virtual void Shutdown() = 0;

  // Shutdown, after telling every connected peer `notice`, best effort and
  // without blocking: a dead peer, or one whose every connection is in the
  // middle of a message, learns only of the close (and after an earlier
  // Shutdown, only a transport whose peers stay reachable, such as shared
  // memory, tells them anything). A transport that fails
  // because a peer closed with a notice passes it on to its own peers the
  // same way, so a notice spreads through the job as failures do. Call it
  // from the thread that drives Progress, or while none does. The default
  // sends nothing: its peers see a plain close.
  virtual void ShutdownWithNotice(const CloseNotice& notice) {
    (void)notice;
    Shutdown();
  }
  // The first notice a peer closed with, once it has arrived (seen by a
  // Progress, or kept where the peer could write it). Cheap: no system
  // call, so callers may ask before every operation.
  virtual bool ReceivedNotice(CloseNotice* notice) const {
    (void)notice;
    return false;
  }

  // Registers [ptr, ptr + bytes) for transfers (pinning, keys); requests
  // whose buffer lies in it carry the handle. Transports that move bytes
  // from any address (capabilities().needs_memory_registration false) hand
  // out the null handle. Callers normally go through a RegistrationCache
  // (core/registration_cache.h), since registering is expensive.
  virtual Status RegisterMemory(void* ptr, size_t bytes, MemoryKind kind, MemoryHandle* handle) {
    (void)ptr;
    (void)bytes;
    (void)kind;
    *handle = MemoryHandle();
    return Status::Ok();
  }
  // Releases a handle RegisterMemory returned (no request may use it any
  // more). The null handle is ignored.
  virtual void DeregisterMemory(MemoryHandle handle) { (void)handle; }
};

}  // namespace chorus
