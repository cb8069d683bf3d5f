#include "transports/ibverbs/ib_transport.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <poll.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <random>

#include "base/log.h"
#include "transports/ibverbs/ib_peer.h"
#include "transports/socket/wake_fds.h"

namespace chorus {

namespace {

// How long Teardown waits for the closing notices to be acknowledged.
constexpr int kCloseFlushMs = 1000;
constexpr int kErrorCloseFlushMs = 200;

ibv_mtu MinMtu(ibv_mtu a, ibv_mtu b) { return a < b ? a : b; }

}  // namespace

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
  capabilities.takes_registered_memory = true;
  return capabilities;
}

std::string IbTransport::Label(int rank) const { return StrCat("rank ", rank, " (over ", device_.label(), ")"); }

Status IbTransport::Init() {
  ib::HcaFilter filter;
  CHORUS_RETURN_IF_ERROR(ib::HcaFilter::Parse(options_.hca, &filter));
  CHORUS_RETURN_IF_ERROR(device_.Open(filter, options_.gid_index, options_.local_rank));
  const ibv_device_attr& attr = device_.device_attr();
  max_send_wr_ = options_.slots + ib::kControlSendSlots + 2;
  // Data chunks (at most `slots` unconsumed) and the peer's control messages
  // between two polls; RNR retries cover a burst beyond it.
  max_recv_wr_ = 2 * options_.slots + 16;
  direct_piece_bytes_ = std::min<uint64_t>(device_.port_attr().max_msg_sz, uint64_t{1} << 30);
  if (direct_piece_bytes_ == 0) direct_piece_bytes_ = uint64_t{1} << 30;
  if (static_cast<int>(std::max(max_send_wr_, max_recv_wr_)) > attr.max_qp_wr) {
    return InvalidArgument("ibverbs transport: CHORUS_IB_SLOTS=", options_.slots, " needs ", max_recv_wr_,
                           " work requests per queue pair; ", device_.name(), " allows ", attr.max_qp_wr);
  }
  // Twice every QP's work requests: a QP restarted during Connect may leave
  // the completions of its first life behind for a while.
  const int64_t cqes = 2 * static_cast<int64_t>(options_.nranks - 1) * (max_send_wr_ + max_recv_wr_) + 1;
  if (cqes > attr.max_cqe) {
    return InvalidArgument("ibverbs transport: ", options_.nranks, " ranks with CHORUS_IB_SLOTS=", options_.slots,
                           " need a completion queue of ", cqes, " entries; ", device_.name(), " allows ", attr.max_cqe,
                           " (lower CHORUS_IB_SLOTS)");
  }
  channel_ = ibv_create_comp_channel(device_.context());
  if (channel_ == nullptr) return ErrnoError(errno, StrCat("ibv_create_comp_channel(", device_.name(), ")"));
  const int flags = ::fcntl(channel_->fd, F_GETFL);
  if (flags < 0 || ::fcntl(channel_->fd, F_SETFL, flags | O_NONBLOCK) < 0) {
    return ErrnoError(errno, "fcntl(completion channel)");
  }
  cq_ = ibv_create_cq(device_.context(), static_cast<int>(cqes), nullptr, channel_, 0);
  if (cq_ == nullptr) return ErrnoError(errno, StrCat("ibv_create_cq(", device_.name(), ", ", cqes, ")"));
  CHORUS_RETURN_IF_ERROR(CreateWakeupFd(&wakeup_));
  CHORUS_RETURN_IF_ERROR(CreateWaitSet({channel_->fd, wakeup_.fd()}, "ibverbs wait set", &wait_set_));
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
    CHORUS_RETURN_IF_ERROR(ToInit(peer.get()));
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
  peers_.clear();  // QPs (then their rings and staging) before the CQ and the memory they use
  controls_.reset();
  if (cq_ != nullptr) {
    if (unacked_events_ > 0) ibv_ack_cq_events(cq_, unacked_events_);
    ibv_destroy_cq(cq_);
  }
  if (channel_ != nullptr) ibv_destroy_comp_channel(channel_);
}

