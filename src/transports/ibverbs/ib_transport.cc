#include "transports/ibverbs/ib_transport.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <random>

namespace chorus {

namespace {

// How long a peer may stay silent while we wait on it before we probe it.
constexpr int kProbeIntervalMs = 1000;
// Control SENDs in flight per peer (credits, probes, hello, close).
constexpr uint32_t kControlSendSlots = 8;
// Completions reaped per ibv_poll_cq, and batches per Drive (bounded, so a
// peer streaming at us does not keep its chunks from being consumed).
constexpr int kPollBatch = 32;
constexpr int kPollRounds = 8;
// How long Teardown waits for the closing notices to be acknowledged.
constexpr int kCloseFlushMs = 1000;
constexpr int kErrorCloseFlushMs = 200;

int64_t NowMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

ibv_mtu MinMtu(ibv_mtu a, ibv_mtu b) { return a < b ? a : b; }

}  // namespace

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
    if (qp != nullptr) ibv_destroy_qp(qp);
  }
  IbEndpoint endpoint;
  int rank;
  ibv_qp* qp = nullptr;
  bool connected = false;  // routed to this transport and brought up
  bool hello = false;      // its hello arrived: we know where to write
  uint64_t remote_ring = 0;
  uint32_t remote_rkey = 0;
  ib::SenderCredits credits;
  ib::ReceiverSlots slots;
  uint8_t* ring = nullptr;     // its slots in rings_
  uint8_t* staging = nullptr;  // our staging slots for it
  ib::ControlMessage* receive_buffers = nullptr;  // max_recv_wr_ of them
  ib::ControlMessage* control_buffers = nullptr;  // kControlSendSlots of them
  uint64_t controls_posted = 0;
  uint64_t controls_completed = 0;
  uint32_t sends_outstanding = 0;  // send WRs not yet completed
  // A zero-copy send whose last chunk went from slot s completes with it.
  std::vector<TransferRequest*> completes_with_slot;
  TransferRequest* send_head = nullptr;
  TransferRequest* send_tail = nullptr;
  TransferRequest* recv_head = nullptr;
  TransferRequest* recv_tail = nullptr;
  int64_t last_heard_ms = 0;
  bool probing = false;
  bool closed = false;   // its closing notice arrived
  std::string failure;   // a work request on its QP failed: why
  bool failure_flushed = false;  // only flushed so far, the cause may follow
  bool waiting() const { return send_head != nullptr || recv_head != nullptr; }
};

Status CreateIbTransport(const IbOptions& options, std::unique_ptr<Transport>* transport) {
  if (options.nranks < 1 || options.rank < 0 || options.rank >= options.nranks) {
    return InvalidArgument("ibverbs transport: rank ", options.rank, " out of range for ", options.nranks, " ranks");
  }
  if (options.nranks > (1 << 24)) return InvalidArgument("ibverbs transport: at most 2^24 ranks");
  std::unique_ptr<IbTransport> created(new IbTransport(options));
  created->options_.topology = nullptr;  // not read, and the caller's does not outlive creation
  CHORUS_RETURN_IF_ERROR(created->Init());
  *transport = std::move(created);
  return Status::Ok();
}

IbTransport::IbTransport(const IbOptions& options) : options_(options) {}

TransportCapabilities IbTransport::capabilities() const {
  TransportCapabilities capabilities;
  capabilities.combine_on_receive = true;
  return capabilities;
}

std::string IbTransport::Label(int rank) const { return StrCat("rank ", rank, " (over ", device_.label(), ")"); }

