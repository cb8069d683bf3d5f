// Direct receives, as arithmetic both ends keep. A receiver answers every
// posted receive of at least CHORUS_IB_DIRECT_BYTES as soon as it is posted:
// when it lies in memory registered with the transport (chorusCommRegister)
// and is not reduced on arrival, with an offer (kReady, ib_wire.h: the
// message's number in this direction, its tag, size, address and rkey),
// else with a decline (kDecline). A sender whose message of that size comes
// from a registered buffer and reaches the head of its queue:
// - with an offer, writes it with RDMA writes straight into the offered
//   buffer, the last with an immediate that marks it direct: no staging
//   copy, no slot, no copy out;
// - with a decline, sends it through the slots (ib_slot_ring.h);
// - with neither (the receive is not posted yet), sends an announcing chunk
//   without payload and waits for the answer, which the receiver gives when
//   it meets the announcement if it has not already.
// Other messages go through the slots, and an offer for them goes stale. RC
// keeps each direction in order, so the receiver meets every message, slot
// or direct, in posting order.
#pragma once

#include <cstdint>

namespace chorus {
namespace ib {

// Receives offered ahead of the oldest one not yet complete.
constexpr uint32_t kOfferWindow = 16;

// Immediates: a direct write's carries this bit and the low 31 bits of its
// message number; a slot chunk's carries the low 31 bits of its sequence.
constexpr uint32_t kDirectImmFlag = 0x80000000u;
inline uint32_t SlotImm(uint64_t sequence) { return static_cast<uint32_t>(sequence) & ~kDirectImmFlag; }
inline uint32_t DirectImm(uint64_t number) { return kDirectImmFlag | SlotImm(number); }
inline bool IsDirectImm(uint32_t imm) { return (imm & kDirectImmFlag) != 0; }

// An answer: an offer, or a decline.
struct Offer {
  uint64_t number = 0;
  uint64_t tag = 0;
  uint64_t bytes = 0;
  uint64_t address = 0;
  uint32_t rkey = 0;
  bool declined = false;
  bool valid = false;
};

// The sender's side: the answers received, by message number.
class SenderOffers {
 public:
  // An answer for message `number`, given that `next` is the sender's
  // oldest message not yet sent whole. False when it lies beyond the window
  // (the receiver broke the protocol); an answer for a message already sent
  // is stale and dropped.
  bool Received(uint64_t next, const Offer& offer) {
    if (offer.number >= next + kOfferWindow) return false;
    if (offer.number < next) return true;
    offers_[offer.number % kOfferWindow] = offer;
    offers_[offer.number % kOfferWindow].valid = true;
    return true;
  }
  // The answer for message `number`, or null.
  const Offer* For(uint64_t number) const {
    const Offer& offer = offers_[number % kOfferWindow];
    return offer.valid && offer.number == number ? &offer : nullptr;
  }

 private:
  Offer offers_[kOfferWindow];
};

// The receiver's side: which offered messages arrived by direct write.
class DirectArrivals {
 public:
  // A direct write's immediate, given that `next` is the oldest receive not
  // yet complete; false when it names no message in the window.
  bool Arrived(uint64_t next, uint32_t imm) {
    for (uint64_t number = next; number < next + kOfferWindow; ++number) {
      if (DirectImm(number) != imm) continue;
      arrived_[number % kOfferWindow] = number + 1;
      return true;
    }
    return false;
  }
  // Whether message `number` arrived direct; Take forgets it.
  bool Has(uint64_t number) const { return arrived_[number % kOfferWindow] == number + 1; }
  void Take(uint64_t number) { arrived_[number % kOfferWindow] = 0; }

 private:
  uint64_t arrived_[kOfferWindow] = {};
};

}  // namespace ib
}  // namespace chorus
