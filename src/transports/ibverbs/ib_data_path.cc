// IbTransport's data path: posting transfers, pushing chunks into the
// peers' slots as credits allow (rings made on first use), consuming what
// arrived, control messages, completions, probing silent peers, and sleeping
// on the completion channel until a deadline. Direct writes between
// registered buffers: ib_direct_path.cc.
#include <arpa/inet.h>
#include <poll.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "transports/ibverbs/ib_peer.h"
#include "transports/socket/wake_fds.h"

namespace chorus {

namespace {

// How long a peer may stay silent while we wait on it before we probe it.
constexpr int kProbeIntervalMs = 1000;
// Completions reaped per ibv_poll_cq, and batches per Drive (bounded, so a
// peer streaming at us does not keep its chunks from being consumed).
constexpr int kPollBatch = 32;
constexpr int kPollRounds = 8;

}  // namespace

Status IbTransport::Post(int peer_rank, TransferRequest* request, bool is_send) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (!error_.ok()) return error_;
  if (shut_down_.load()) return InvalidUsage("ibverbs transport was shut down");
  Peer* peer = peers_[peer_rank].get();
  request->done = false;
  request->progress = 0;
  request->lane = 0;
  request->next = nullptr;
  TransferRequest*& head = is_send ? peer->send_head : peer->recv_head;
  TransferRequest*& tail = is_send ? peer->send_tail : peer->recv_tail;
  if (head == nullptr) {
    head = request;
  } else {
    tail->next = request;
  }
  tail = request;
  if (!is_send && peer->offer_cursor == nullptr) peer->offer_cursor = request;
  // Start at once: a send needs no Progress to leave if credits allow.
  bool progressed = false;
  const Status status = Advance(peer, &progressed);
  return status.ok() ? status : Fail(status);
}

Status IbTransport::WriteSlot(Peer* peer, ib::SlotHeader header, const uint8_t* payload, const ibv_mr* payload_mr) {
  const uint32_t slot = peer->credits.NextSlot();
  uint8_t* staging = peer->staging_region->base + static_cast<size_t>(slot) * options_.slot_bytes;
  header.sequence = static_cast<uint32_t>(peer->credits.written());
  header.number = peer->send_number;
  std::memcpy(staging, &header, sizeof(header));
  ibv_sge sge[2] = {};
  sge[0].addr = reinterpret_cast<uintptr_t>(staging);
  sge[0].length = static_cast<uint32_t>(ib::kSlotHeaderBytes + header.chunk_bytes);
  sge[0].lkey = peer->staging_region->mr->lkey;
  int num_sge = 1;
  if (payload_mr != nullptr) {
    sge[0].length = ib::kSlotHeaderBytes;
    sge[1].addr = reinterpret_cast<uintptr_t>(payload);
    sge[1].length = header.chunk_bytes;
    sge[1].lkey = payload_mr->lkey;
    num_sge = 2;
  } else if (header.chunk_bytes > 0) {
    std::memcpy(staging + ib::kSlotHeaderBytes, payload, header.chunk_bytes);
  }
  ibv_send_wr wr = {};
  wr.wr_id = ib::WorkId(ib::WorkKind::kData, peer->rank, slot, peer->epoch);
  wr.sg_list = sge;
  wr.num_sge = num_sge;
  wr.opcode = IBV_WR_RDMA_WRITE_WITH_IMM;
  wr.send_flags = IBV_SEND_SIGNALED;
  wr.imm_data = htonl(ib::SlotImm(header.sequence));
  wr.wr.rdma.remote_addr = peer->remote_ring + static_cast<uint64_t>(slot) * options_.slot_bytes;
  wr.wr.rdma.rkey = peer->remote_rkey;
  ibv_send_wr* bad = nullptr;
  const int err = ibv_post_send(peer->qp, &wr, &bad);
  if (err != 0) return ErrnoError(err, StrCat("ibverbs transport: ibv_post_send to ", Label(peer->rank)));
  peer->credits.Wrote();
  ++peer->sends_outstanding;
  return Status::Ok();
}

