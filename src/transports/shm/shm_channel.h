// The two ends of one shared-memory ring: ShmOutbound writes our sends to a
// peer into the ring in the PEER's segment; ShmInbound reads the peer's
// messages from the ring in OUR segment into posted receives. Each keeps a
// FIFO of posted requests (linked through TransferRequest::next), so
// messages match in posting order, and neither makes a syscall on the
// eager path.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <string>

#include "base/shared_heap.h"
#include "base/status.h"
#include "transports/shm/shm_peer_heap.h"
#include "transports/shm/shm_layout.h"
#include "transports/transport.h"

namespace chorus {
namespace shm {

// How a receiver copies a large message out of its sender's buffer.
enum class PullMethod {
  kNone,    // it cannot: the sender copies through the ring
  kMemcpy,  // same process (ranks are threads)
  kCma,     // process_vm_readv
  kHeap,    // the sender's shared heap, mapped here: only messages from its blocks
};

// Counts of received messages by path (tests check which path ran).
struct ShmStats {
  uint64_t eager_messages = 0;
  uint64_t memcpy_pulls = 0;
  uint64_t cma_pulls = 0;
  uint64_t heap_pulls = 0;
  uint64_t combined_messages = 0;  // of the above, received by a combining request
};

// Where a receiver lands the pieces of a message it pulls from another
// process and combines: small enough to stay in L1/L2 between the read and
// the combine. One per transport (one thread pumps at a time).
struct BounceBuffer {
  uint8_t* data = nullptr;
  size_t bytes = 0;  // a multiple of kCombinePieceAlign
};

// A FIFO of requests linked through TransferRequest::next.
class RequestQueue {
 public:
  void Push(TransferRequest* request);
  TransferRequest* Pop();
  TransferRequest* front() const { return head_; }
  bool empty() const { return head_ == nullptr; }

 private:
  TransferRequest* head_ = nullptr;
  TransferRequest* tail_ = nullptr;
};

class ShmOutbound {
 public:
  // `ring` lives in the segment of the receiver, whose header is `receiver`.
  // The receiver copies messages of `pull_min_bytes` or more straight from
  // our buffers (SIZE_MAX: never); only from blocks of `heap` when that is
  // not null (it mapped our shared heap, and nothing else of ours).
  ShmOutbound(RingControl* control, uint8_t* ring, size_t ring_bytes, SegmentHeader* receiver, size_t pull_min_bytes,
              const SharedHeap* heap);

  void Push(TransferRequest* request);
  bool idle() const { return sends_.empty() && awaiting_pull_.empty(); }

  // Writes every record that fits, publishes them, and completes pulled
  // sends the receiver has consumed.
  void Pump(bool* progressed);

 private:
  bool Reserve(size_t bytes);
  // Where the next record (of `record_bytes`) would start past kRewindBytes
  // and the ring has room for it at offset 0 after padding to the end, pads.
  void RewindEarly(size_t position, size_t record_bytes);
  // Writes a skip record at `position` and moves head_ to the ring's end
  // (the caller has reserved the bytes).
  void PadToEnd(size_t position);

  RingControl* control_;
  uint8_t* ring_;
  size_t ring_bytes_;
  SegmentHeader* receiver_;
  size_t pull_min_bytes_;
  const SharedHeap* heap_;
  uint64_t head_ = 0;
  uint64_t cached_tail_ = 0;
  uint64_t rewind_checked_ = 0;  // head_ when an early rewind was last looked for
  RequestQueue sends_;          // not yet (fully) written
  RequestQueue awaiting_pull_;  // kPull written; `progress` = ring position the receiver must pass
};

class ShmInbound {
 public:
  // `ring` lives in our segment; `sender` is the header of the sender's
  // segment (woken when ring space frees up). `bounce` is needed when
  // `method` is kCma, `heap` (the sender's heap) when it is kHeap.
  ShmInbound(RingControl* control, uint8_t* ring, size_t ring_bytes, SegmentHeader* sender, PullMethod method,
             pid_t sender_pid, std::string peer_label, ShmStats* stats, const BounceBuffer* bounce,
             const PeerHeapView* heap);

  void Push(TransferRequest* request);
  bool idle() const { return recvs_.empty(); }

  // Consumes every record it can into posted receives. Fails on a record
  // that does not match the posted receive or is malformed.
  Status Pump(bool* progressed);

 private:
  Status ConsumeRecord(const RecordHeader& record, size_t position, size_t available, size_t* record_bytes);
  Status CheckMatch(const RecordHeader& record, const TransferRequest& request) const;
  Status Pull(uint64_t source_address, TransferRequest* request);
  Status Copy(uint64_t source_address, TransferRequest* request);
  Status CombinePieces(uint64_t source_address, TransferRequest* request);
  Status ReadRemote(uint64_t source_address, void* destination, size_t bytes);
  void Deliver(TransferRequest* request, const uint8_t* payload, size_t bytes);
  Status Corrupt(const std::string& what) const;
  void Complete();

  RingControl* control_;
  uint8_t* ring_;
  size_t ring_bytes_;
  SegmentHeader* sender_;
  PullMethod method_;
  pid_t sender_pid_;
  std::string peer_label_;
  ShmStats* stats_;
  const BounceBuffer* bounce_;
  const PeerHeapView* heap_;
  uint64_t tail_ = 0;
  uint64_t cached_head_ = 0;
  RequestQueue recvs_;  // front's `lane` is 1 once its first record arrived
};

}  // namespace shm
}  // namespace chorus