Status IbTransport::NewRegion(size_t bytes, int access, const char* what, std::unique_ptr<MemoryRegion>* region) {
  auto made = std::make_unique<MemoryRegion>();
  void* memory = nullptr;
  if (posix_memalign(&memory, 4096, bytes) != 0) return SystemError("ibverbs transport: out of memory for ", what);
  std::memset(memory, 0, bytes);
  made->base = static_cast<uint8_t*>(memory);
  made->bytes = bytes;
  made->mr = ibv_reg_mr(device_.pd(), memory, bytes, access);
  if (made->mr == nullptr) {
    return ErrnoError(errno, StrCat("ibverbs transport: ibv_reg_mr of ", bytes, " bytes for ", what));
  }
  *region = std::move(made);
  return Status::Ok();
}

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
                             blob.link_layer == IBV_LINK_LAYER_ETHERNET ? "RoCE" : "InfiniBand", ", ", device_.label(),
                             " is not");
    }
    routed.push_back(peers_[rank].get());
  }
  // Control buffers for every routed peer in one region; rings and staging
  // slots come when a peer first needs them (RingReady, MakeRing).
  const size_t control_bytes = sizeof(ib::ControlMessage) * (max_recv_wr_ + ib::kControlSendSlots);
  if (!routed.empty()) {
    CHORUS_RETURN_IF_ERROR(
        Fail(NewRegion(routed.size() * control_bytes, IBV_ACCESS_LOCAL_WRITE, "control buffers", &controls_)));
  }
  for (size_t i = 0; i < routed.size(); ++i) {
    Peer* peer = routed[i];
    peer->receive_buffers = reinterpret_cast<ib::ControlMessage*>(controls_->base + i * control_bytes);
    peer->control_buffers = peer->receive_buffers + max_recv_wr_;
    peer->credits = ib::SenderCredits(options_.slots);
    peer->slots = ib::ReceiverSlots(options_.slots);
    peer->completes_with_slot.assign(options_.slots, nullptr);
    CHORUS_RETURN_IF_ERROR(Fail(BringUp(peer, blobs[peer->rank])));
  }
  connected_ = true;
  // Hellos: the ring geometry, and proof that both QPs are up. RC drops
  // what reaches a QP not yet ready to receive, so a hello to a peer that
  // connects later than our retries last (CHORUS_IB_TIMEOUT) fails: the QP
  // is then started again and the hello resent, until the deadline.
  for (Peer* peer : routed) CHORUS_RETURN_IF_ERROR(Fail(PostHello(peer)));
  while (true) {
    bool progressed = false;
    CHORUS_RETURN_IF_ERROR(Drive(&progressed));
    std::string missing, last_failure;
    int missing_count = 0;
    for (Peer* peer : routed) {
      if (!peer->failure.empty() && !peer->hello && !deadline.Expired()) {
        CHORUS_RETURN_IF_ERROR(Fail(RestartQp(peer, blobs[peer->rank])));
      }
      if (!peer->hello) {
        missing += StrCat(missing.empty() ? "" : ", ", peer->rank);
        ++missing_count;
        if (!peer->failure.empty()) last_failure = peer->failure;
      } else if (!peer->failure.empty()) {
        return Fail(RemoteError("ibverbs transport: connecting to ", Label(peer->rank), " failed: ", peer->failure));
      }
    }
    if (missing.empty()) return Status::Ok();
    if (deadline.Expired()) {
      return Fail(TimeoutError("ibverbs transport: no hello from ", missing_count == 1 ? "rank " : "ranks ", missing,
                               " over ", device_.label(), " within the deadline",
                               last_failure.empty() ? std::string() : StrCat(" (last try: ", last_failure, ")")));
    }
    CHORUS_RETURN_IF_ERROR(Fail(Sleep(lock, deadline.RemainingMs(100))));
  }
}

Status IbTransport::ToInit(Peer* peer) {
  ibv_qp_attr attr = {};
  attr.qp_state = IBV_QPS_INIT;
  attr.pkey_index = 0;
  attr.port_num = static_cast<uint8_t>(device_.port());
  attr.qp_access_flags = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE;
  const int err = ibv_modify_qp(peer->qp, &attr, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS);
  if (err != 0) return ErrnoError(err, StrCat("ibverbs transport: QP for rank ", peer->rank, " to INIT"));
  return Status::Ok();
}