Status IbTransport::Init() {
  ib::HcaFilter filter;
  CHORUS_RETURN_IF_ERROR(ib::HcaFilter::Parse(options_.hca, &filter));
  CHORUS_RETURN_IF_ERROR(device_.Open(filter, options_.gid_index, options_.local_rank));
  const ibv_device_attr& attr = device_.device_attr();
  max_send_wr_ = options_.slots + kControlSendSlots + 2;
  // Data chunks (at most `slots` unconsumed) and the peer's control messages
  // between two polls; RNR retries cover a burst beyond it.
  max_recv_wr_ = 2 * options_.slots + 16;
  if (static_cast<int>(std::max(max_send_wr_, max_recv_wr_)) > attr.max_qp_wr) {
    return InvalidArgument("ibverbs transport: CHORUS_IB_SLOTS=", options_.slots, " needs ", max_recv_wr_,
                           " work requests per queue pair; ", device_.name(), " allows ", attr.max_qp_wr);
  }
  const int64_t cqes = static_cast<int64_t>(options_.nranks - 1) * (max_send_wr_ + max_recv_wr_) + 1;
  if (cqes > attr.max_cqe) {
    return InvalidArgument("ibverbs transport: ", options_.nranks, " ranks with CHORUS_IB_SLOTS=", options_.slots,
                           " need a completion queue of ", cqes, " entries; ", device_.name(), " allows ",
                           attr.max_cqe, " (lower CHORUS_IB_SLOTS)");
  }
  channel_ = ibv_create_comp_channel(device_.context());
  if (channel_ == nullptr) return ErrnoError(errno, StrCat("ibv_create_comp_channel(", device_.name(), ")"));
  const int flags = ::fcntl(channel_->fd, F_GETFL);
  if (flags < 0 || ::fcntl(channel_->fd, F_SETFL, flags | O_NONBLOCK) < 0) {
    return ErrnoError(errno, "fcntl(completion channel)");
  }
  cq_ = ibv_create_cq(device_.context(), static_cast<int>(cqes), nullptr, channel_, 0);
  if (cq_ == nullptr) return ErrnoError(errno, StrCat("ibv_create_cq(", device_.name(), ", ", cqes, ")"));
  wakeup_ = Socket(::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC));
  if (!wakeup_.valid()) return ErrnoError(errno, "eventfd");
  psn_ = std::random_device()() & 0xffffff;

  ib::ConnectionBlob blob;
  blob.port = static_cast<uint8_t>(device_.port());
  blob.mtu = static_cast<uint8_t>(device_.port_attr().active_mtu);
  blob.link_layer = device_.port_attr().link_layer;
  blob.lid = device_.port_attr().lid;
  std::memcpy(blob.gid, device_.gid().raw, 16);
  blob.psn = psn_;
  blob.slot_bytes = options_.slot_bytes;
  blob.slots = options_.slots;
  blob.qpn.assign(options_.nranks, 0);
  peers_.resize(options_.nranks);
  for (int rank = 0; rank < options_.nranks; ++rank) {
    if (rank == options_.rank) continue;
    auto peer = std::make_unique<Peer>(this, rank);
    ibv_qp_init_attr init = {};
    init.send_cq = cq_;
    init.recv_cq = cq_;
    init.qp_type = IBV_QPT_RC;
    init.cap.max_send_wr = max_send_wr_;
    init.cap.max_recv_wr = max_recv_wr_;
    init.cap.max_send_sge = 2;  // slot header + a registered user buffer in place
    init.cap.max_recv_sge = 1;
    peer->qp = ibv_create_qp(device_.pd(), &init);
    if (peer->qp == nullptr) return ErrnoError(errno, StrCat("ibv_create_qp(", device_.name(), ") for rank ", rank));
    ibv_qp_attr attr_init = {};
    attr_init.qp_state = IBV_QPS_INIT;
    attr_init.pkey_index = 0;
    attr_init.port_num = static_cast<uint8_t>(device_.port());
    attr_init.qp_access_flags = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE;
    const int err = ibv_modify_qp(peer->qp, &attr_init,
                                  IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS);
    if (err != 0) return ErrnoError(err, StrCat("ibverbs transport: QP for rank ", rank, " to INIT"));
    blob.qpn[rank] = peer->qp->qp_num;
    peers_[rank] = std::move(peer);
  }
  local_address_ = blob.Encode();
  return Status::Ok();
}

IbTransport::~IbTransport() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    Teardown();
  }
  peers_.clear();  // QPs before the CQ and the memory they use
  rings_.reset();
  staging_.reset();
  if (cq_ != nullptr) {
    if (unacked_events_ > 0) ibv_ack_cq_events(cq_, unacked_events_);
    ibv_destroy_cq(cq_);
  }
  if (channel_ != nullptr) ibv_destroy_comp_channel(channel_);
}

