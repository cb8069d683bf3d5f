// Control messages between the two queue pairs of a connection: small
// SENDs into receive buffers posted on every QP, beside the data chunks
// (RDMA writes with immediate into the slot rings, ib_slot_ring.h).
#pragma once

#include <cstdint>

namespace chorus {
namespace ib {

enum class ControlKind : uint32_t {
  // First message on a connected QP: the ring geometry (slots,
  // slot_bytes). Also proves the path works.
  kHello = 1,
  // The receiver's running count of consumed chunks (value).
  kCredit = 2,
  // Nothing: sent to a peer silent while we wait on it, since an RC sender
  // learns of a dead peer (retries exhausted) and a receiver never does.
  kProbe = 3,
  // The sender closes; value is its CloseNotice (EncodeCloseNotice) or 0.
  kClose = 4,
  // An offer from the receiver (ib_direct.h): its message number `value`
  // (tag, bytes) may be written straight into registered memory at
  // address/rkey instead of through the slots.
  kReady = 5,
  // The receiver's message number `value` (tag, bytes) must go through the
  // slots (its buffer is not registered, or it is reduced on arrival).
  kDecline = 6,
  // The sender has its first message for the slots: the receiver makes its
  // ring for this sender (rings exist only between ranks that use them).
  kRingRequest = 7,
  // The answer: where that ring lives (address, rkey).
  kRing = 8,
};

struct ControlMessage {
  uint32_t kind = 0;
  uint32_t slots = 0;       // kHello
  uint64_t value = 0;       // kCredit, kClose, kReady
  uint64_t address = 0;     // kRing: the ring for this sender on its peer; kReady: the buffer
  uint32_t rkey = 0;        // kRing, kReady
  uint32_t slot_bytes = 0;  // kHello
  uint64_t tag = 0;         // kReady, kDecline
  uint64_t bytes = 0;       // kReady, kDecline
};
static_assert(sizeof(ControlMessage) == 48, "control messages are 48 bytes on the wire");

// The tag of a work request (its wr_id): what it is, for which peer, which
// slot or buffer (below 2^16), and the epoch of the peer's QP it was posted
// on (a QP restarted during Connect leaves completions of the old one).
// kDirect: an RDMA write straight into a receiver's offered buffer.
enum class WorkKind : uint64_t { kData = 1, kControlSend = 2, kReceive = 3, kDirect = 4 };
inline uint64_t WorkId(WorkKind kind, uint32_t peer, uint32_t index, uint32_t epoch = 0) {
  return static_cast<uint64_t>(kind) << 56 | static_cast<uint64_t>(peer & 0xffffff) << 32 |
         static_cast<uint64_t>(epoch & 0xffff) << 16 | (index & 0xffff);
}
inline WorkKind WorkKindOf(uint64_t id) { return static_cast<WorkKind>(id >> 56); }
inline uint32_t WorkPeerOf(uint64_t id) { return static_cast<uint32_t>(id >> 32) & 0xffffff; }
inline uint32_t WorkIndexOf(uint64_t id) { return static_cast<uint32_t>(id) & 0xffff; }
inline uint32_t WorkEpochOf(uint64_t id) { return static_cast<uint32_t>(id >> 16) & 0xffff; }

}  // namespace ib
}  // namespace chorus
