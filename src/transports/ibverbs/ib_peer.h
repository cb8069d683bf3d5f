// IbTransport's private state: the registered regions and each peer's
// queue pair, credits, slots and pending transfers. Shared by its set-up
// and teardown (ib_transport.cc) and its data path (ib_data_path.cc); no
// other file includes it.
#pragma once

#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "transports/ibverbs/ib_direct.h"
#include "transports/ibverbs/ib_transport.h"

namespace chorus {
namespace ib {

// Control SENDs in flight per peer (credits, probes, hello, close).
constexpr uint32_t kControlSendSlots = 8;

// The registration `memory` names, when it covers [pointer, pointer + bytes).
inline const ibv_mr* CoveringRegion(const MemoryHandle& memory, const void* pointer, size_t bytes) {
  const auto* mr = static_cast<const ibv_mr*>(memory.data);
  const auto address = reinterpret_cast<uintptr_t>(pointer);
  const auto base = reinterpret_cast<uintptr_t>(mr != nullptr ? mr->addr : nullptr);
  if (mr == nullptr || bytes == 0 || address < base || bytes > mr->length) return nullptr;
  return address - base <= mr->length - bytes ? mr : nullptr;
}

inline int64_t NowMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

}  // namespace ib

// A registered, page-aligned buffer.
struct IbTransport::MemoryRegion {
  ~MemoryRegion() {
    if (mr != nullptr) ibv_dereg_mr(mr);
    std::free(base);
  }
  uint8_t* base = nullptr;
  size_t bytes = 0;
  ibv_mr* mr = nullptr;
};

class IbTransport::IbEndpoint : public Endpoint {
 public:
  IbEndpoint(IbTransport* transport, int peer) : transport_(transport), peer_(peer) {}
  int peer() const override { return peer_; }
  Status PostSend(TransferRequest* request) override { return transport_->Post(peer_, request, true); }
  Status PostRecv(TransferRequest* request) override { return transport_->Post(peer_, request, false); }
  bool combine_on_receive() const override { return true; }

 private:
  IbTransport* transport_;
  int peer_;
};

struct IbTransport::Peer {
  Peer(IbTransport* transport, int rank) : endpoint(transport, rank), rank(rank) {}
  ~Peer() {
    if (qp != nullptr) ibv_destroy_qp(qp);  // before the regions it wrote
  }
  IbEndpoint endpoint;
  int rank;
  ibv_qp* qp = nullptr;
  uint32_t epoch = 0;      // times the QP was restarted (ib_wire.h WorkId)
  bool connected = false;  // routed to this transport and brought up
  bool hello = false;      // its hello arrived: the path works both ways
  // Slot rings are made on first use, each ring by its receiver at its
  // sender's request (kRingRequest, kRing), so that a rank registers ring
  // and staging memory only for the peers it exchanges slot messages with.
  bool ring_requested = false;  // we asked for our ring on it
  uint64_t remote_ring = 0;     // its answer: our ring on it (0: none yet)
  uint32_t remote_rkey = 0;
  bool ring_owed = false;       // it asked for its ring here: the answer, to post
  ib::SenderCredits credits;
  ib::ReceiverSlots slots;
  std::unique_ptr<MemoryRegion> ring_region;     // its slots on this rank
  std::unique_ptr<MemoryRegion> staging_region;  // our staging slots for it
  uint8_t* ring = nullptr;                       // ring_region's memory
  ib::ControlMessage* receive_buffers = nullptr;  // max_recv_wr_ of them, in controls_
  ib::ControlMessage* control_buffers = nullptr;  // ib::kControlSendSlots of them, in controls_
  uint64_t controls_posted = 0;
  uint64_t controls_completed = 0;
  uint32_t sends_outstanding = 0;  // send WRs not yet completed
  // A zero-copy send whose last chunk went from slot s completes with it.
  std::vector<TransferRequest*> completes_with_slot;
  TransferRequest* send_head = nullptr;
  TransferRequest* send_tail = nullptr;
  TransferRequest* recv_head = nullptr;
  TransferRequest* recv_tail = nullptr;
  // Direct receives (ib_direct.h): messages are numbered per direction in
  // posting order.
  uint64_t send_number = 0;   // the message at send_head
  bool send_direct = false;   // send_head goes by direct writes
  bool announced = false;     // send_head was announced; its answer is awaited
  uint64_t recv_number = 0;   // the receive at recv_head
  uint64_t offered = 0;       // receives considered for an offer so far
  TransferRequest* offer_cursor = nullptr;  // the receive numbered `offered`, if posted
  ib::SenderOffers offers;
  // An announced receive the cursor does not answer: its decline, to post.
  bool decline_owed = false;
  ib::ControlMessage owed_decline;
  ib::DirectArrivals direct_arrivals;
  // A direct send whose last write carries number n completes with it.
  TransferRequest* completes_with_direct[ib::kOfferWindow] = {};
  int64_t last_heard_ms = 0;
  bool probing = false;
  bool closed = false;           // its closing notice arrived
  std::string failure;           // a work request on its QP failed: why
  bool failure_flushed = false;  // only flushed so far, the cause may follow
  bool waiting() const { return send_head != nullptr || recv_head != nullptr; }
  // The head receive has something to consume.
  bool receive_ready() const { return slots.ready() > 0 || direct_arrivals.Has(recv_number); }
};

}  // namespace chorus
