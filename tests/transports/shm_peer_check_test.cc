// The pure checks of what a same-host peer announces (shm_peer_check.h):
// its address string, its ring size and its segment header.
#include "transports/shm/shm_peer_check.h"

#include <cstring>
#include <memory>

#include <gtest/gtest.h>

#include "transports/shm/shm_segment.h"

namespace chorus {
namespace shm {
namespace {

TEST(ShmPeerCheckTest, ParsesAWellFormedAddress) {
  PeerAddress parsed;
  ASSERT_TRUE(ParsePeerAddress("shm1 1234 1048576 /chorus-shm-0a-2-1234-ff host:boot id:ns", &parsed));
  EXPECT_EQ(parsed.pid, 1234);
  EXPECT_EQ(parsed.ring_bytes, 1048576u);
  EXPECT_EQ(parsed.name, "/chorus-shm-0a-2-1234-ff");
  EXPECT_EQ(parsed.host, "host:boot id:ns");
}

TEST(ShmPeerCheckTest, RejectsMalformedAddresses) {
  PeerAddress parsed;
  EXPECT_FALSE(ParsePeerAddress("shm2 1234 1048576 /chorus-shm-a host", &parsed));
  EXPECT_FALSE(ParsePeerAddress("shm1 0 1048576 /chorus-shm-a host", &parsed));
  EXPECT_FALSE(ParsePeerAddress("shm1 1234 1048576 /other host", &parsed));
  EXPECT_FALSE(ParsePeerAddress("shm1 1234 1048576 /chorus-shm-a", &parsed));
  EXPECT_FALSE(ParsePeerAddress("shm1 1234 -1", &parsed));
}

TEST(ShmPeerCheckTest, RingSizeMustBeAlignedHoldTwoRecordsAndStayWithinOneGiB) {
  EXPECT_TRUE(RingBytesValid(2 * kMaxRecordPayload));
  EXPECT_TRUE(RingBytesValid(1 << 20));
  EXPECT_TRUE(RingBytesValid(kMaxAnnouncedRingBytes));
  EXPECT_FALSE(RingBytesValid(2 * kMaxRecordPayload - kCacheLine));
  EXPECT_FALSE(RingBytesValid((1 << 20) + 1));
  EXPECT_FALSE(RingBytesValid(kMaxAnnouncedRingBytes + kCacheLine));
}

// Regression: a peer announcing a ring of 2^64 / 3 (rounded to 64 bytes)
// passed the old check (aligned, at least two records), and
// SegmentBytes(3, ring) wrapped around to a few hundred KiB: the segment
// mapped with that size was far smaller than the ring offsets used to
// address it (a write of our MAC into it went out of bounds).
TEST(ShmPeerCheckTest, RejectsARingWhoseSegmentSizeWouldOverflow) {
  PeerAddress parsed;
  ASSERT_TRUE(ParsePeerAddress("shm1 1234 6148914691236517184 /chorus-shm-a host", &parsed));
  ASSERT_EQ(parsed.ring_bytes % kCacheLine, 0u);
  EXPECT_LT(SegmentBytes(3, parsed.ring_bytes), parsed.ring_bytes);  // what the old check let through
  EXPECT_FALSE(RingBytesValid(parsed.ring_bytes));
}

TEST(ShmPeerCheckTest, SegmentHeaderNeedsLayoutIdentityAndOwnerMac) {
  const uint8_t secret[16] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16};
  PeerAddress address;
  address.pid = 77;
  address.ring_bytes = 1 << 20;
  auto header = std::make_unique<SegmentHeader>();
  header->magic = kSegmentMagic;
  header->version = kLayoutVersion;
  header->nranks = 4;
  header->owner_rank = 2;
  header->owner_pid = 77;
  header->ring_bytes = 1 << 20;
  std::memset(header->nonce, 0x5a, sizeof(header->nonce));
  SegmentMac(secret, "shm-owner", header->nonce, 2, header->owner_mac);
  EXPECT_TRUE(SegmentHeaderValid(*header, address, 4, 2, secret));
  EXPECT_FALSE(SegmentHeaderValid(*header, address, 5, 2, secret));
  EXPECT_FALSE(SegmentHeaderValid(*header, address, 4, 1, secret));
  const uint8_t other_secret[16] = {};
  EXPECT_FALSE(SegmentHeaderValid(*header, address, 4, 2, other_secret));
  header->version = kLayoutVersion + 1;
  EXPECT_FALSE(SegmentHeaderValid(*header, address, 4, 2, secret));
}

}  // namespace
}  // namespace shm
}  // namespace chorus