namespace {

Status AllocateRegion(ibv_pd* pd, size_t bytes, int access, const char* what, std::unique_ptr<uint8_t, void (*)(void*)>* base,
                      ibv_mr** mr) {
  void* memory = nullptr;
  if (posix_memalign(&memory, 4096, bytes) != 0) return SystemError("ibverbs transport: out of memory for ", what);
  std::memset(memory, 0, bytes);
  base->reset(static_cast<uint8_t*>(memory));
  *mr = ibv_reg_mr(pd, memory, bytes, access);
  if (*mr == nullptr) return ErrnoError(errno, StrCat("ibverbs transport: ibv_reg_mr of ", bytes, " bytes for ", what));
  return Status::Ok();
}

}  // namespace

Status IbTransport::Connect(const std::vector<std::string>& addresses, Deadline deadline) {
  std::unique_lock<std::mutex> lock(mutex_);
  if (connected_) return InvalidUsage("ibverbs transport: Connect called twice");
  if (shut_down_.load()) return InvalidUsage("ibverbs transport shut down before connecting");
  if (static_cast<int>(addresses.size()) != options_.nranks) {
    return InvalidArgument("ibverbs transport: ", addresses.size(), " addresses for ", options_.nranks, " ranks");
  }
  std::vector<ib::ConnectionBlob> blobs(options_.nranks);
  std::vector<Peer*> routed;
  for (int rank = 0; rank < options_.nranks; ++rank) {
    if (rank == options_.rank) continue;
    if (addresses[rank].empty()) {
      peers_[rank].reset();  // served by another transport: its QP goes
      continue;
    }
    ib::ConnectionBlob& blob = blobs[rank];
    CHORUS_RETURN_IF_ERROR(ib::ConnectionBlob::Decode(addresses[rank], &blob).WithContext(StrCat("rank ", rank)));
    if (static_cast<int>(blob.qpn.size()) != options_.nranks) {
      return InvalidArgument("ibverbs transport: rank ", rank, " has ", blob.qpn.size(), " ranks, we have ",
                             options_.nranks);
    }
    if (blob.slot_bytes != options_.slot_bytes || blob.slots != options_.slots) {
      return InvalidArgument("ibverbs transport: rank ", rank, " uses CHORUS_IB_SLOTS=", blob.slots,
                             " CHORUS_IB_SLOT_BYTES=", blob.slot_bytes, ", this rank ", options_.slots, " and ",
                             options_.slot_bytes, ": set them alike on every rank");
    }
    if (blob.link_layer != device_.port_attr().link_layer) {
      return InvalidArgument("ibverbs transport: rank ", rank, "'s port is ",
                             blob.link_layer == IBV_LINK_LAYER_ETHERNET ? "RoCE" : "InfiniBand", ", ",
                             device_.label(), " is not");
    }
    routed.push_back(peers_[rank].get());
  }
  // One allocation each for every routed peer's receive ring, and for our
  // staging slots plus control buffers.
  const size_t ring_bytes = static_cast<size_t>(options_.slots) * options_.slot_bytes;
  const size_t control_bytes = sizeof(ib::ControlMessage) * (max_recv_wr_ + kControlSendSlots);
  const size_t staging_stride = ring_bytes + ((control_bytes + 4095) & ~size_t{4095});
  if (!routed.empty()) {
    std::unique_ptr<uint8_t, void (*)(void*)> ring_base(nullptr, std::free), staging_base(nullptr, std::free);
    rings_ = std::make_unique<MemoryRegion>();
    staging_ = std::make_unique<MemoryRegion>();
    Status status = AllocateRegion(device_.pd(), routed.size() * ring_bytes,
                                   IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE, "receive rings", &ring_base,
                                   &rings_->mr);
    rings_->base = ring_base.release();
    CHORUS_RETURN_IF_ERROR(Fail(status));
    status = AllocateRegion(device_.pd(), routed.size() * staging_stride, IBV_ACCESS_LOCAL_WRITE, "staging slots",
                            &staging_base, &staging_->mr);
    staging_->base = staging_base.release();
    CHORUS_RETURN_IF_ERROR(Fail(status));
  }
  for (size_t i = 0; i < routed.size(); ++i) {
    Peer* peer = routed[i];
    peer->ring = rings_->base + i * ring_bytes;
    peer->staging = staging_->base + i * staging_stride;
    peer->receive_buffers = reinterpret_cast<ib::ControlMessage*>(peer->staging + ring_bytes);
    peer->control_buffers = peer->receive_buffers + max_recv_wr_;
    peer->credits = ib::SenderCredits(options_.slots);
    peer->slots = ib::ReceiverSlots(options_.slots);
    peer->completes_with_slot.assign(options_.slots, nullptr);
    CHORUS_RETURN_IF_ERROR(Fail(BringUp(peer, blobs[peer->rank])));
  }
  connected_ = true;
  // Hellos: the ring's address and key, and proof that both QPs are up (a
  // peer not yet ready is retried by RC within CHORUS_IB_TIMEOUT's retries).
  for (Peer* peer : routed) {
    ib::ControlMessage hello;
    hello.kind = static_cast<uint32_t>(ib::ControlKind::kHello);
    hello.slots = options_.slots;
    hello.slot_bytes = options_.slot_bytes;
    hello.address = reinterpret_cast<uintptr_t>(peer->ring);
    hello.rkey = rings_->mr->rkey;
    if (!PostControl(peer, hello)) return Fail(InternalError("ibverbs transport: could not post the hello"));
    if (!error_.ok()) return error_;
  }
  while (true) {
    bool progressed = false;
    CHORUS_RETURN_IF_ERROR(Drive(&progressed));
    std::string missing;
    for (Peer* peer : routed) {
      if (!peer->failure.empty()) {
        return Fail(RemoteError("ibverbs transport: connecting to ", Label(peer->rank), " failed: ", peer->failure));
      }
      if (!peer->hello) missing += StrCat(missing.empty() ? "" : ", ", peer->rank);
    }
    if (missing.empty()) return Status::Ok();
    if (deadline.Expired()) {
      return Fail(TimeoutError("ibverbs transport: no hello from rank(s) ", missing, " over ", device_.label(),
                               " within the deadline"));
    }
    CHORUS_RETURN_IF_ERROR(Fail(Sleep(lock, deadline.RemainingMs(100))));
  }
}

