#include "transports/shm/shm_channel.h"

#include <sys/uio.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "transports/shm/shm_futex.h"
#include "transports/shm/shm_tsan.h"

namespace chorus {
namespace shm {

static_assert(kMaxRecordPayload % kCombinePieceAlign == 0, "eager records must keep combiner pieces aligned");

void RequestQueue::Push(TransferRequest* request) {
  request->next = nullptr;
  if (tail_ == nullptr) {
    head_ = request;
  } else {
    tail_->next = request;
  }
  tail_ = request;
}

TransferRequest* RequestQueue::Pop() {
  TransferRequest* request = head_;
  head_ = request->next;
  if (head_ == nullptr) tail_ = nullptr;
  request->next = nullptr;
  return request;
}

ShmOutbound::ShmOutbound(RingControl* control, uint8_t* ring, size_t ring_bytes, SegmentHeader* receiver,
                         size_t pull_min_bytes, const SharedHeap* heap)
    : control_(control),
      ring_(ring),
      ring_bytes_(ring_bytes),
      receiver_(receiver),
      pull_min_bytes_(pull_min_bytes),
      heap_(heap) {}

void ShmOutbound::Push(TransferRequest* request) {
  request->done = false;
  request->progress = 0;
  request->lane = 0;  // 1 once the first eager record is written
  sends_.Push(request);
}

bool ShmOutbound::Reserve(size_t bytes) {
  if (ring_bytes_ - (head_ - cached_tail_) >= bytes) return true;
  cached_tail_ = control_->tail.load(std::memory_order_acquire);
  TsanAcquireShared(control_, &control_->tail);
  return ring_bytes_ - (head_ - cached_tail_) >= bytes;
}

void ShmOutbound::RewindEarly(size_t position, size_t record_bytes) {
  if (position < std::max(kRewindBytes, kRewindRecords * record_bytes)) return;
  if (head_ - rewind_checked_ < kRewindCheckBytes) return;
  rewind_checked_ = head_;
  // The padding to the end and the record at offset 0 after it must fit:
  // the receiver has read past the first record_bytes of this lap (it need
  // not have drained the ring).
  if (!Reserve(ring_bytes_ - position + record_bytes)) return;
  PadToEnd(position);
}

void ShmOutbound::PadToEnd(size_t position) {
  auto* skip = reinterpret_cast<RecordHeader*>(ring_ + position);
  skip->kind = RecordKind::kSkip;
  head_ += ring_bytes_ - position;
}

void ShmOutbound::Pump(bool* progressed) {
  if (!awaiting_pull_.empty()) {
    cached_tail_ = control_->tail.load(std::memory_order_acquire);
    TsanAcquireShared(control_, &control_->tail);
    while (!awaiting_pull_.empty() && cached_tail_ >= awaiting_pull_.front()->progress) {
      awaiting_pull_.Pop()->done = true;
      *progressed = true;
    }
  }
  bool published = false;
  while (!sends_.empty()) {
    TransferRequest* request = sends_.front();
    // bytes > 0: a pull record must carry a valid buffer address.
    const bool pull = request->bytes >= pull_min_bytes_ && request->bytes > 0 &&
                      (heap_ == nullptr || heap_->Shares(request->buffer, request->bytes));
    const size_t chunk = pull ? 0 : std::min(request->bytes - request->progress, kMaxRecordPayload);
    const size_t record_bytes = sizeof(RecordHeader) + RoundUpToRecord(chunk);
    RewindEarly(head_ % ring_bytes_, record_bytes);
    const size_t position = head_ % ring_bytes_;
    const size_t to_end = ring_bytes_ - position;
    if (record_bytes > to_end) {
      // Records never wrap: pad to the end of the ring.
      if (!Reserve(to_end)) break;
      PadToEnd(position);
    } else {
      if (!Reserve(record_bytes)) break;
      auto* record = reinterpret_cast<RecordHeader*>(ring_ + position);
      record->tag = request->tag;
      record->message_bytes = request->bytes;
      record->chunk_bytes = static_cast<uint32_t>(chunk);
      if (pull) {
        record->kind = RecordKind::kPull;
        record->source_address = reinterpret_cast<uintptr_t>(request->buffer);
        head_ += record_bytes;
        sends_.Pop();
        request->progress = head_;
        awaiting_pull_.Push(request);
      } else {
        record->kind = request->lane == 0 ? RecordKind::kEagerFirst : RecordKind::kEagerMore;
        record->source_address = 0;
        if (chunk > 0) std::memcpy(record + 1, static_cast<const uint8_t*>(request->buffer) + request->progress, chunk);
        request->lane = 1;
        request->progress += chunk;
        head_ += record_bytes;
        if (request->progress == request->bytes) sends_.Pop()->done = true;
      }
      *progressed = true;
    }
    // Published record by record, so the receiver starts copying early.
    TsanReleaseShared(control_, &control_->head);
    control_->head.store(head_, std::memory_order_release);
    published = true;
  }
  if (published) WakeOwnerIfSleeping(receiver_);
}

ShmInbound::ShmInbound(RingControl* control, uint8_t* ring, size_t ring_bytes, SegmentHeader* sender, PullMethod method,
                       pid_t sender_pid, std::string peer_label, ShmStats* stats, const BounceBuffer* bounce,
                       const PeerHeapView* heap)
    : control_(control),
      ring_(ring),
      ring_bytes_(ring_bytes),
      sender_(sender),
      method_(method),
      sender_pid_(sender_pid),
      peer_label_(std::move(peer_label)),
      stats_(stats),
      bounce_(bounce),
      heap_(heap) {}

void ShmInbound::Push(TransferRequest* request) {
  request->done = false;
  request->progress = 0;
  request->lane = 0;
  recvs_.Push(request);
}

Status ShmInbound::Corrupt(const std::string& what) const {
  return InternalError(peer_label_, ": corrupt shared-memory stream: ", what);
}

Status ShmInbound::CheckMatch(const RecordHeader& record, const TransferRequest& request) const {
  if (record.tag == request.tag && record.message_bytes == request.bytes) return Status::Ok();
  return InternalError(peer_label_, " sent a message with tag ", record.tag, " of ", record.message_bytes,
                       " bytes, but the posted receive expects tag ", request.tag, " of ", request.bytes,
                       " bytes (ranks called different operations?)");
}

void ShmInbound::Complete() { recvs_.Pop()->done = true; }

Status ShmInbound::Pull(uint64_t source_address, TransferRequest* request) {
  // Announce the pull, then make sure the sender is still there (Dekker
  // with ShmTransport::Shutdown): past its Shutdown its buffer may be gone.
  control_->pulling.store(1, std::memory_order_seq_cst);
  Status status;
  if (sender_->closed.load(std::memory_order_seq_cst) != 0) {
    status = RemoteError(peer_label_, " shut down its shm transport with requests pending");
  } else {
    status = Copy(source_address, request);
  }
  TsanReleaseShared(control_, &control_->pulling);
  control_->pulling.store(0, std::memory_order_release);
  return status;
}

Status ShmInbound::Copy(uint64_t source_address, TransferRequest* request) {
  if (method_ == PullMethod::kMemcpy || method_ == PullMethod::kHeap) {
    // Readable here (same process, or the sender's heap block mapped here):
    // copy or combine straight out of it, one pass.
    const uint8_t* source = nullptr;
    if (method_ == PullMethod::kMemcpy) {
      source = reinterpret_cast<const uint8_t*>(static_cast<uintptr_t>(source_address));
    } else if (heap_ != nullptr) {
      source = heap_->Translate(source_address, request->bytes);
    }
    if (source == nullptr) return Corrupt(StrCat("pull of ", request->bytes, " bytes from outside the sender's heap"));
    Deliver(request, source, request->bytes);
    ++(method_ == PullMethod::kMemcpy ? stats_->memcpy_pulls : stats_->heap_pulls);
    if (request->combine != nullptr) ++stats_->combined_messages;
    return Status::Ok();
  }
  if (request->combine != nullptr) {
    CHORUS_RETURN_IF_ERROR(CombinePieces(source_address, request));
  } else {
    CHORUS_RETURN_IF_ERROR(ReadRemote(source_address, request->buffer, request->bytes));
  }
  ++stats_->cma_pulls;
  return Status::Ok();
}

// Another process: read a cache-sized piece, combine it while it is hot.
Status ShmInbound::CombinePieces(uint64_t source_address, TransferRequest* request) {
  if (bounce_ == nullptr || bounce_->bytes == 0) return InternalError(peer_label_, ": no bounce buffer to combine in");
  size_t done = 0;
  while (done < request->bytes) {
    const size_t piece = std::min(bounce_->bytes, request->bytes - done);
    CHORUS_RETURN_IF_ERROR(ReadRemote(source_address + done, bounce_->data, piece));
    request->combine->fn(request->combine->context, done, bounce_->data, piece);
    done += piece;
  }
  ++stats_->combined_messages;
  return Status::Ok();
}

Status ShmInbound::ReadRemote(uint64_t source_address, void* destination, size_t bytes) {
  auto* local_bytes = static_cast<uint8_t*>(destination);
  size_t copied = 0;
  while (copied < bytes) {
    iovec local = {local_bytes + copied, bytes - copied};
    iovec remote = {reinterpret_cast<void*>(static_cast<uintptr_t>(source_address + copied)), bytes - copied};
    const ssize_t got = ::process_vm_readv(sender_pid_, &local, 1, &remote, 1, 0);
    if (got < 0 && errno == EINTR) continue;
    if (got < 0 && errno == ESRCH) return RemoteError(peer_label_, " died");
    if (got < 0) return ErrnoError(errno, StrCat(peer_label_, ": process_vm_readv of ", bytes, " bytes"));
    if (got == 0) return Corrupt("process_vm_readv made no progress");
    copied += static_cast<size_t>(got);
  }
  return Status::Ok();
}

// Payload bytes [progress, progress + bytes) of `request`, readable here:
// copied into its buffer, or handed to its combiner.
void ShmInbound::Deliver(TransferRequest* request, const uint8_t* payload, size_t bytes) {
  if (bytes == 0) return;
  if (request->combine != nullptr) {
    request->combine->fn(request->combine->context, request->progress, payload, bytes);
  } else {
    std::memcpy(static_cast<uint8_t*>(request->buffer) + request->progress, payload, bytes);
  }
}

Status ShmInbound::ConsumeRecord(const RecordHeader& record, size_t position, size_t available, size_t* record_bytes) {
  TransferRequest* request = recvs_.front();
  *record_bytes = sizeof(RecordHeader);
  switch (record.kind) {
    case RecordKind::kSkip:
      *record_bytes = ring_bytes_ - position;
      if (*record_bytes > available) return Corrupt("padding beyond the published bytes");
      return Status::Ok();
    case RecordKind::kPull:
      if (request->lane != 0) return Corrupt("new message inside a message");
      CHORUS_RETURN_IF_ERROR(CheckMatch(record, *request));
      if (method_ == PullMethod::kNone) return Corrupt("single-copy message although this receiver cannot pull");
      CHORUS_RETURN_IF_ERROR(Pull(record.source_address, request));
      Complete();
      return Status::Ok();
    case RecordKind::kEagerFirst:
      if (request->lane != 0) return Corrupt("new message inside a message");
      CHORUS_RETURN_IF_ERROR(CheckMatch(record, *request));
      request->lane = 1;
      break;
    case RecordKind::kEagerMore:
      if (request->lane == 0) return Corrupt("continuation without a message");
      break;
    default:
      return Corrupt(StrCat("unknown record kind ", static_cast<uint32_t>(record.kind)));
  }
  const size_t chunk = record.chunk_bytes;
  *record_bytes = sizeof(RecordHeader) + RoundUpToRecord(chunk);
  if (chunk > kMaxRecordPayload || chunk > request->bytes - request->progress || *record_bytes > available ||
      position + *record_bytes > ring_bytes_) {
    return Corrupt(StrCat("record of ", chunk, " bytes does not fit"));
  }
  // Senders fill records but the last, so combiner pieces stay aligned.
  if (request->combine != nullptr && chunk % kCombinePieceAlign != 0 && request->progress + chunk != request->bytes) {
    return Corrupt(StrCat("unaligned record of ", chunk, " bytes inside a message"));
  }
  Deliver(request, ring_ + position + sizeof(RecordHeader), chunk);
  request->progress += chunk;
  if (request->progress == request->bytes) {
    ++stats_->eager_messages;
    if (request->combine != nullptr) ++stats_->combined_messages;
    Complete();
  }
  return Status::Ok();
}

Status ShmInbound::Pump(bool* progressed) {
  bool consumed = false;
  Status status;
  while (!recvs_.empty()) {
    if (tail_ == cached_head_) {
      cached_head_ = control_->head.load(std::memory_order_acquire);
      if (tail_ == cached_head_) break;
      TsanAcquireShared(control_, &control_->head);
    }
    const uint64_t available = cached_head_ - tail_;
    if (available > ring_bytes_ || available % kCacheLine != 0) {
      status = Corrupt(StrCat("head ", cached_head_, " is not a valid position after tail ", tail_));
      break;
    }
    const size_t position = tail_ % ring_bytes_;
    // A private copy: the sender must not change what we validated.
    RecordHeader record;
    std::memcpy(&record, ring_ + position, sizeof(record));
    size_t record_bytes = 0;
    status = ConsumeRecord(record, position, available, &record_bytes);
    if (!status.ok()) break;
    tail_ += record_bytes;
    TsanReleaseShared(control_, &control_->tail);
    control_->tail.store(tail_, std::memory_order_release);
    consumed = true;
    *progressed = true;
  }
  if (consumed) WakeOwnerIfSleeping(sender_);
  return status;
}

}  // namespace shm
}  // namespace chorus
