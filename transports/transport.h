// The transport interface: how bytes move between two ranks. Transports know
// nothing of collectives; the executor drives them through this interface
// and chooses on capabilities, never on names.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "base/deadline.h"
#include "base/status.h"

namespace chorus {

struct TransportCapabilities {
  bool same_host_only = false;   // peers must share a host (shm, cuda_ipc)
  bool gpu_memory = false;       // accepts device pointers
  bool one_sided_write = false;  // RDMA-style writes into registered memory
  int max_inflight = 0;          // per endpoint, 0 = unbounded
  // Some endpoints combine on receipt (TransferRequest::combine); ask the
  // endpoint, since one transport facade may mix kinds.
  bool combine_on_receive = false;
  // The ranks this transport connects on this host outnumber the CPUs they
  // may run on (decided at Connect, alike on every rank): a thread waiting
  // for them should not spin, since the rank it waits for needs the core.
  bool shares_cores = false;
};

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

  // Set by the transport.
  bool done = false;

  // Transport-private.
  TransferRequest* next = nullptr;
  size_t progress = 0;
  uint32_t lane = 0;
};

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
};

struct TransportOptions {
  int rank = 0;
  int nranks = 1;
  uint8_t secret[16] = {};   // every connection proves it knows this
  int nsocks = 2;            // TCP: sockets (lanes) per peer
  std::string ifname;        // CHORUS_SOCKET_IFNAME syntax ("", "eth0", "^lo", "=eth0")
  int timeout_ms = 300000;   // connection set-up deadline
  size_t shm_ring_bytes = 0;  // shm: ring per sender (CHORUS_SHM_RING_BYTES); 0 = automatic
  int socket_rcvbuf = 0;     // TCP: SO_RCVBUF of every lane (CHORUS_SOCKET_RCVBUF); 0 = kernel autotuning
  int socket_sndbuf = 0;     // TCP: SO_SNDBUF of every lane (CHORUS_SOCKET_SNDBUF); 0 = kernel autotuning
};

class Transport {
 public:
  virtual ~Transport() = default;

  virtual const char* name() const = 0;
  virtual TransportCapabilities capabilities() const = 0;

  // Opaque address of this rank, exchanged through the bootstrap.
  virtual std::string LocalAddress() const = 0;

  // Connects to every peer; addresses[i] is rank i's LocalAddress().
  // Collective over all ranks; bounded by `deadline`.
  virtual Status Connect(const std::vector<std::string>& addresses, Deadline deadline) = 0;

  // Endpoint to `peer` (!= own rank), valid after Connect.
  virtual Endpoint* endpoint(int peer) = 0;

  // Moves bytes of posted requests, marking finished ones done. Blocks at
  // most `timeout_ms` when nothing can progress (0 = poll). An error here
  // (peer closed, reset, bad header) names the peer and leaves the
  // transport unusable.
  virtual Status Progress(int timeout_ms) = 0;

  // Makes a Progress() blocked in another thread return promptly.
  virtual void Wakeup() = 0;

  // Closes every connection at once so that peers see the failure quickly
  // (used on abort and after an error). After it returns the transport never
  // touches posted requests or their buffers again. Idempotent.
  virtual void Shutdown() = 0;
};

}  // namespace chorus