bool IbTransport::RingReady(Peer* peer) {
  if (peer->remote_ring != 0) return true;
  if (peer->ring_requested) return false;
  if (peer->staging_region == nullptr) {
    const Status made = NewRegion(static_cast<size_t>(options_.slots) * options_.slot_bytes, IBV_ACCESS_LOCAL_WRITE,
                                  "staging slots", &peer->staging_region);
    if (!made.ok()) {
      if (error_.ok()) error_ = made;
      return false;
    }
  }
  ib::ControlMessage request;
  request.kind = static_cast<uint32_t>(ib::ControlKind::kRingRequest);
  peer->ring_requested = PostControl(peer, request);  // no room now: asked again on the next try
  return false;
}

Status IbTransport::MakeRing(Peer* peer) {
  if (peer->ring_region == nullptr) {
    CHORUS_RETURN_IF_ERROR(NewRegion(static_cast<size_t>(options_.slots) * options_.slot_bytes,
                                     IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE,
                                     StrCat("the receive ring of ", Label(peer->rank)).c_str(), &peer->ring_region));
    peer->ring = peer->ring_region->base;
  }
  peer->ring_owed = true;
  return Status::Ok();
}

void IbTransport::PopSend(Peer* peer) {
  peer->send_head = peer->send_head->next;
  if (peer->send_head == nullptr) peer->send_tail = nullptr;
  ++peer->send_number;
  peer->announced = false;
}

void IbTransport::PopReceive(Peer* peer) {
  TransferRequest* request = peer->recv_head;
  peer->recv_head = request->next;
  if (peer->recv_head == nullptr) peer->recv_tail = nullptr;
  if (peer->offer_cursor == request) {
    peer->offer_cursor = request->next;
    ++peer->offered;
  }
  ++peer->recv_number;
}

Status IbTransport::PushSends(Peer* peer, bool* progressed) {
  const uint64_t payload = options_.slot_bytes - ib::kSlotHeaderBytes;
  // Room is kept for control messages: credits must flow even while we stream.
  while (peer->send_head != nullptr && peer->hello && peer->sends_outstanding + ib::kControlSendSlots < max_send_wr_) {
    TransferRequest* request = peer->send_head;
    if (!peer->send_direct && request->lane == 0) {
      bool wait = false;
      CHORUS_RETURN_IF_ERROR(ChooseDirect(peer, request, &wait));
      if (wait) break;
    }
    if (peer->send_direct) {
      CHORUS_RETURN_IF_ERROR(PushDirect(peer, request));
      continue;
    }
    if (!RingReady(peer) || peer->credits.available() == 0) break;
    const uint64_t chunks = ib::ChunkCount(request->bytes, payload);
    const uint64_t chunk = request->lane;
    const uint64_t bytes = ib::ChunkBytes(request->bytes, payload, chunk);
    const uint32_t slot = peer->credits.NextSlot();
    ib::SlotHeader header;
    header.tag = request->tag;
    header.message_bytes = request->bytes;
    header.offset = chunk * payload;
    header.chunk_bytes = static_cast<uint32_t>(bytes);
    const uint8_t* source = static_cast<const uint8_t*>(request->buffer) + header.offset;
    // In place from a registration covering the chunk, else through staging.
    const ibv_mr* user_mr = ib::CoveringRegion(request->memory.For(this), source, bytes);
    const bool in_place = user_mr != nullptr;
    CHORUS_RETURN_IF_ERROR(WriteSlot(peer, header, source, user_mr));
    ++request->lane;
    request->progress += bytes;
    if (request->lane == chunks) {
      PopSend(peer);
      // Staged bytes are ours: the caller's buffer is free now. In place,
      // it is free when the write completes.
      if (in_place) {
        peer->completes_with_slot[slot] = request;
      } else {
        request->done = true;
        *progressed = true;
      }
    }
  }
  return error_;  // making staging slots may have failed
}

