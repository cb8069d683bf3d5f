// How Chorus's per-peer message order maps onto UCP's 64-bit tag: every
// message is one UCP message whose tag names the sending rank, the
// message's number in that direction and a check of the Chorus tag.
// Receives match the rank and the number (the check bits are masked out),
// so the k-th receive from a peer meets exactly the k-th send to it,
// whatever order UCP completes them in; the receiver then compares the
// check bits of the tag it got, and the received length, with its own.
// A second kind, the closing notice, is what a rank sends each peer when it
// shuts down.
#pragma once

#include <cstdint>

namespace chorus {
namespace ucx {

constexpr int kRankBits = 22;      // up to 4M ranks
constexpr int kCheckBits = 13;     // of the Chorus tag: a mismatch escapes 1 time in 8192
constexpr int kSequenceBits = 28;  // wraps alike on both sides (2^28 messages in flight at most)
constexpr uint64_t kNoticeBit = uint64_t{1} << 63;
constexpr uint64_t kFullMask = ~uint64_t{0};
constexpr uint64_t kCheckMask = ((uint64_t{1} << kCheckBits) - 1) << kSequenceBits;
constexpr uint64_t kMessageMask = ~kCheckMask;  // what a receive matches on
constexpr int kMaxRanks = 1 << kRankBits;
static_assert(1 + kRankBits + kCheckBits + kSequenceBits == 64, "the fields fill the tag");

// The check bits of a Chorus tag: its 64 bits folded into kCheckBits, so
// tags that differ in any bit (or in a low one, the usual case) differ here.
inline uint64_t TagCheck(uint64_t chorus_tag) {
  uint64_t folded = chorus_tag;
  for (int shift = kCheckBits; shift < 64; shift += kCheckBits) folded ^= chorus_tag >> shift;
  return folded & ((uint64_t{1} << kCheckBits) - 1);
}

inline uint64_t MessageTag(int sender, uint64_t sequence, uint64_t chorus_tag) {
  return (static_cast<uint64_t>(sender) << (kCheckBits + kSequenceBits)) | (TagCheck(chorus_tag) << kSequenceBits) |
         (sequence & ((uint64_t{1} << kSequenceBits) - 1));
}

// The check bits carried by a received message's tag.
inline uint64_t CheckOf(uint64_t message_tag) { return (message_tag & kCheckMask) >> kSequenceBits; }

// The closing notice from `sender` (one per transport's life).
inline uint64_t NoticeTag(int sender) {
  return kNoticeBit | (static_cast<uint64_t>(sender) << (kCheckBits + kSequenceBits));
}

}  // namespace ucx
}  // namespace chorus
