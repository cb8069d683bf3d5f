// ThreadSanitizer and rings seen through two mappings.
//
// Ranks that are threads of one process each map a peer's segment at their
// own address. The sender publishes a ring's head through its mapping and
// the receiver acquires it through another, so TSan, which pairs release
// and acquire by address, sees no order between them. It then reports the
// receiver's same-process pull (a copy straight out of the sender's buffer,
// PullMethod::kMemcpy) as a race with the sender's writes to that buffer,
// and the sender's next writes as a race with the copy, although the ring's
// head and tail order them (release/acquire on the same physical word).
//
// These annotations tell TSan about that order, and nothing else: each
// side names the word by what every mapping shares, the ring's sender MAC
// (set up before any record flows, distinct per segment and sender) and
// the word's offset in the ring's control block. Without TSan they compile
// to nothing.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "transports/shm/shm_layout.h"

#if defined(__SANITIZE_THREAD__)
#define CHORUS_SHM_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define CHORUS_SHM_TSAN 1
#endif
#endif

#ifdef CHORUS_SHM_TSAN
extern "C" void __tsan_acquire(void* addr);
extern "C" void __tsan_release(void* addr);
#endif

namespace chorus {
namespace shm {

#ifdef CHORUS_SHM_TSAN
// The address TSan synchronises on for `word` of `ring`: the same in every
// mapping. Only its address matters (TSan keeps its own state beside it);
// two words sharing a cell only add order, never hide one.
inline void* TsanSyncAddress(const RingControl* ring, const void* word) {
  alignas(8) static uint64_t cells[8192];
  uint64_t key = 0;
  std::memcpy(&key, ring->sender_mac, sizeof(key));
  key += static_cast<uint64_t>(static_cast<const uint8_t*>(word) - reinterpret_cast<const uint8_t*>(ring));
  key *= 0x9E3779B97F4A7C15ull;
  return &cells[key >> (64 - 13)];
}
// Just before storing `word` with release (after would leave a window in
// which the peer sees the value but not yet the order): what this thread did
// so far is ordered before whoever then acquires the word through any mapping.
inline void TsanReleaseShared(const RingControl* ring, const void* word) { __tsan_release(TsanSyncAddress(ring, word)); }
// After loading `word` with acquire (and seeing the value that matters).
inline void TsanAcquireShared(const RingControl* ring, const void* word) { __tsan_acquire(TsanSyncAddress(ring, word)); }
// The same for a board slot (shm_board.h), named by its owner's segment
// nonce and the slot: a rank that reads a peer's buffer of this process in
// place after the peer's round (BoardAllReduce's read in place) is ordered
// after the peer's writes to it, and the peer's next writes after the
// reader's next round.
inline void* TsanBoardAddress(const SegmentHeader* owner, uint64_t round) {
  alignas(8) static uint64_t cells[1024];
  uint64_t key = 0;
  std::memcpy(&key, owner->nonce, sizeof(key));
  key = (key + (round & 1)) * 0x9E3779B97F4A7C15ull;
  return &cells[key >> (64 - 10)];
}
inline void TsanBoardRelease(const SegmentHeader* owner, uint64_t round) {
  __tsan_release(TsanBoardAddress(owner, round));
}
inline void TsanBoardAcquire(const SegmentHeader* owner, uint64_t round) {
  __tsan_acquire(TsanBoardAddress(owner, round));
}
#else
inline void TsanReleaseShared(const RingControl*, const void*) {}
inline void TsanAcquireShared(const RingControl*, const void*) {}
inline void TsanBoardRelease(const SegmentHeader*, uint64_t) {}
inline void TsanBoardAcquire(const SegmentHeader*, uint64_t) {}
#endif

}  // namespace shm
}  // namespace chorus