Status IbTransport::ConsumeArrived(Peer* peer, bool* progressed) {
  const uint64_t payload = options_.slot_bytes - ib::kSlotHeaderBytes;
  while (peer->recv_head != nullptr && peer->receive_ready()) {
    TransferRequest* request = peer->recv_head;
    const bool direct = peer->direct_arrivals.Has(peer->recv_number);
    const uint8_t* slot = nullptr;
    ib::SlotHeader header;
    if (peer->slots.ready() > 0) {
      slot = peer->ring + static_cast<size_t>(peer->slots.NextSlot()) * options_.slot_bytes;
      std::memcpy(&header, slot, sizeof(header));
      if (header.sequence != static_cast<uint32_t>(peer->slots.consumed()) || header.chunk_bytes > payload) {
        return InternalError("ibverbs transport: corrupt chunk from ", Label(peer->rank), " (sequence ",
                             header.sequence, ", expected ", static_cast<uint32_t>(peer->slots.consumed()), ")");
      }
      if (header.number != peer->recv_number) {
        // A later message's chunk waits behind one written direct.
        if (!direct) {
          return InternalError("ibverbs transport: chunk of message ", header.number, " from ", Label(peer->rank),
                               ", expected message ", peer->recv_number);
        }
        slot = nullptr;
      }
    }
    if (slot == nullptr) {
      // Written straight into the buffer; RC delivered it after everything
      // sent before it.
      peer->direct_arrivals.Take(peer->recv_number);
      request->progress = request->bytes;
      PopReceive(peer);
      request->done = true;
      *progressed = true;
      ++direct_counts_.received;
      continue;
    }
    if (header.tag != request->tag || header.message_bytes != request->bytes) {
      return InternalError("message mismatch with ", Label(peer->rank), ": expected tag ", request->tag, " with ",
                           request->bytes, " bytes, got tag ", header.tag, " with ", header.message_bytes, " bytes");
    }
    if ((header.flags & ib::kSlotAnnounce) != 0) {
      // The sender waits for this receive's answer: the cursor gives it for
      // receives of the direct size (or gave it already); others, declined.
      peer->slots.Consumed();
      if (!Answered(request)) {
        peer->owed_decline = Answer(request, peer->recv_number);
        peer->decline_owed = true;
      }
      continue;
    }
    if (direct) {
      return InternalError("ibverbs transport: message ", peer->recv_number, " from ", Label(peer->rank),
                           " came both through the slots and direct");
    }
    if (header.offset != request->progress) {
      return InternalError("ibverbs transport: chunk at offset ", header.offset, " from ", Label(peer->rank),
                           ", expected ", request->progress);
    }
    if (header.chunk_bytes > 0) {
      const uint8_t* bytes = slot + ib::kSlotHeaderBytes;
      if (request->combine != nullptr) {
        request->combine->fn(request->combine->context, header.offset, bytes, header.chunk_bytes);
      } else {
        std::memcpy(static_cast<uint8_t*>(request->buffer) + header.offset, bytes, header.chunk_bytes);
      }
    }
    peer->slots.Consumed();
    request->progress += header.chunk_bytes;
    ++request->lane;
    if (request->lane == ib::ChunkCount(request->bytes, payload)) {
      PopReceive(peer);
      request->done = true;
      *progressed = true;
    }
  }
  if (peer->slots.ShouldReturn()) {
    ib::ControlMessage credit;
    credit.kind = static_cast<uint32_t>(ib::ControlKind::kCredit);
    credit.value = peer->slots.consumed();
    // No room now: the count is cumulative, so a later one says it all.
    if (PostControl(peer, credit)) peer->slots.Return();
  }
  return error_;
}

Status IbTransport::Advance(Peer* peer, bool* progressed) {
  CHORUS_RETURN_IF_ERROR(ConsumeArrived(peer, progressed));
  if (peer->hello) OfferReceives(peer);
  CHORUS_RETURN_IF_ERROR(error_);
  CHORUS_RETURN_IF_ERROR(PushSends(peer, progressed));
  return Status::Ok();
}

