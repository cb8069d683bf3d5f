// The bytes every rank's shared-memory segment holds. Each rank owns one
// segment: a header, then one inbound ring per possible sender (indexed by
// the sender's rank). Senders write into the RECEIVER's segment, so every
// rank maps the segments of all its same-host peers.
//
// A ring is a byte ring of 64-byte-aligned records, single producer (the
// sender) and single consumer (the owner). `head` and `tail` count bytes
// ever written/consumed and never wrap; they live on separate cache lines.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>

#include "transports/shm/shm_wait_policy.h"

namespace chorus {
namespace shm {

constexpr uint64_t kSegmentMagic = 0x3153484353524f43ULL;  // "CORSCHS1"
// 3: the board area after the rings; 4: 256 KiB board slots; 5: close notice;
// 6: the board slots' line area; 7: 4 KiB line areas; 8: the shared heap
constexpr uint32_t kLayoutVersion = 8;
constexpr size_t kCacheLine = 64;
constexpr size_t kMacBytes = 16;

// Messages at least this large are pulled by the receiver straight from the
// sender's buffer (memcpy between threads, the sender's shared heap mapped
// here, or CMA) when it can: one copy instead of two.
constexpr size_t kSingleCopyThreshold = 64 << 10;
// Eager messages travel in records of at most this payload, so the receiver
// starts copying before the sender has written the whole message.
constexpr size_t kMaxRecordPayload = 64 << 10;
// Ring per sender: 1 MiB (a whole 512 KiB executor chunk and the next one
// fit, so sender and receiver rarely wait on each other) while the segment
// stays small, shrinking to 256 KiB for many ranks (at most 16 MiB of rings).
constexpr size_t kMaxRingBytes = 1 << 20;
constexpr size_t kMinRingBytes = 256 << 10;
constexpr size_t kRingBudgetBytes = 16 << 20;
inline size_t AutoRingBytes(int nranks) {
  const size_t share = kRingBudgetBytes / static_cast<size_t>(nranks < 1 ? 1 : nranks) / 64 * 64;
  return share > kMaxRingBytes ? kMaxRingBytes : share < kMinRingBytes ? kMinRingBytes : share;
}
// A sender past this many bytes into the ring starts its next record at
// offset 0 when the receiver has read far enough into the ring for it to
// fit there, so that a stream of small messages walks the first pages of
// the ring over and over instead of all of it: those pages stay mapped in
// both processes, in the TLB and in the cache (touching a ring page for the
// first time costs tens of us on a VM, and a 1 MiB ring has 256 of them).
// Looked for at most once per kRewindCheckBytes, since it may read the
// receiver's cache line. 256 KiB (64 pages) rather than less: a shorter walk
// rewrites lines the receiver has only just read, still in its core's
// private caches, and each such store waits for the line to be taken back
// (2 processes, 6 interleaved runs of sendrecv_perf: 64 KiB gave 16 KiB
// messages in 4.7-5.0 us and 24 KiB in 6.1-6.7 us, 256 KiB 4.2-4.4 and
// 5.4-5.8 us; 32 KiB allreduce 8.4 -> 7.4 us).
constexpr size_t kRewindBytes = 256 << 10;
constexpr size_t kRewindCheckBytes = 16 << 10;
// ...and not before this many records of the size at hand, so that large
// records (64 KiB on the copy-through-the-ring path) still have room to be
// written ahead of the receiver.
constexpr size_t kRewindRecords = 4;
// Pieces in which a receiver reads and combines a message pulled from
// another process (ShmTuning::combine_piece_bytes): process_vm_readv costs
// per call, so pieces are large; 256 KiB still sits in L2.
constexpr size_t kDefaultCombinePieceBytes = 256 << 10;

static_assert(std::atomic<uint32_t>::is_always_lock_free && std::atomic<uint64_t>::is_always_lock_free,
              "shared-memory atomics must be address-free");

struct alignas(kCacheLine) SegmentHeader {
  // Written once by the owner before the segment is published.
  uint64_t magic;
  uint32_t version;
  uint32_t nranks;
  int32_t owner_rank;
  int32_t owner_pid;
  uint64_t ring_bytes;
  uint64_t segment_bytes;
  uint64_t owner_view_address;   // where the owner mapped this segment: the CMA probe reads it
  uint8_t nonce[kMacBytes];      // random, per segment
  uint8_t owner_mac[kMacBytes];  // MAC(secret, "shm-owner", nonce, owner_rank)
  CpuMask owner_cpus;            // the owner's CPU affinity: peers decide whether ranks outnumber CPUs
  // The owner's shared heap (base/shared_heap.h; heap_bytes 0: none): its
  // memfd, where the owner mapped it, and the id in its first page.
  int32_t heap_fd;
  uint64_t heap_base;
  uint64_t heap_bytes;
  uint8_t heap_id[kMacBytes];

