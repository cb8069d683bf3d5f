// IbTransport's direct path (ib_direct.h): answering posted receives with
// offers of registered buffers or declines, choosing for each large send
// between a direct write, the slots, or announcing it and waiting, and the
// RDMA writes straight into an offered buffer.
#include <arpa/inet.h>

#include <algorithm>

#include "transports/ibverbs/ib_peer.h"

namespace chorus {

bool IbTransport::Answered(const TransferRequest* request) const {
  return options_.direct_bytes > 0 && request->bytes >= options_.direct_bytes;
}

const ibv_mr* IbTransport::DirectRegion(const TransferRequest* request) const {
  if (!Answered(request) || request->combine != nullptr) return nullptr;
  return ib::CoveringRegion(request->memory.For(this), request->buffer, request->bytes);
}

ib::ControlMessage IbTransport::Answer(const TransferRequest* request, uint64_t number) const {
  ib::ControlMessage answer;
  answer.kind = static_cast<uint32_t>(ib::ControlKind::kDecline);
  answer.value = number;
  answer.tag = request->tag;
  answer.bytes = request->bytes;
  if (const ibv_mr* mr = DirectRegion(request)) {
    answer.kind = static_cast<uint32_t>(ib::ControlKind::kReady);
    answer.address = reinterpret_cast<uintptr_t>(request->buffer);
    answer.rkey = mr->rkey;
  }
  return answer;
}

void IbTransport::OfferReceives(Peer* peer) {
  if (peer->ring_owed) {
    ib::ControlMessage ring;
    ring.kind = static_cast<uint32_t>(ib::ControlKind::kRing);
    ring.address = reinterpret_cast<uintptr_t>(peer->ring);
    ring.rkey = peer->ring_region->mr->rkey;
    if (PostControl(peer, ring)) peer->ring_owed = false;
  }
  if (peer->decline_owed && PostControl(peer, peer->owed_decline)) peer->decline_owed = false;
  while (peer->offer_cursor != nullptr && peer->offered < peer->recv_number + ib::kOfferWindow) {
    TransferRequest* request = peer->offer_cursor;
    // No room now: the next Advance answers it.
    if (Answered(request) && !PostControl(peer, Answer(request, peer->offered))) return;
    peer->offer_cursor = request->next;
    ++peer->offered;
  }
}

Status IbTransport::ChooseDirect(Peer* peer, TransferRequest* request, bool* wait) {
  *wait = false;
  const bool registered = ib::CoveringRegion(request->memory.For(this), request->buffer, request->bytes) != nullptr;
  const ib::Offer* offer = peer->offers.For(peer->send_number);
  if (offer == nullptr) {
    if (!registered || !Answered(request)) return Status::Ok();
    // The receive is not posted yet, or its answer is on its way: announce
    // the message once (a header-only chunk) and wait for the answer.
    *wait = true;
    if (peer->announced || !RingReady(peer) || peer->credits.available() == 0) return error_;
    ib::SlotHeader header;
    header.tag = request->tag;
    header.message_bytes = request->bytes;
    header.flags = ib::kSlotAnnounce;
    CHORUS_RETURN_IF_ERROR(WriteSlot(peer, header, nullptr, nullptr));
    peer->announced = true;
    return Status::Ok();
  }
  if (offer->tag != request->tag || offer->bytes != request->bytes) {
    return InternalError("message mismatch with ", Label(peer->rank), ": it expects tag ", offer->tag, " with ",
                         offer->bytes, " bytes, this rank sends tag ", request->tag, " with ", request->bytes,
                         " bytes");
  }
  if (offer->declined || !registered) return Status::Ok();
  // The last message that completed in this entry must have completed here
  // too; its acknowledgement is on its way.
  if (peer->completes_with_direct[peer->send_number % ib::kOfferWindow] != nullptr) {
    *wait = true;
    return Status::Ok();
  }
  peer->send_direct = true;
  return Status::Ok();
}

Status IbTransport::PushDirect(Peer* peer, TransferRequest* request) {
  const ib::Offer* offer = peer->offers.For(peer->send_number);
  const ibv_mr* mr = ib::CoveringRegion(request->memory.For(this), request->buffer, request->bytes);
  const uint64_t offset = request->progress;
  const uint64_t bytes = std::min<uint64_t>(request->bytes - offset, direct_piece_bytes_);
  const bool last = offset + bytes == request->bytes;
  const uint32_t entry = static_cast<uint32_t>(peer->send_number % ib::kOfferWindow);
  ibv_sge sge = {};
  sge.addr = reinterpret_cast<uintptr_t>(request->buffer) + offset;
  sge.length = static_cast<uint32_t>(bytes);
  sge.lkey = mr->lkey;
  ibv_send_wr wr = {};
  // Only the last write completes the message; the others name no entry.
  wr.wr_id = ib::WorkId(ib::WorkKind::kDirect, peer->rank, last ? entry : ib::kOfferWindow, peer->epoch);
  wr.sg_list = &sge;
  wr.num_sge = 1;
  wr.opcode = last ? IBV_WR_RDMA_WRITE_WITH_IMM : IBV_WR_RDMA_WRITE;
  wr.send_flags = IBV_SEND_SIGNALED;
  wr.imm_data = htonl(ib::DirectImm(peer->send_number));
  wr.wr.rdma.remote_addr = offer->address + offset;
  wr.wr.rdma.rkey = offer->rkey;
  ibv_send_wr* bad = nullptr;
  const int err = ibv_post_send(peer->qp, &wr, &bad);
  if (err != 0) return ErrnoError(err, StrCat("ibverbs transport: ibv_post_send to ", Label(peer->rank)));
  ++peer->sends_outstanding;
  request->progress += bytes;
  if (last) {
    peer->completes_with_direct[entry] = request;
    peer->send_direct = false;
    ++direct_counts_.sent;
    PopSend(peer);
  }
  return Status::Ok();
}

IbTransport::DirectCounts IbTransport::direct_counts() {
  std::lock_guard<std::mutex> lock(mutex_);
  return direct_counts_;
}

}  // namespace chorus