Status IbTransport::BringUp(Peer* peer, const ib::ConnectionBlob& remote) {
  for (uint32_t index = 0; index < max_recv_wr_; ++index) CHORUS_RETURN_IF_ERROR(PostReceive(peer, index));
  ibv_qp_attr attr = {};
  attr.qp_state = IBV_QPS_RTR;
  attr.path_mtu = MinMtu(device_.port_attr().active_mtu, static_cast<ibv_mtu>(remote.mtu));
  attr.dest_qp_num = remote.qpn[options_.rank];
  attr.rq_psn = remote.psn;
  attr.max_dest_rd_atomic = 1;
  attr.min_rnr_timer = 12;  // 0.64 ms
  attr.ah_attr.port_num = static_cast<uint8_t>(device_.port());
  attr.ah_attr.dlid = remote.lid;
  if (device_.port_attr().link_layer == IBV_LINK_LAYER_ETHERNET) {
    // RoCE routes by GID; InfiniBand within a subnet by LID (as NCCL).
    attr.ah_attr.is_global = 1;
    std::memcpy(attr.ah_attr.grh.dgid.raw, remote.gid, 16);
    attr.ah_attr.grh.sgid_index = static_cast<uint8_t>(device_.gid_index());
    attr.ah_attr.grh.hop_limit = 255;
  }
  int err = ibv_modify_qp(peer->qp, &attr,
                          IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
                              IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER);
  if (err != 0) return ErrnoError(err, StrCat("ibverbs transport: QP to ", Label(peer->rank), " to RTR"));
  attr = {};
  attr.qp_state = IBV_QPS_RTS;
  attr.timeout = static_cast<uint8_t>(options_.ack_timeout);
  attr.retry_cnt = static_cast<uint8_t>(options_.retry_count);
  attr.rnr_retry = 7;  // infinite: a receiver short of receive buffers catches up
  attr.sq_psn = psn_;
  attr.max_rd_atomic = 1;
  err = ibv_modify_qp(peer->qp, &attr,
                      IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY | IBV_QP_SQ_PSN |
                          IBV_QP_MAX_QP_RD_ATOMIC);
  if (err != 0) return ErrnoError(err, StrCat("ibverbs transport: QP to ", Label(peer->rank), " to RTS"));
  peer->connected = true;
  peer->last_heard_ms = NowMs();
  return Status::Ok();
}

