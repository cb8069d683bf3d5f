// The ibverbs transport's logic that needs no RDMA device: the rendezvous
// address, CHORUS_IB_HCA parsing and matching, the GID choice, the credit
// and slot arithmetic of the receive rings, chunking and the work-request
// ids. Runs everywhere, with or without libibverbs.
#include <cstring>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "transports/ibverbs/ib_connection_blob.h"
#include "transports/ibverbs/ib_direct.h"
#include "transports/ibverbs/ib_gid_choice.h"
#include "transports/ibverbs/ib_hca_list.h"
#include "transports/ibverbs/ib_slot_ring.h"
#include "transports/ibverbs/ib_wire.h"

namespace chorus {
namespace ib {
namespace {

ConnectionBlob SampleBlob() {
  ConnectionBlob blob;
  blob.port = 2;
  blob.mtu = 3;
  blob.link_layer = 2;
  blob.lid = 0xbeef;
  for (int i = 0; i < 16; ++i) blob.gid[i] = static_cast<uint8_t>(0xf0 + i);
  blob.psn = 0xabcdef;
  blob.slot_bytes = 256 * 1024;
  blob.slots = 16;
  blob.qpn = {0x11, 0, 0xffffff, 0x1234};
  return blob;
}

TEST(IbConnectionBlobTest, RoundTripsEveryField) {
  const ConnectionBlob blob = SampleBlob();
  const std::string text = blob.Encode();
  // 41 fixed bytes and 4 per rank, as hex.
  EXPECT_EQ(text.size(), 2u * (41 + 4 * 4));
  EXPECT_EQ(text.find_first_not_of("0123456789abcdef"), std::string::npos);
  ConnectionBlob decoded;
  ASSERT_TRUE(ConnectionBlob::Decode(text, &decoded).ok());
  EXPECT_EQ(decoded.port, 2);
  EXPECT_EQ(decoded.mtu, 3);
  EXPECT_EQ(decoded.link_layer, 2);
  EXPECT_EQ(decoded.lid, 0xbeef);
  EXPECT_EQ(std::memcmp(decoded.gid, blob.gid, 16), 0);
  EXPECT_EQ(decoded.psn, 0xabcdefu);
  EXPECT_EQ(decoded.slot_bytes, 256u * 1024);
  EXPECT_EQ(decoded.slots, 16u);
  EXPECT_EQ(decoded.qpn, blob.qpn);
}

TEST(IbConnectionBlobTest, IsLittleEndianWithItsMagicFirst) {
  EXPECT_EQ(SampleBlob().Encode().substr(0, 8), "43494231");  // "CIB1"
}

TEST(IbConnectionBlobTest, RejectsMalformedAddressesAndLeavesTheOutputAlone) {
  const std::string good = SampleBlob().Encode();
  ConnectionBlob out;
  out.slots = 99;
  const std::vector<std::pair<std::string, std::string>> cases = {
      {good.substr(1), "odd number of hex digits"},
      {"zz" + good.substr(2), "not hex"},
      {good.substr(0, 20), "bytes"},
      {"00000000" + good.substr(8), "another version"},
  };
  for (size_t i = 0; i < cases.size(); ++i) {
    const Status status = ConnectionBlob::Decode(cases[i].first, &out);
    ASSERT_FALSE(status.ok()) << cases[i].first;
    EXPECT_NE(status.message().find("malformed connection address"), std::string::npos) << status.message();
    EXPECT_NE(status.message().find(cases[i].second), std::string::npos) << status.message();
  }
  // A QP number too many, and one too few.
  Status status = ConnectionBlob::Decode(good + "00000000", &out);
  ASSERT_FALSE(status.ok());
  EXPECT_NE(status.message().find("4 ranks announced, 20 bytes of QP numbers"), std::string::npos) << status.message();
  status = ConnectionBlob::Decode(good.substr(0, good.size() - 8), &out);
  ASSERT_FALSE(status.ok());
  EXPECT_NE(status.message().find("4 ranks announced, 12 bytes"), std::string::npos) << status.message();
  EXPECT_EQ(out.slots, 99u);
}

TEST(IbConnectionBlobTest, RejectsAPsnOver24Bits) {
  ConnectionBlob blob = SampleBlob();
  blob.psn = 1u << 24;
  ConnectionBlob out;
  const Status status = ConnectionBlob::Decode(blob.Encode(), &out);
  ASSERT_FALSE(status.ok());
  EXPECT_NE(status.message().find("PSN over 24 bits"), std::string::npos) << status.message();
}

TEST(IbHcaFilterTest, EmptyAllowsEverything) {
  HcaFilter filter;
  ASSERT_TRUE(HcaFilter::Parse("", &filter).ok());
  EXPECT_TRUE(filter.Allows("mlx5_0", 1));
  EXPECT_TRUE(filter.Allows("rxe0", 2));
}

TEST(IbHcaFilterTest, PrefixesWithOptionalPorts) {
  HcaFilter filter;
  ASSERT_TRUE(HcaFilter::Parse("mlx5_0:1,mlx5_1", &filter).ok());
  ASSERT_EQ(filter.entries().size(), 2u);
  EXPECT_EQ(filter.entries()[0].device, "mlx5_0");
  EXPECT_EQ(filter.entries()[0].port, 1);
  EXPECT_EQ(filter.entries()[1].port, -1);
  EXPECT_TRUE(filter.Allows("mlx5_0", 1));
  EXPECT_FALSE(filter.Allows("mlx5_0", 2));
  EXPECT_TRUE(filter.Allows("mlx5_1", 2));
  EXPECT_TRUE(filter.Allows("mlx5_10", 1));  // a prefix match, as NCCL
  EXPECT_FALSE(filter.Allows("mlx4_0", 1));
  ASSERT_TRUE(HcaFilter::Parse("mlx5", &filter).ok());
  EXPECT_TRUE(filter.Allows("mlx5_3", 1));
}

TEST(IbHcaFilterTest, ExactNames) {
  HcaFilter filter;
  ASSERT_TRUE(HcaFilter::Parse("=mlx5_1", &filter).ok());
  EXPECT_TRUE(filter.exact());
  EXPECT_TRUE(filter.Allows("mlx5_1", 1));
  EXPECT_FALSE(filter.Allows("mlx5_10", 1));
}

TEST(IbHcaFilterTest, Exclusions) {
  HcaFilter filter;
  ASSERT_TRUE(HcaFilter::Parse("^mlx5_1,rxe0:2", &filter).ok());
  EXPECT_TRUE(filter.exclude());
  EXPECT_FALSE(filter.Allows("mlx5_1", 1));
  EXPECT_FALSE(filter.Allows("mlx5_10", 1));
  EXPECT_TRUE(filter.Allows("rxe0", 1));
  EXPECT_FALSE(filter.Allows("rxe0", 2));
  EXPECT_TRUE(filter.Allows("mlx5_0", 1));
  ASSERT_TRUE(HcaFilter::Parse("^=mlx5_1", &filter).ok());
  EXPECT_TRUE(filter.exclude());
  EXPECT_TRUE(filter.exact());
  EXPECT_FALSE(filter.Allows("mlx5_1", 1));
  EXPECT_TRUE(filter.Allows("mlx5_10", 1));
}

TEST(IbHcaFilterTest, BadListsFailNamingTheVariableAndLeaveTheFilterAlone) {
  HcaFilter filter;
  ASSERT_TRUE(HcaFilter::Parse("keep", &filter).ok());
  for (const char* text : {"^", "=", "^=", "mlx5_0,", ",mlx5_0", "mlx5_0,,mlx5_1", ":1", "mlx5_0:", "mlx5_0:x",
                           "mlx5_0:0", "mlx5_0:256", "mlx5_0:1:2"}) {
    const Status status = HcaFilter::Parse(text, &filter);
    ASSERT_FALSE(status.ok()) << text;
    EXPECT_NE(status.message().find(StrCat("CHORUS_IB_HCA='", text, "'")), std::string::npos) << status.message();
  }
  ASSERT_EQ(filter.entries().size(), 1u);
  EXPECT_EQ(filter.entries()[0].device, "keep");
}

GidEntry Gid(int index, GidType type, std::vector<uint8_t> bytes) {
  GidEntry entry;
  entry.index = index;
  entry.type = type;
  for (size_t i = 0; i < bytes.size() && i < 16; ++i) entry.gid[i] = bytes[i];
  return entry;
}

std::vector<uint8_t> LinkLocal() { return {0xfe, 0x80, 0, 0, 0, 0, 0, 0, 0x02, 0x11, 0x22, 0xff, 0xfe, 0x33, 0x44, 0x55}; }
std::vector<uint8_t> Ipv4(uint8_t last) { return {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 10, 0, 2, last}; }

TEST(IbGidChoiceTest, PrefersRoceV2WithAnIpv4Address) {
  // The usual RoCE table: link-local v1 and v2, then the IPv4 address as v1 and v2.
  const std::vector<GidEntry> table = {Gid(0, GidType::kRoceV1, LinkLocal()), Gid(1, GidType::kRoceV2, LinkLocal()),
                                       Gid(2, GidType::kRoceV1, Ipv4(15)), Gid(3, GidType::kRoceV2, Ipv4(15))};
  int index = -1;
  ASSERT_TRUE(ChooseGidIndex(table, -1, &index).ok());
  EXPECT_EQ(index, 3);
}

TEST(IbGidChoiceTest, FallsBackToIndexZero) {
  int index = -1;
  // InfiniBand: one GID, no IPv4.
  ASSERT_TRUE(ChooseGidIndex({Gid(0, GidType::kInfiniBand, LinkLocal())}, -1, &index).ok());
  EXPECT_EQ(index, 0);
  // RoCE without an IPv4 address, or with it only as v1.
  index = -1;
  ASSERT_TRUE(ChooseGidIndex({Gid(0, GidType::kRoceV1, LinkLocal()), Gid(1, GidType::kRoceV2, LinkLocal()),
                              Gid(2, GidType::kRoceV1, Ipv4(1))},
                             -1, &index)
                  .ok());
  EXPECT_EQ(index, 0);
  index = -1;
  ASSERT_TRUE(ChooseGidIndex({}, -1, &index).ok());
  EXPECT_EQ(index, 0);
}

TEST(IbGidChoiceTest, ConfiguredIndexMustExist) {
  const std::vector<GidEntry> table = {Gid(0, GidType::kRoceV1, LinkLocal()), Gid(3, GidType::kRoceV2, Ipv4(15))};
  int index = -1;
  ASSERT_TRUE(ChooseGidIndex(table, 0, &index).ok());
  EXPECT_EQ(index, 0);
  index = 7;
  const Status status = ChooseGidIndex(table, 2, &index);
  ASSERT_FALSE(status.ok());
  EXPECT_NE(status.message().find("CHORUS_IB_GID_INDEX=2"), std::string::npos) << status.message();
  EXPECT_EQ(index, 7);
  const std::vector<GidEntry> empty_entry = {Gid(0, GidType::kRoceV1, {})};
  EXPECT_FALSE(ChooseGidIndex(empty_entry, 0, &index).ok());
}

TEST(IbGidChoiceTest, ClassifiesAndPrintsGids) {
  const std::vector<uint8_t> v4 = Ipv4(15);
  const std::vector<uint8_t> local = LinkLocal();
  EXPECT_TRUE(GidIsIpv4(v4.data()));
  EXPECT_FALSE(GidIsIpv4(local.data()));
  const uint8_t zero[16] = {};
  EXPECT_TRUE(GidIsEmpty(zero));
  EXPECT_FALSE(GidIsEmpty(local.data()));
  EXPECT_EQ(GidText(v4.data()), "0000:0000:0000:0000:0000:ffff:0a00:020f");
}

TEST(IbChunkingTest, CutsMessagesIntoSlotPayloads) {
  const uint64_t payload = 256 * 1024 - kSlotHeaderBytes;
  EXPECT_EQ(ChunkCount(0, payload), 1u);  // a header still tells the receiver
  EXPECT_EQ(ChunkBytes(0, payload, 0), 0u);
  EXPECT_EQ(ChunkCount(1, payload), 1u);
  EXPECT_EQ(ChunkCount(payload, payload), 1u);
  EXPECT_EQ(ChunkCount(payload + 1, payload), 2u);
  EXPECT_EQ(ChunkBytes(payload + 1, payload, 0), payload);
  EXPECT_EQ(ChunkBytes(payload + 1, payload, 1), 1u);
  const uint64_t eight_mib = 8 << 20;
  const uint64_t chunks = ChunkCount(eight_mib, payload);
  EXPECT_EQ(chunks, 33u);
  uint64_t total = 0;
  for (uint64_t c = 0; c < chunks; ++c) {
    total += ChunkBytes(eight_mib, payload, c);
    // Every chunk but the last is whole: combining receivers get 64-aligned pieces.
    if (c + 1 < chunks) {
      EXPECT_EQ(ChunkBytes(eight_mib, payload, c) % 64, 0u);
    }
  }
  EXPECT_EQ(total, eight_mib);
}

TEST(IbSlotRingTest, SenderWritesOnlyWithCredits) {
  SenderCredits credits(4);
  for (uint32_t i = 0; i < 4; ++i) {
    ASSERT_EQ(credits.available(), 4u - i);
    EXPECT_EQ(credits.NextSlot(), i);
    credits.Wrote();
  }
  EXPECT_EQ(credits.available(), 0u);
  EXPECT_TRUE(credits.Returned(1));
  EXPECT_EQ(credits.available(), 1u);
  EXPECT_EQ(credits.NextSlot(), 0u);  // wraps around onto the consumed slot
  EXPECT_TRUE(credits.Returned(0));   // stale: ignored
  EXPECT_EQ(credits.available(), 1u);
  EXPECT_FALSE(credits.Returned(5));  // more than written: a broken peer
  EXPECT_EQ(credits.consumed(), 1u);
  credits.Wrote();
  EXPECT_EQ(credits.NextSlot(), 1u);
  EXPECT_TRUE(credits.Returned(5));
  EXPECT_EQ(credits.available(), 4u);
}

TEST(IbSlotRingTest, ReceiverConsumesInOrderAndRefusesOverruns) {
  ReceiverSlots slots(4);
  for (int i = 0; i < 4; ++i) ASSERT_TRUE(slots.Arrived());
  EXPECT_FALSE(slots.Arrived());  // a fifth chunk without a credit
  EXPECT_EQ(slots.ready(), 4u);
  for (uint32_t i = 0; i < 4; ++i) {
    EXPECT_EQ(slots.NextSlot(), i);
    slots.Consumed();
  }
  ASSERT_TRUE(slots.Arrived());
  EXPECT_EQ(slots.NextSlot(), 0u);
}

TEST(IbSlotRingTest, CreditsReturnAfterAQuarterOrWhenCaughtUp) {
  ReceiverSlots slots(16);
  EXPECT_FALSE(slots.ShouldReturn());  // nothing owed
  for (int i = 0; i < 8; ++i) ASSERT_TRUE(slots.Arrived());
  for (int i = 0; i < 3; ++i) {
    slots.Consumed();
    EXPECT_FALSE(slots.ShouldReturn()) << i;  // more is ready: batch them
  }
  slots.Consumed();
  EXPECT_TRUE(slots.ShouldReturn());  // a quarter of the ring
  EXPECT_EQ(slots.Return(), 4u);
  EXPECT_FALSE(slots.ShouldReturn());
  slots.Consumed();
  EXPECT_FALSE(slots.ShouldReturn());
  slots.Consumed();
  slots.Consumed();
  slots.Consumed();  // caught up with all 8 arrived: the sender may be waiting
  EXPECT_TRUE(slots.ShouldReturn());
  EXPECT_EQ(slots.Return(), 8u);
}

TEST(IbSlotRingTest, SenderAndReceiverNeverOverlapOverAThousandChunks) {
  // The sender and receiver as two counters driven alternately: the slot
  // written is never one the receiver has yet to read.
  SenderCredits credits(8);
  ReceiverSlots slots(8);
  std::vector<int> owner(8, -1);  // chunk number in each slot, -1 when free
  uint64_t next = 0;
  while (next < 1000 || slots.ready() > 0) {
    while (next < 1000 && credits.available() > 0) {
      const uint32_t slot = credits.NextSlot();
      ASSERT_EQ(owner[slot], -1) << "overwrote chunk " << owner[slot];
      owner[slot] = static_cast<int>(next++);
      credits.Wrote();
      ASSERT_TRUE(slots.Arrived());
    }
    // Consume two at a time, returning credits by the receiver's rule.
    for (int k = 0; k < 2 && slots.ready() > 0; ++k) {
      const uint32_t slot = slots.NextSlot();
      ASSERT_EQ(owner[slot], static_cast<int>(slots.consumed()));
      owner[slot] = -1;
      slots.Consumed();
    }
    if (slots.ShouldReturn()) {
      ASSERT_TRUE(credits.Returned(slots.Return()));
    }
  }
  EXPECT_EQ(slots.consumed(), 1000u);
  EXPECT_EQ(credits.consumed(), 1000u);
}

TEST(IbWireTest, WorkIdsCarryKindPeerAndIndex) {
  const uint64_t id = WorkId(WorkKind::kReceive, 0xabcdef, 0x1234, 0x5678);
  EXPECT_EQ(WorkKindOf(id), WorkKind::kReceive);
  EXPECT_EQ(WorkPeerOf(id), 0xabcdefu);
  EXPECT_EQ(WorkIndexOf(id), 0x1234u);
  EXPECT_EQ(WorkEpochOf(id), 0x5678u);
  EXPECT_EQ(WorkEpochOf(WorkId(WorkKind::kData, 1, 7)), 0u);  // a QP never restarted
  EXPECT_EQ(WorkEpochOf(WorkId(WorkKind::kData, 1, 7, 0x10001)), 1u);  // epochs wrap at 2^16
  EXPECT_EQ(WorkKindOf(WorkId(WorkKind::kData, 0, 0)), WorkKind::kData);
  EXPECT_EQ(WorkKindOf(WorkId(WorkKind::kDirect, 3, kOfferWindow)), WorkKind::kDirect);
  EXPECT_EQ(sizeof(ControlMessage), 48u);
}

TEST(IbDirectTest, ImmediatesTellDirectWritesFromSlotChunks) {
  for (uint64_t n : {uint64_t{0}, uint64_t{1}, uint64_t{0x7fffffff}, uint64_t{0x80000000}, uint64_t{0xffffffff},
                     uint64_t{1} << 40}) {
    EXPECT_FALSE(IsDirectImm(SlotImm(n))) << n;
    EXPECT_TRUE(IsDirectImm(DirectImm(n))) << n;
  }
  EXPECT_EQ(DirectImm(5), 0x80000005u);
  EXPECT_EQ(DirectImm(0x80000005), 0x80000005u);  // numbers wrap at 31 bits
  EXPECT_EQ(SlotImm(0x80000005), 5u);
}

Offer OfferFor(uint64_t number) {
  Offer offer;
  offer.number = number;
  offer.tag = 100 + number;
  offer.bytes = 1000 * number;
  offer.address = 0x1000 * number;
  offer.rkey = static_cast<uint32_t>(number);
  return offer;
}

TEST(IbDirectTest, SenderKeepsOffersWithinTheWindowAndDropsStaleOnes) {
  SenderOffers offers;
  EXPECT_EQ(offers.For(0), nullptr);
  ASSERT_TRUE(offers.Received(0, OfferFor(0)));
  ASSERT_TRUE(offers.Received(0, OfferFor(kOfferWindow - 1)));
  ASSERT_NE(offers.For(0), nullptr);
  EXPECT_EQ(offers.For(0)->tag, 100u);
  ASSERT_NE(offers.For(kOfferWindow - 1), nullptr);
  EXPECT_EQ(offers.For(kOfferWindow - 1)->address, 0x1000u * (kOfferWindow - 1));
  EXPECT_EQ(offers.For(1), nullptr);
  EXPECT_EQ(offers.For(kOfferWindow), nullptr);  // same entry as 0, another number
  // Beyond the window: the receiver broke the protocol.
  EXPECT_FALSE(offers.Received(0, OfferFor(kOfferWindow)));
  // Message 3 already went by slot: its late offer is dropped, not kept.
  ASSERT_TRUE(offers.Received(4, OfferFor(3)));
  EXPECT_EQ(offers.For(3), nullptr);
  // A later number takes the entry over.
  ASSERT_TRUE(offers.Received(5, OfferFor(kOfferWindow + 2)));
  ASSERT_TRUE(offers.Received(kOfferWindow + 1, OfferFor(2 * kOfferWindow)));
  EXPECT_EQ(offers.For(0), nullptr);
  ASSERT_NE(offers.For(2 * kOfferWindow), nullptr);
  EXPECT_EQ(offers.For(2 * kOfferWindow)->bytes, 2000u * kOfferWindow);
}

TEST(IbDirectTest, ADeclineIsAnAnswerToo) {
  SenderOffers offers;
  Offer decline = OfferFor(2);
  decline.declined = true;
  ASSERT_TRUE(offers.Received(0, decline));
  ASSERT_NE(offers.For(2), nullptr);
  EXPECT_TRUE(offers.For(2)->declined);
  EXPECT_EQ(offers.For(2)->tag, 102u);
  ASSERT_TRUE(offers.Received(0, OfferFor(3)));
  EXPECT_FALSE(offers.For(3)->declined);
  static_assert(sizeof(SlotHeader) <= kSlotHeaderBytes, "the header fits its room");
}

TEST(IbDirectTest, ReceiverMatchesDirectWritesToOfferedNumbers) {
  DirectArrivals arrivals;
  EXPECT_FALSE(arrivals.Has(0));
  ASSERT_TRUE(arrivals.Arrived(0, DirectImm(3)));
  EXPECT_TRUE(arrivals.Has(3));
  EXPECT_FALSE(arrivals.Has(3 + kOfferWindow));
  arrivals.Take(3);
  EXPECT_FALSE(arrivals.Has(3));
  // Outside the window of offered receives: refused.
  EXPECT_FALSE(arrivals.Arrived(0, DirectImm(kOfferWindow)));
  EXPECT_FALSE(arrivals.Arrived(10, DirectImm(9)));
  // Numbers past 2^31 are told apart by the window.
  const uint64_t next = (uint64_t{1} << 31) - 2;
  ASSERT_TRUE(arrivals.Arrived(next, DirectImm(next + 5)));
  EXPECT_TRUE(arrivals.Has(next + 5));
  EXPECT_FALSE(arrivals.Has(next + 5 - kOfferWindow));
}

}  // namespace
}  // namespace ib
}  // namespace chorus