Status IbTransport::HandleControl(Peer* peer, const ib::ControlMessage& message) {
  switch (static_cast<ib::ControlKind>(message.kind)) {
    case ib::ControlKind::kHello:
      if (message.slots != options_.slots || message.slot_bytes != options_.slot_bytes) {
        return InvalidArgument("ibverbs transport: ", Label(peer->rank), " has another ring geometry");
      }
      peer->hello = true;
      return Status::Ok();
    case ib::ControlKind::kRingRequest:
      return MakeRing(peer);
    case ib::ControlKind::kRing:
      if (!peer->ring_requested || message.address == 0) {
        return InternalError("ibverbs transport: ", Label(peer->rank), " sent a ring this rank did not ask for");
      }
      peer->remote_ring = message.address;
      peer->remote_rkey = message.rkey;
      return Status::Ok();
    case ib::ControlKind::kCredit:
      if (!peer->credits.Returned(message.value)) {
        return InternalError("ibverbs transport: ", Label(peer->rank), " returned credits for ", message.value,
                             " chunks, only ", peer->credits.written(), " written");
      }
      return Status::Ok();
    case ib::ControlKind::kProbe:
      return Status::Ok();
    case ib::ControlKind::kReady:
    case ib::ControlKind::kDecline: {
      ib::Offer offer;
      offer.declined = message.kind == static_cast<uint32_t>(ib::ControlKind::kDecline);
      offer.number = message.value;
      offer.tag = message.tag;
      offer.bytes = message.bytes;
      offer.address = message.address;
      offer.rkey = message.rkey;
      if (!peer->offers.Received(peer->send_number, offer)) {
        return InternalError("ibverbs transport: ", Label(peer->rank), " offered a buffer for message ", offer.number,
                             ", beyond its window (next message ", peer->send_number, ")");
      }
      return Status::Ok();
    }
    case ib::ControlKind::kClose: {
      peer->closed = true;
      uint64_t expected = 0;
      if (message.value != 0) received_notice_.compare_exchange_strong(expected, message.value);
      return Status::Ok();
    }
  }
  return InternalError("ibverbs transport: unknown control message ", message.kind, " from ", Label(peer->rank));
}

Status IbTransport::HandleCompletion(const ibv_wc& wc, bool* progressed) {
  const ib::WorkKind kind = ib::WorkKindOf(wc.wr_id);
  const uint32_t rank = ib::WorkPeerOf(wc.wr_id);
  const uint32_t index = ib::WorkIndexOf(wc.wr_id);
  if (rank >= peers_.size() || peers_[rank] == nullptr) {
    return InternalError("ibverbs transport: completion for unknown rank ", rank);
  }
  Peer* peer = peers_[rank].get();
  // Left by a QP since restarted (RestartQp): its requests are gone.
  if (ib::WorkEpochOf(wc.wr_id) != (peer->epoch & 0xffff)) return Status::Ok();
  if (kind != ib::WorkKind::kReceive) --peer->sends_outstanding;
  if (kind == ib::WorkKind::kControlSend) {
    ++peer->controls_completed;
    if (peer->control_buffers[index].kind == static_cast<uint32_t>(ib::ControlKind::kProbe)) peer->probing = false;
  }
  if (wc.status != IBV_WC_SUCCESS) {
    // The first real failure on a QP says why; the rest are flushed after it.
    if (peer->failure.empty() || (peer->failure_flushed && wc.status != IBV_WC_WR_FLUSH_ERR)) {
      peer->failure_flushed = wc.status == IBV_WC_WR_FLUSH_ERR;
      peer->failure = StrCat(kind == ib::WorkKind::kReceive ? "receive"
                             : kind == ib::WorkKind::kControlSend ? "control send"
                                                                  : "RDMA write",
                             ": ", ibv_wc_status_str(wc.status), " (vendor error ", wc.vendor_err, ")");
    }
    return Status::Ok();
  }
  peer->last_heard_ms = ib::NowMs();
  switch (kind) {
    case ib::WorkKind::kData:
      if (index < peer->completes_with_slot.size() && peer->completes_with_slot[index] != nullptr) {
        peer->completes_with_slot[index]->done = true;
        peer->completes_with_slot[index] = nullptr;
        *progressed = true;
      }
      return Status::Ok();
    case ib::WorkKind::kDirect:
      if (index < ib::kOfferWindow && peer->completes_with_direct[index] != nullptr) {
        peer->completes_with_direct[index]->done = true;
        peer->completes_with_direct[index] = nullptr;
        *progressed = true;
      }
      return Status::Ok();
    case ib::WorkKind::kControlSend:
      return Status::Ok();
    case ib::WorkKind::kReceive:
      if (index >= max_recv_wr_) return InternalError("ibverbs transport: bad receive index ", index);
      if (wc.opcode == IBV_WC_RECV_RDMA_WITH_IMM && ib::IsDirectImm(ntohl(wc.imm_data))) {
        if (!peer->direct_arrivals.Arrived(peer->recv_number, ntohl(wc.imm_data))) {
          return InternalError("ibverbs transport: ", Label(peer->rank), " wrote a message it was offered no buffer for");
        }
      } else if (wc.opcode == IBV_WC_RECV_RDMA_WITH_IMM) {
        if (!peer->slots.Arrived()) {
          return InternalError("ibverbs transport: ", Label(peer->rank), " wrote beyond its credits");
        }
      } else if (wc.opcode == IBV_WC_RECV) {
        CHORUS_RETURN_IF_ERROR(HandleControl(peer, peer->receive_buffers[index]));
      }
      return PostReceive(peer, index);
  }
  return InternalError("ibverbs transport: completion of unknown kind for ", Label(peer->rank));
}