Endpoint* IbTransport::endpoint(int peer) {
  if (peer < 0 || peer >= options_.nranks || peers_[peer] == nullptr || !peers_[peer]->connected) return nullptr;
  return &peers_[peer]->endpoint;
}

Status IbTransport::PostReceive(Peer* peer, uint32_t index) {
  ibv_sge sge = {};
  sge.addr = reinterpret_cast<uintptr_t>(&peer->receive_buffers[index]);
  sge.length = sizeof(ib::ControlMessage);
  sge.lkey = staging_->mr->lkey;
  ibv_recv_wr wr = {};
  wr.wr_id = ib::WorkId(ib::WorkKind::kReceive, peer->rank, index);
  wr.sg_list = &sge;
  wr.num_sge = 1;
  ibv_recv_wr* bad = nullptr;
  const int err = ibv_post_recv(peer->qp, &wr, &bad);
  if (err != 0) return ErrnoError(err, StrCat("ibverbs transport: ibv_post_recv for ", Label(peer->rank)));
  return Status::Ok();
}

bool IbTransport::PostControl(Peer* peer, const ib::ControlMessage& message) {
  if (peer->sends_outstanding >= max_send_wr_ || peer->controls_posted - peer->controls_completed >= kControlSendSlots) {
    return false;
  }
  const uint32_t index = static_cast<uint32_t>(peer->controls_posted % kControlSendSlots);
  peer->control_buffers[index] = message;
  ibv_sge sge = {};
  sge.addr = reinterpret_cast<uintptr_t>(&peer->control_buffers[index]);
  sge.length = sizeof(ib::ControlMessage);
  sge.lkey = staging_->mr->lkey;
  ibv_send_wr wr = {};
  wr.wr_id = ib::WorkId(ib::WorkKind::kControlSend, peer->rank, index);
  wr.sg_list = &sge;
  wr.num_sge = 1;
  wr.opcode = IBV_WR_SEND;
  wr.send_flags = IBV_SEND_SIGNALED;
  ibv_send_wr* bad = nullptr;
  const int err = ibv_post_send(peer->qp, &wr, &bad);
  if (err != 0) {
    if (error_.ok()) error_ = ErrnoError(err, StrCat("ibverbs transport: ibv_post_send to ", Label(peer->rank)));
    return false;
  }
  ++peer->controls_posted;
  ++peer->sends_outstanding;
  return true;
}

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
  // Start at once: a send needs no Progress to leave if credits allow.
  bool progressed = false;
  const Status status = Advance(peer, &progressed);
  return status.ok() ? status : Fail(status);
}