  // The owner sleeps on futex_word; whoever gives it work bumps the word and
  // wakes it, but only when `sleeping` says a wake-up is needed.
  alignas(kCacheLine) std::atomic<uint32_t> futex_word;
  alignas(kCacheLine) std::atomic<uint32_t> sleeping;
  std::atomic<uint32_t> closed;    // set by the owner's Shutdown
  std::atomic<uint32_t> attached;  // peers that finished mapping this segment
  // A peer's close notice for the owner (EncodeCloseNotice; 0: none), the
  // first one written: peers write it before they close, so an idle owner
  // finds it at its next operation with one load.
  std::atomic<uint64_t> notice;
};

// Control block of the ring from one sender into the owner's segment.
struct alignas(kCacheLine) RingControl {
  alignas(kCacheLine) std::atomic<uint64_t> head;  // written by the sender
  alignas(kCacheLine) std::atomic<uint64_t> tail;  // written by the owner (receiver)
  // The owner is copying out of the sender's buffer: the sender's Shutdown
  // waits for this to clear so that its caller may free the buffer.
  std::atomic<uint32_t> pulling;
  alignas(kCacheLine) uint8_t sender_mac[kMacBytes];  // MAC(secret, "shm-sender", nonce, sender rank)
  // Owner: what of the sender's memory it can read (ReceiverPulls).
  std::atomic<uint32_t> receiver_can_pull;
};

// RingControl::receiver_can_pull.
enum ReceiverPulls : uint32_t {
  kPullsNothing = 0,
  kPullsAnyBuffer = 1,   // same process, or CMA
  kPullsHeapBlocks = 2,  // only blocks of the sender's shared heap
};

enum class RecordKind : uint32_t {
  kEagerFirst = 1,  // first piece of a message, payload follows
  kEagerMore = 2,   // next piece of the message being received
  kPull = 3,        // the receiver copies `message_bytes` from `source_address`
  kSkip = 4,        // padding up to the end of the ring
};

struct alignas(kCacheLine) RecordHeader {
  RecordKind kind;
  uint32_t chunk_bytes;  // payload bytes in this record (eager)
  uint64_t tag;
  uint64_t message_bytes;
  uint64_t source_address;  // kPull: the sender's buffer in the sender's address space
};
static_assert(sizeof(RecordHeader) == kCacheLine);

inline size_t RoundUpToRecord(size_t bytes) { return (bytes + kCacheLine - 1) & ~(kCacheLine - 1); }

inline size_t RingStride(size_t ring_bytes) { return sizeof(RingControl) + ring_bytes; }

// The owner's board (shm_board.h): two slots, written by the owner only,
// read in place by every local peer. `round` is published last (release).
// The payload follows in the same cache line, so a reader of up to 48
// bytes takes one line from the writer's cache, not two. 256 KiB: a slot
// holds a whole mid-size allreduce (or a quarter of a 1 MiB one), so a
// two-phase board allreduce takes two rounds, not eight (docs/design-notes.md,
// "Mid-size allreduce on one host"); 512 KiB per segment.
constexpr size_t kBoardPayloadBytes = 256 * 1024;
// Line mode (ShmBoard::PublishLines): a payload of up to kBoardLinesMaxBytes
// travels in 64-byte lines of kBoardLineDataBytes data each, every line's
// stamp (round and size) written after its data, so a reader takes each
// line as it lands instead of waiting for the round word and then fetching
// the payload's lines: one cache-line trip between the cores, not two, and
// the reader's fetches overlap the writer's copy. The lines have an area of
// their own, so a stamp is never a byte of another round's payload.
constexpr size_t kBoardLineDataBytes = 56;
// Payload bytes that share the slot's first line with the round word.
constexpr size_t kBoardInlineBytes = 48;
// The line area's capacity: what the largest line-mode payload may be (the
// board allreduce decides which sizes go by lines, board_allreduce.h).
constexpr size_t kBoardLinesMaxBytes = 4096;
constexpr size_t kBoardLines = (kBoardLinesMaxBytes + kBoardLineDataBytes - 1) / kBoardLineDataBytes;
struct alignas(kCacheLine) BoardLine {
  uint8_t data[kBoardLineDataBytes];
  std::atomic<uint64_t> stamp;  // BoardLineStamp(round, bytes) once data holds that round
};
static_assert(sizeof(BoardLine) == kCacheLine);
static_assert(kBoardLinesMaxBytes < (1 << 16), "a line stamp holds the size in 16 bits");
inline uint64_t BoardLineStamp(uint64_t round, size_t bytes) { return round << 16 | bytes; }
struct alignas(kCacheLine) BoardSlot {
  std::atomic<uint64_t> round;  // 0: never written
  uint32_t bytes;               // payload bytes of that round
  std::atomic<int32_t> cpu;     // where the owner ran when it published
  uint8_t payload[kBoardPayloadBytes];
  BoardLine lines[kBoardLines];  // line mode's payload
};
struct BoardArea {
  BoardSlot slots[2];  // round r lives in slots[r % 2]
};

inline size_t SegmentBytes(int nranks, size_t ring_bytes) {
  return sizeof(SegmentHeader) + static_cast<size_t>(nranks) * RingStride(ring_bytes) + sizeof(BoardArea);
}

inline BoardArea* BoardAreaOf(void* segment, int nranks, size_t ring_bytes) {
  return reinterpret_cast<BoardArea*>(static_cast<uint8_t*>(segment) + sizeof(SegmentHeader) +
                                      static_cast<size_t>(nranks) * RingStride(ring_bytes));
}

inline RingControl* RingControlOf(void* segment, size_t ring_bytes, int sender) {
  auto* base = static_cast<uint8_t*>(segment) + sizeof(SegmentHeader);
  return reinterpret_cast<RingControl*>(base + static_cast<size_t>(sender) * RingStride(ring_bytes));
}

inline uint8_t* RingDataOf(void* segment, size_t ring_bytes, int sender) {
  return reinterpret_cast<uint8_t*>(RingControlOf(segment, ring_bytes, sender)) + sizeof(RingControl);
}

}  // namespace shm
}  // namespace chorus