int IbTransport::PollCompletions(bool* progressed, Status* status) {
  int total = 0;
  ibv_wc wcs[kPollBatch];
  for (int round = 0; round < kPollRounds; ++round) {
    const int n = ibv_poll_cq(cq_, kPollBatch, wcs);
    if (n < 0) {
      *status = SystemError("ibverbs transport: ibv_poll_cq on ", device_.label(), " failed");
      return total;
    }
    for (int i = 0; i < n; ++i) {
      const Status handled = HandleCompletion(wcs[i], progressed);
      if (!handled.ok() && status->ok()) *status = handled;
    }
    total += n;
    if (n < kPollBatch) break;
  }
  return total;
}

Status IbTransport::CheckPeers() {
  const int64_t now = ib::NowMs();
  for (auto& owned : peers_) {
    Peer* peer = owned.get();
    if (peer == nullptr || !peer->connected) continue;
    // As with TCP, a peer that is gone fails us only while something to or
    // from it is pending (what already arrived still serves receives).
    const bool stuck_recv = peer->recv_head != nullptr && !peer->receive_ready();
    const bool stuck = stuck_recv || peer->send_head != nullptr;
    if (!peer->failure.empty() && peer->waiting()) {
      return RemoteError("ibverbs transport: ", Label(peer->rank), " failed: ", peer->failure);
    }
    if (peer->closed && stuck) {
      CloseNotice notice;
      const bool noticed = DecodeCloseNotice(received_notice_.load(), &notice);
      return RemoteError("ibverbs transport: ", Label(peer->rank), " closed the connection",
                         noticed ? StrCat(" (closing notice from rank ", notice.origin, ")") : std::string());
    }
    // Only a sender learns that an RC peer died: probe one we wait on.
    if (peer->waiting() && !peer->probing && now - peer->last_heard_ms >= kProbeIntervalMs) {
      ib::ControlMessage probe;
      probe.kind = static_cast<uint32_t>(ib::ControlKind::kProbe);
      if (PostControl(peer, probe)) {
        peer->probing = true;
        peer->last_heard_ms = now;
      }
      CHORUS_RETURN_IF_ERROR(error_);
    }
  }
  return Status::Ok();
}

Status IbTransport::Drive(bool* progressed) {
  Status status;
  PollCompletions(progressed, &status);
  CHORUS_RETURN_IF_ERROR(status);
  for (auto& peer : peers_) {
    if (peer != nullptr && peer->connected) CHORUS_RETURN_IF_ERROR(Advance(peer.get(), progressed));
  }
  return CheckPeers();
}