Status IbTransport::PushSends(Peer* peer, bool* progressed) {
  const uint64_t payload = options_.slot_bytes - ib::kSlotHeaderBytes;
  // Room is kept for control messages: credits must flow even while we stream.
  while (peer->send_head != nullptr && peer->hello && peer->credits.available() > 0 &&
         peer->sends_outstanding + kControlSendSlots < max_send_wr_) {
    TransferRequest* request = peer->send_head;
    const uint64_t chunks = ib::ChunkCount(request->bytes, payload);
    const uint64_t chunk = request->lane;
    const uint64_t bytes = ib::ChunkBytes(request->bytes, payload, chunk);
    const uint32_t slot = peer->credits.NextSlot();
    uint8_t* staging = peer->staging + static_cast<size_t>(slot) * options_.slot_bytes;
    ib::SlotHeader header;
    header.tag = request->tag;
    header.message_bytes = request->bytes;
    header.offset = chunk * payload;
    header.chunk_bytes = static_cast<uint32_t>(bytes);
    header.sequence = static_cast<uint32_t>(peer->credits.written());
    std::memcpy(staging, &header, sizeof(header));
    const uint8_t* source = static_cast<const uint8_t*>(request->buffer) + header.offset;
    ibv_sge sge[2] = {};
    sge[0].addr = reinterpret_cast<uintptr_t>(staging);
    sge[0].lkey = staging_->mr->lkey;
    int num_sge = 1;
    // In place from a registration covering the chunk, else through staging.
    const auto* user_mr = static_cast<const ibv_mr*>(request->memory.For(this).data);
    const bool in_place = user_mr != nullptr && bytes > 0 &&
                          reinterpret_cast<uintptr_t>(source) >= reinterpret_cast<uintptr_t>(user_mr->addr) &&
                          reinterpret_cast<uintptr_t>(source) + bytes <=
                              reinterpret_cast<uintptr_t>(user_mr->addr) + user_mr->length;
    if (in_place) {
      sge[0].length = ib::kSlotHeaderBytes;
      sge[1].addr = reinterpret_cast<uintptr_t>(source);
      sge[1].length = static_cast<uint32_t>(bytes);
      sge[1].lkey = user_mr->lkey;
      num_sge = 2;
    } else {
      if (bytes > 0) std::memcpy(staging + ib::kSlotHeaderBytes, source, bytes);
      sge[0].length = static_cast<uint32_t>(ib::kSlotHeaderBytes + bytes);
    }
    ibv_send_wr wr = {};
    wr.wr_id = ib::WorkId(ib::WorkKind::kData, peer->rank, slot);
    wr.sg_list = sge;
    wr.num_sge = num_sge;
    wr.opcode = IBV_WR_RDMA_WRITE_WITH_IMM;
    wr.send_flags = IBV_SEND_SIGNALED;
    wr.imm_data = htonl(header.sequence);
    wr.wr.rdma.remote_addr = peer->remote_ring + static_cast<uint64_t>(slot) * options_.slot_bytes;
    wr.wr.rdma.rkey = peer->remote_rkey;
    ibv_send_wr* bad = nullptr;
    const int err = ibv_post_send(peer->qp, &wr, &bad);
    if (err != 0) return ErrnoError(err, StrCat("ibverbs transport: ibv_post_send to ", Label(peer->rank)));
    peer->credits.Wrote();
    ++peer->sends_outstanding;
    ++request->lane;
    request->progress += bytes;
    if (request->lane == chunks) {
      peer->send_head = request->next;
      if (peer->send_head == nullptr) peer->send_tail = nullptr;
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
  return Status::Ok();
}

Status IbTransport::ConsumeArrived(Peer* peer, bool* progressed) {
  const uint64_t payload = options_.slot_bytes - ib::kSlotHeaderBytes;
  while (peer->recv_head != nullptr && peer->slots.ready() > 0) {
    TransferRequest* request = peer->recv_head;
    const uint8_t* slot = peer->ring + static_cast<size_t>(peer->slots.NextSlot()) * options_.slot_bytes;
    ib::SlotHeader header;
    std::memcpy(&header, slot, sizeof(header));
    if (header.sequence != static_cast<uint32_t>(peer->slots.consumed()) || header.chunk_bytes > payload) {
      return InternalError("ibverbs transport: corrupt chunk from ", Label(peer->rank), " (sequence ",
                           header.sequence, ", expected ", static_cast<uint32_t>(peer->slots.consumed()), ")");
    }
    if (header.tag != request->tag || header.message_bytes != request->bytes) {
      return InternalError("message mismatch with ", Label(peer->rank), ": expected tag ", request->tag, " with ",
                           request->bytes, " bytes, got tag ", header.tag, " with ", header.message_bytes, " bytes");
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
      peer->recv_head = request->next;
      if (peer->recv_head == nullptr) peer->recv_tail = nullptr;
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
  CHORUS_RETURN_IF_ERROR(PushSends(peer, progressed));
  return Status::Ok();
}

Status IbTransport::HandleControl(Peer* peer, const ib::ControlMessage& message) {
  switch (static_cast<ib::ControlKind>(message.kind)) {
    case ib::ControlKind::kHello:
      if (message.slots != options_.slots || message.slot_bytes != options_.slot_bytes) {
        return InvalidArgument("ibverbs transport: ", Label(peer->rank), " has another ring geometry");
      }
      peer->remote_ring = message.address;
      peer->remote_rkey = message.rkey;
      peer->hello = true;
      return Status::Ok();
    case ib::ControlKind::kCredit:
      if (!peer->credits.Returned(message.value)) {
        return InternalError("ibverbs transport: ", Label(peer->rank), " returned credits for ", message.value,
                             " chunks, only ", peer->credits.written(), " written");
      }
      return Status::Ok();
    case ib::ControlKind::kProbe:
      return Status::Ok();
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
  if (kind != ib::WorkKind::kReceive) --peer->sends_outstanding;
  if (kind == ib::WorkKind::kControlSend) {
    ++peer->controls_completed;
    if (peer->control_buffers[index].kind == static_cast<uint32_t>(ib::ControlKind::kProbe)) peer->probing = false;
  }
  if (wc.status != IBV_WC_SUCCESS) {
    // The first real failure on a QP says why; the rest are flushed after it.
    if (peer->failure.empty() || (peer->failure_flushed && wc.status != IBV_WC_WR_FLUSH_ERR)) {
      peer->failure_flushed = wc.status == IBV_WC_WR_FLUSH_ERR;
      peer->failure = StrCat(kind == ib::WorkKind::kReceive ? "receive" : kind == ib::WorkKind::kData ? "RDMA write"
                                                                                                       : "control send",
                             ": ", ibv_wc_status_str(wc.status), " (vendor error ", wc.vendor_err, ")");
    }
    return Status::Ok();
  }
  peer->last_heard_ms = NowMs();
  switch (kind) {
    case ib::WorkKind::kData:
      if (index < peer->completes_with_slot.size() && peer->completes_with_slot[index] != nullptr) {
        peer->completes_with_slot[index]->done = true;
        peer->completes_with_slot[index] = nullptr;
        *progressed = true;
      }
      return Status::Ok();
    case ib::WorkKind::kControlSend:
      return Status::Ok();
    case ib::WorkKind::kReceive:
      if (index >= max_recv_wr_) return InternalError("ibverbs transport: bad receive index ", index);
      if (wc.opcode == IBV_WC_RECV_RDMA_WITH_IMM) {
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
  const int64_t now = NowMs();
  for (auto& owned : peers_) {
    Peer* peer = owned.get();
    if (peer == nullptr || !peer->connected) continue;
    // As with TCP, a peer that is gone fails us only while something to or
    // from it is pending (what already arrived still serves receives).
    const bool stuck_recv = peer->recv_head != nullptr && peer->slots.ready() == 0;
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

Status IbTransport::Sleep(std::unique_lock<std::mutex>& lock, int timeout_ms) {
  if (ibv_req_notify_cq(cq_, 0) != 0) return SystemError("ibverbs transport: ibv_req_notify_cq failed");
  // Completions that came between the last poll and arming raise no event.
  bool progressed = false;
  Status status;
  if (PollCompletions(&progressed, &status) > 0 || !status.ok()) return status;
  pollfd fds[2] = {{channel_->fd, POLLIN, 0}, {wakeup_.fd(), POLLIN, 0}};
  lock.unlock();
  const int ready = ::poll(fds, 2, timeout_ms);
  const int poll_errno = errno;
  if (fds[1].revents != 0) {
    uint64_t ignored;
    while (::read(wakeup_.fd(), &ignored, sizeof(ignored)) > 0) {
    }
  }
  lock.lock();
  if (ready < 0 && poll_errno != EINTR) return ErrnoError(poll_errno, "poll(completion channel)");
  if (fds[0].revents != 0 && !torn_down_) {
    ibv_cq* cq = nullptr;
    void* context = nullptr;
    while (ibv_get_cq_event(channel_, &cq, &context) == 0) ++unacked_events_;
    if (unacked_events_ >= 64) {
      ibv_ack_cq_events(cq_, unacked_events_);
      unacked_events_ = 0;
    }
  }
  return Status::Ok();
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

void IbTransport::Wakeup() {
  const uint64_t one = 1;
  [[maybe_unused]] ssize_t ignored = ::write(wakeup_.fd(), &one, sizeof(one));
}

Status IbTransport::Fail(Status status) {
  if (status.ok()) return status;
  if (error_.ok()) error_ = status;
  Teardown();
  return error_;
}

void IbTransport::Shutdown() {
  if (shut_down_.exchange(true)) return;
  Wakeup();  // a Progress sleeping in poll() returns and releases the mutex
  std::lock_guard<std::mutex> lock(mutex_);
  Teardown();
}

void IbTransport::ShutdownWithNotice(const CloseNotice& notice) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (outgoing_notice_.reason == 0) outgoing_notice_ = notice;
  }
  Shutdown();
}

bool IbTransport::ReceivedNotice(CloseNotice* notice) const {
  return DecodeCloseNotice(received_notice_.load(std::memory_order_relaxed), notice);
}

void IbTransport::Teardown() {
  if (torn_down_) return;
  torn_down_ = true;
  shut_down_.store(true);
  for (auto& peer : peers_) {
    if (peer == nullptr) continue;
    peer->send_head = peer->send_tail = peer->recv_head = peer->recv_tail = nullptr;
    std::fill(peer->completes_with_slot.begin(), peer->completes_with_slot.end(), nullptr);
  }
  if (!connected_) return;
  // Every live peer hears that we close, with our notice, or the one we
  // failed by (a notice spreads as failures do).
  uint64_t notice = outgoing_notice_.reason != 0 ? EncodeCloseNotice(outgoing_notice_) : received_notice_.load();
  const Status saved = error_;
  for (auto& peer : peers_) {
    if (peer == nullptr || !peer->connected || !peer->failure.empty() || !peer->hello) continue;
    ib::ControlMessage close;
    close.kind = static_cast<uint32_t>(ib::ControlKind::kClose);
    close.value = notice;
    PostControl(peer.get(), close);
  }
  error_ = saved;
  // Until the notices are acknowledged (or the time is up), so that they
  // are not lost with our QPs.
  const Deadline deadline = Deadline::AfterMs(error_.ok() ? kCloseFlushMs : kErrorCloseFlushMs);
  while (!deadline.Expired()) {
    bool pending = false;
    for (auto& peer : peers_) {
      pending = pending || (peer != nullptr && peer->connected && peer->failure.empty() && peer->sends_outstanding > 0);
    }
    if (!pending) break;
    bool progressed = false;
    Status ignored;
    if (PollCompletions(&progressed, &ignored) == 0) ::usleep(100);
  }
  // Stopped QPs neither read the caller's buffers nor write ours any more.
  for (auto& peer : peers_) {
    if (peer == nullptr || peer->qp == nullptr) continue;
    ibv_qp_attr attr = {};
    attr.qp_state = IBV_QPS_ERR;
    ibv_modify_qp(peer->qp, &attr, IBV_QP_STATE);
  }
}

Status IbTransport::RegisterMemory(void* ptr, size_t bytes, MemoryKind kind, MemoryHandle* handle) {
  if (kind != MemoryKind::kHost) {
    return InvalidArgument("ibverbs transport: only host memory can be registered (no GPUDirect RDMA)");
  }
  if (ptr == nullptr || bytes == 0) return InvalidArgument("ibverbs transport: registering an empty range");
  ibv_mr* mr = ibv_reg_mr(device_.pd(), ptr, bytes, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
  if (mr == nullptr) return ErrnoError(errno, StrCat("ibverbs transport: ibv_reg_mr of ", bytes, " bytes"));
  *handle = MemoryHandle();
  handle->id = (static_cast<uint64_t>(mr->rkey) << 32) | mr->lkey;
  handle->data = mr;
  return Status::Ok();
}

void IbTransport::DeregisterMemory(MemoryHandle handle) {
  if (handle.data != nullptr) ibv_dereg_mr(static_cast<ibv_mr*>(handle.data));
}

}  // namespace chorus
