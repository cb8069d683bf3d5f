// How Chorus's per-peer message order maps onto UCP's 64-bit tag: every
// message is a 16-byte header (the Chorus tag and length, checked on
// receipt) then its payload, two UCP messages whose tags name the kind, the
// sending rank and the message's number in that direction. Receives match
// with a full mask, so the k-th receive from a peer meets exactly the k-th
// send to it, whatever order UCP completes them in. A third kind, the
// closing notice, is what a rank sends each peer when it shuts down.
#pragma once

#include <cstdint>

namespace chorus {
namespace ucx {

constexpr int kRankBits = 22;      // up to 4M ranks
constexpr int kSequenceBits = 40;  // wraps alike on both sides
constexpr uint64_t kHeaderBit = uint64_t{1} << 63;
constexpr uint64_t kNoticeBit = uint64_t{1} << 62;
constexpr uint64_t kFullMask = ~uint64_t{0};
constexpr int kMaxRanks = 1 << kRankBits;

inline uint64_t MessageTag(bool header, int sender, uint64_t sequence) {
  return (header ? kHeaderBit : 0) | (static_cast<uint64_t>(sender) << kSequenceBits) |
         (sequence & ((uint64_t{1} << kSequenceBits) - 1));
}

// The closing notice from `sender` (one per transport's life).
inline uint64_t NoticeTag(int sender) { return kNoticeBit | (static_cast<uint64_t>(sender) << kSequenceBits); }

// What travels ahead of every payload.
struct WireHeader {
  uint64_t tag = 0;
  uint64_t bytes = 0;
};
static_assert(sizeof(WireHeader) == 16, "the header is part of the wire format");

}  // namespace ucx
}  // namespace chorus