Status IbTransport::ArmCompletionEvent(bool* found) {
  if (ibv_req_notify_cq(cq_, 0) != 0) return SystemError("ibverbs transport: ibv_req_notify_cq failed");
  // Completions that came between the last poll and arming raise no event.
  bool progressed = false;
  Status status;
  *found = PollCompletions(&progressed, &status) > 0;
  return status;
}

void IbTransport::TakeCompletionEvents() {
  ibv_cq* cq = nullptr;
  void* context = nullptr;
  while (ibv_get_cq_event(channel_, &cq, &context) == 0) ++unacked_events_;
  if (unacked_events_ >= 64) {
    ibv_ack_cq_events(cq_, unacked_events_);
    unacked_events_ = 0;
  }
}

Status IbTransport::Sleep(std::unique_lock<std::mutex>& lock, int timeout_ms) {
  bool found = false;
  CHORUS_RETURN_IF_ERROR(ArmCompletionEvent(&found));
  if (found) return Status::Ok();
  pollfd fds[2] = {{channel_->fd, POLLIN, 0}, {wakeup_.fd(), POLLIN, 0}};
  lock.unlock();
  const int ready = ::poll(fds, 2, timeout_ms);
  const int poll_errno = errno;
  if (fds[1].revents != 0) DrainWakeupFd(wakeup_.fd());
  lock.lock();
  if (ready < 0 && poll_errno != EINTR) return ErrnoError(poll_errno, "poll(completion channel)");
  if (fds[0].revents != 0 && !torn_down_) TakeCompletionEvents();
  return Status::Ok();
}

Status IbTransport::ArmWait(bool look_only, WaitArm* arm) {
  *arm = WaitArm();
  std::lock_guard<std::mutex> lock(mutex_);
  if (!error_.ok()) return error_;
  if (shut_down_.load()) return Fail(InvalidUsage("ibverbs transport was shut down"));
  if (!connected_) return InvalidUsage("ibverbs transport: ArmWait before Connect");
  bool progressed = false;
  Status status = Drive(&progressed);
  if (!status.ok()) return Fail(status);
  arm->fd = wait_set_.fd();
  arm->max_sleep_ms = kProbeIntervalMs;  // wake in time to probe a silent peer we wait on
  bool found = progressed;
  if (!found && !look_only) status = ArmCompletionEvent(&found);
  if (!status.ok()) return Fail(status);
  arm->ready = found;
  return Status::Ok();
}

void IbTransport::DisarmWait() {
  std::lock_guard<std::mutex> lock(mutex_);
  DrainWakeupFd(wakeup_.fd());
  if (!torn_down_) TakeCompletionEvents();
}

Status IbTransport::Progress(int timeout_ms) {
  std::unique_lock<std::mutex> lock(mutex_);
  if (!error_.ok()) return error_;
  if (shut_down_.load()) return Fail(InvalidUsage("ibverbs transport was shut down"));
  if (!connected_) return InvalidUsage("ibverbs transport: Progress before Connect");
  bool progressed = false;
  Status status = Drive(&progressed);
  if (!status.ok()) return Fail(status);
  if (progressed || timeout_ms <= 0) return Status::Ok();
  // Wake in time to probe a silent peer we wait on.
  status = Sleep(lock, std::min(timeout_ms, kProbeIntervalMs));
  if (!status.ok()) return Fail(status);
  if (shut_down_.load()) return Fail(InvalidUsage("ibverbs transport was shut down"));
  status = Drive(&progressed);
  return status.ok() ? status : Fail(status);
}

void IbTransport::Wakeup() { SignalWakeupFd(wakeup_.fd()); }

IbTransport::RingCounts IbTransport::ring_counts() {
  std::lock_guard<std::mutex> lock(mutex_);
  RingCounts counts;
  for (const auto& peer : peers_) {
    if (peer == nullptr) continue;
    counts.rings += peer->ring_region != nullptr;
    counts.staging += peer->staging_region != nullptr;
  }
  return counts;
}

}  // namespace chorus
