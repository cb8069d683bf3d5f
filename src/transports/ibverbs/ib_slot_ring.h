// The credit-controlled ring of receive slots one sender owns on its peer,
// as arithmetic both ends keep. The sender writes chunk n of its stream into
// slot n % slots (RDMA write with immediate) only while it holds a credit:
// fewer than `slots` chunks written and not yet consumed. The receiver
// consumes slots in order and returns the running count of consumed chunks
// (a credit message), so the sender never overwrites a slot still unread.
// Counts are 64-bit and never wrap in practice.
#pragma once

#include <cstddef>
#include <cstdint>

namespace chorus {
namespace ib {

// Every slot starts with this header; its payload follows at kSlotHeaderBytes,
// so payloads stay 64-byte aligned (combining receivers get aligned pieces).
struct SlotHeader {
  uint64_t tag = 0;
  uint64_t message_bytes = 0;  // the whole message's
  uint64_t offset = 0;         // this chunk's position in the message
  uint32_t chunk_bytes = 0;
  uint32_t sequence = 0;  // low bits of the chunk number, checked by the receiver
  uint32_t flags = 0;     // kSlotAnnounce
  uint32_t reserved = 0;
  uint64_t number = 0;    // the message's number in this direction (ib_direct.h)
};
// A chunk without payload before a message that could go direct
// (ib_direct.h): the sender waits for the receiver's answer.
constexpr uint32_t kSlotAnnounce = 1;
constexpr size_t kSlotHeaderBytes = 64;
static_assert(sizeof(SlotHeader) <= kSlotHeaderBytes, "slot header outgrew its room");

// How a message of `bytes` is cut into chunks of at most `payload` bytes each
// (a zero-byte message is still one chunk: its header tells the receiver).
inline uint64_t ChunkCount(uint64_t bytes, uint64_t payload) {
  return bytes == 0 ? 1 : (bytes + payload - 1) / payload;
}
inline uint64_t ChunkBytes(uint64_t bytes, uint64_t payload, uint64_t chunk) {
  const uint64_t offset = chunk * payload;
  return offset >= bytes ? 0 : (bytes - offset < payload ? bytes - offset : payload);
}

class SenderCredits {
 public:
  explicit SenderCredits(uint32_t slots = 1) : slots_(slots) {}
  uint32_t slots() const { return slots_; }
  uint64_t written() const { return written_; }
  uint64_t consumed() const { return consumed_; }
  // Chunks that may be written now.
  uint64_t available() const { return slots_ - (written_ - consumed_); }
  // The slot the next chunk goes to; call only while available() > 0.
  uint32_t NextSlot() const { return static_cast<uint32_t>(written_ % slots_); }
  void Wrote() { ++written_; }
  // A credit message: the receiver's running count of consumed chunks. Stale
  // or impossible counts (more than written) are refused.
  bool Returned(uint64_t consumed) {
    if (consumed > written_) return false;
    if (consumed > consumed_) consumed_ = consumed;
    return true;
  }

 private:
  uint32_t slots_;
  uint64_t written_ = 0;
  uint64_t consumed_ = 0;
};

class ReceiverSlots {
 public:
  explicit ReceiverSlots(uint32_t slots = 1) : slots_(slots) {}
  uint64_t arrived() const { return arrived_; }
  uint64_t consumed() const { return consumed_; }
  uint64_t returned() const { return returned_; }
  // Chunks arrived and not yet consumed; at most `slots`, else the sender
  // broke the protocol (Arrived returns false).
  uint64_t ready() const { return arrived_ - consumed_; }
  bool Arrived() {
    if (arrived_ - consumed_ >= slots_) return false;
    ++arrived_;
    return true;
  }
  uint32_t NextSlot() const { return static_cast<uint32_t>(consumed_ % slots_); }
  void Consumed() { ++consumed_; }
  // Whether to send a credit message now: a quarter of the ring is waiting
  // to be returned, or the receiver has caught up with everything arrived
  // (the sender may be stalled on these very credits).
  bool ShouldReturn() const {
    const uint64_t owed = consumed_ - returned_;
    return owed > 0 && (owed >= (slots_ + 3) / 4 || arrived_ == consumed_);
  }
  // The count to send; call when the credit message is posted.
  uint64_t Return() {
    returned_ = consumed_;
    return returned_;
  }

 private:
  uint32_t slots_;
  uint64_t arrived_ = 0;
  uint64_t consumed_ = 0;
  uint64_t returned_ = 0;
};

}  // namespace ib
}  // namespace chorus