Status IbTransport::RestartQp(Peer* peer, const ib::ConnectionBlob& remote) {
  CHORUS_INFO("NET", "rank ", options_.rank, ": no answer yet from ", Label(peer->rank), " (", peer->failure,
              "): starting its queue pair again");
  ibv_qp_attr attr = {};
  attr.qp_state = IBV_QPS_RESET;
  const int err = ibv_modify_qp(peer->qp, &attr, IBV_QP_STATE);
  if (err != 0) return ErrnoError(err, StrCat("ibverbs transport: QP for rank ", peer->rank, " to RESET"));
  // RESET dropped every request; completions of the old ones are ignored.
  ++peer->epoch;
  peer->sends_outstanding = 0;
  peer->controls_completed = peer->controls_posted;
  peer->failure.clear();
  peer->failure_flushed = false;
  peer->probing = false;
  CHORUS_RETURN_IF_ERROR(ToInit(peer));
  CHORUS_RETURN_IF_ERROR(BringUp(peer, remote));
  return PostHello(peer);
}

Status IbTransport::PostHello(Peer* peer) {
  ib::ControlMessage hello;
  hello.kind = static_cast<uint32_t>(ib::ControlKind::kHello);
  hello.slots = options_.slots;
  hello.slot_bytes = options_.slot_bytes;
  if (!PostControl(peer, hello)) {
    return error_.ok() ? InternalError("ibverbs transport: could not post the hello") : error_;
  }
  return Status::Ok();
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
  err = ibv_modify_qp(
      peer->qp, &attr,
      IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY | IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC);
  if (err != 0) return ErrnoError(err, StrCat("ibverbs transport: QP to ", Label(peer->rank), " to RTS"));
  peer->connected = true;
  peer->last_heard_ms = ib::NowMs();
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
  sge.lkey = controls_->mr->lkey;
  ibv_recv_wr wr = {};
  wr.wr_id = ib::WorkId(ib::WorkKind::kReceive, peer->rank, index, peer->epoch);
  wr.sg_list = &sge;
  wr.num_sge = 1;
  ibv_recv_wr* bad = nullptr;
  const int err = ibv_post_recv(peer->qp, &wr, &bad);
  if (err != 0) return ErrnoError(err, StrCat("ibverbs transport: ibv_post_recv for ", Label(peer->rank)));
  return Status::Ok();
}

bool IbTransport::PostControl(Peer* peer, const ib::ControlMessage& message) {
  if (peer->sends_outstanding >= max_send_wr_ ||
      peer->controls_posted - peer->controls_completed >= ib::kControlSendSlots) {
    return false;
  }
  const uint32_t index = static_cast<uint32_t>(peer->controls_posted % ib::kControlSendSlots);
  peer->control_buffers[index] = message;
  ibv_sge sge = {};
  sge.addr = reinterpret_cast<uintptr_t>(&peer->control_buffers[index]);
  sge.length = sizeof(ib::ControlMessage);
  sge.lkey = controls_->mr->lkey;
  ibv_send_wr wr = {};
  wr.wr_id = ib::WorkId(ib::WorkKind::kControlSend, peer->rank, index, peer->epoch);
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
  if (connected_) {
    size_t rings = 0, peers = 0;
    for (const auto& peer : peers_) {
      peers += peer != nullptr && peer->connected;
      rings += peer != nullptr && peer->ring_region != nullptr;
    }
    CHORUS_INFO("NET", "rank ", options_.rank, ": ibverbs moved ", direct_counts_.sent, " message(s) out and ",
                direct_counts_.received, " in straight between registered buffers; receive rings for ", rings, " of ",
                peers, " peers");
  }
  for (auto& peer : peers_) {
    if (peer == nullptr) continue;
    peer->send_head = peer->send_tail = peer->recv_head = peer->recv_tail = nullptr;
    std::fill(peer->completes_with_slot.begin(), peer->completes_with_slot.end(), nullptr);
    std::fill(std::begin(peer->completes_with_direct), std::end(peer->completes_with_direct), nullptr);
    peer->offer_cursor = nullptr;
    peer->send_direct = false;
    peer->announced = false;
    peer->decline_owed = false;
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
