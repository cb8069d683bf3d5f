// UcxTransport: the UCP context and worker, connecting, posting transfers,
// driving the worker and finishing completed transfers (Drive), tear-down.
// Its waits (Progress, ArmWait, Wakeup): ucx_progress.cc.
#include "transports/ucx/ucx_transport.h"

#include <unistd.h>

#include <cerrno>
#include <cstdlib>

#include "base/log.h"
#include "transports/host_identity.h"
#include "transports/socket/wake_fds.h"
#include "transports/ucx/ucx_address.h"
#include "transports/ucx/ucx_status.h"

namespace chorus {

class UcxTransport::UcxEndpoint : public Endpoint {
 public:
  UcxEndpoint(UcxTransport* transport, int peer) : transport_(transport), peer_(peer) {}
  int peer() const override { return peer_; }
  Status PostSend(TransferRequest* request) override { return transport_->Post(peer_, request, true); }
  Status PostRecv(TransferRequest* request) override { return transport_->Post(peer_, request, false); }

 private:
  UcxTransport* transport_;
  int peer_;
};

struct UcxTransport::Peer {
  Peer(UcxTransport* transport, int rank) : endpoint(transport, rank), rank(rank) {}
  UcxEndpoint endpoint;
  int rank;
  ucp_ep_h ep = nullptr;
  uint64_t sends_posted = 0;  // numbers the next send (its UCP tag)
  uint64_t recvs_posted = 0;  // numbers the next receive
  ucs_status_t failure = UCS_OK;  // set by the endpoint's error callback
  bool closed = false;            // its closing notice arrived
  void* notice_recv = nullptr;    // the receive posted for that notice
  uint64_t notice_in = 0, notice_out = 0;
  // Something to or from it can no longer complete.
  bool gone() const { return failure != UCS_OK || closed; }
};

// One Chorus message: one UCP message sent from or received into the
// caller's buffer.
struct UcxTransport::Op {
  TransferRequest* request = nullptr;  // null once Shutdown let go of it
  Peer* peer = nullptr;
  bool is_send = false;
  void* ucp_request = nullptr;  // in flight; null once complete
  bool done = false;
  ucs_status_t status = UCS_OK;
  size_t length = 0;        // bytes received
  uint64_t sender_tag = 0;  // the UCP tag received (its check bits)
  Op* next_free = nullptr;
};

namespace {

std::string PeerLabel(int rank) { return StrCat("rank ", rank); }

// See Init.
constexpr const char* kTcpRxSegmentSize = "512K";

// What UCP reports for a transfer whose peer died or became unreachable.
bool IsPeerFailure(ucs_status_t status) {
  return status == UCS_ERR_CONNECTION_RESET || status == UCS_ERR_ENDPOINT_TIMEOUT || status == UCS_ERR_UNREACHABLE ||
         status == UCS_ERR_NOT_CONNECTED || status == UCS_ERR_REJECTED || status == UCS_ERR_IO_ERROR ||
         status == UCS_ERR_CANCELED;
}

}  // namespace

Status CreateUcxTransport(const UcxOptions& options, std::unique_ptr<Transport>* transport) {
  if (options.nranks < 1 || options.rank < 0 || options.rank >= options.nranks) {
    return InvalidArgument("UCX transport: rank ", options.rank, " out of range for ", options.nranks, " ranks");
  }
  if (options.nranks > ucx::kMaxRanks) {
    return InvalidArgument("UCX transport: at most ", ucx::kMaxRanks, " ranks, not ", options.nranks);
  }
  std::unique_ptr<UcxTransport> created(new UcxTransport(options));
  created->options_.topology = nullptr;  // not read, and the caller's does not outlive creation
  CHORUS_RETURN_IF_ERROR(created->Init());
  *transport = std::move(created);
  return Status::Ok();
}

UcxTransport::UcxTransport(const UcxOptions& options) : options_(options) {}

Status UcxTransport::Init() {
  ucp_config_t* config = nullptr;
  ucs_status_t status = ucp_config_read(nullptr, nullptr, &config);
  if (status != UCS_OK) return UcxError(status, "reading the UCX configuration");
  if (!options_.tls.empty()) status = ucp_config_modify(config, "TLS", options_.tls.c_str());
  if (status == UCS_OK) {
    status = ucp_config_modify(config, "KEEPALIVE_INTERVAL", StrCat(options_.keepalive_ms, "ms").c_str());
  }
  // UCX's registration cache installs UCM's mmap hooks at ucp_init, and that
  // installation deadlocked now and then in a freshly forked rank (a
  // write lock in ucm_event_enter_exclusive that never came: about 1 start
  // in 20 in the shrink tests). The cache only saves RDMA registrations,
  // which tcp and shared memory do not make; UCX_RCACHE_ENABLE set by the
  // user (for an RDMA fabric) wins.
  if (status == UCS_OK && std::getenv("UCX_RCACHE_ENABLE") == nullptr) {
    status = ucp_config_modify(config, "RCACHE_ENABLE", "n");
  }
  // UCX's tcp reads a socket into receive segments of 64 KiB by default;
  // with every rank sending and receiving at once (sendrecv, ring steps)
  // that halved the bandwidth against 512 KiB segments (2 ranks, 1 MiB
  // sendrecv: 700 against 360 us a call; allreduce 1-16 MiB 1.8-2.1x;
  // perf/ucx/ucx_vs_perftest.sh). A user's UCX_TCP_RX_SEG_SIZE wins. A
  // transport's option is named here without its prefix (UCP keeps names it
  // does not know for the transports' own tables; tcp's is "TCP_").
  if (status == UCS_OK && std::getenv("UCX_TCP_RX_SEG_SIZE") == nullptr) {
    status = ucp_config_modify(config, "RX_SEG_SIZE", kTcpRxSegmentSize);
  }
  if (status != UCS_OK) {
    ucp_config_release(config);
    return UcxError(status,
                    StrCat("CHORUS_UCX_TLS='", options_.tls, "', CHORUS_UCX_KEEPALIVE_MS or the tcp receive segment"));
  }
  ucp_params_t params = {};
  params.field_mask = UCP_PARAM_FIELD_FEATURES | UCP_PARAM_FIELD_MT_WORKERS_SHARED | UCP_PARAM_FIELD_NAME;
  params.features = UCP_FEATURE_TAG | UCP_FEATURE_WAKEUP;
  params.mt_workers_shared = 0;
  params.name = "chorus";
  status = ucp_init(&params, config, &context_);
  ucp_config_release(config);
  if (status != UCS_OK) return UcxError(status, "ucp_init");

  ucp_worker_params_t worker_params = {};
  worker_params.field_mask = UCP_WORKER_PARAM_FIELD_THREAD_MODE;
  worker_params.thread_mode = UCS_THREAD_MODE_SERIALIZED;  // every call under mutex_
  status = ucp_worker_create(context_, &worker_params, &worker_);
  if (status != UCS_OK) return UcxError(status, "ucp_worker_create");
  status = ucp_worker_get_efd(worker_, &worker_fd_);
  if (status != UCS_OK) return UcxError(status, "ucp_worker_get_efd");
  CHORUS_RETURN_IF_ERROR(CreateWakeupFd(&wakeup_));
  CHORUS_RETURN_IF_ERROR(CreateWaitSet({worker_fd_, wakeup_.fd()}, "UCX wait set", &wait_set_));

  ucp_address_t* address = nullptr;
  size_t length = 0;
  status = ucp_worker_get_address(worker_, &address, &length);
  if (status != UCS_OK) return UcxError(status, "ucp_worker_get_address");
  local_address_ = ucx::EncodeRankAddress(address, length, CurrentCpuMask(), HostIdentity());
  ucp_worker_release_address(worker_, address);
  return Status::Ok();
}

UcxTransport::~UcxTransport() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    Teardown();
  }
  // Destroying the worker completes whatever is left; the ops it calls back
  // into are still alive (members are destroyed after this body).
  if (worker_ != nullptr) ucp_worker_destroy(worker_);
  if (context_ != nullptr) ucp_cleanup(context_);
}

Status UcxTransport::Connect(const std::vector<std::string>& addresses, Deadline deadline) {
  std::unique_lock<std::mutex> lock(mutex_);
  if (connected_) return InvalidUsage("UCX transport: Connect called twice");
  if (shut_down_.load()) return InvalidUsage("UCX transport shut down before connecting");
  if (static_cast<int>(addresses.size()) != options_.nranks) {
    return InvalidArgument("UCX transport: ", addresses.size(), " addresses for ", options_.nranks, " ranks");
  }
  peers_.resize(options_.nranks);
  std::vector<void*> flushes;
  ucx::RankAddress own;
  CHORUS_RETURN_IF_ERROR(ucx::DecodeRankAddress(local_address_, &own));
  std::vector<CpuMask> host_masks = {own.cpus};
  for (int rank = 0; rank < options_.nranks; ++rank) {
    if (rank == options_.rank || addresses[rank].empty()) continue;
    ucx::RankAddress remote;
    CHORUS_RETURN_IF_ERROR(
        ucx::DecodeRankAddress(addresses[rank], &remote).WithContext(StrCat("address of ", PeerLabel(rank))));
    if (remote.host == own.host) host_masks.push_back(remote.cpus);
    auto peer = std::make_unique<Peer>(this, rank);
    ucp_ep_params_t params = {};
    params.field_mask = UCP_EP_PARAM_FIELD_REMOTE_ADDRESS | UCP_EP_PARAM_FIELD_ERR_HANDLING_MODE |
                        UCP_EP_PARAM_FIELD_ERR_HANDLER;
    params.address = reinterpret_cast<const ucp_address_t*>(remote.worker.data());
    params.err_mode = UCP_ERR_HANDLING_MODE_PEER;  // a dead peer is an error callback, not a hang
    params.err_handler.cb = PeerFailed;
    params.err_handler.arg = peer.get();
    const ucs_status_t status = ucp_ep_create(worker_, &params, &peer->ep);
    if (status != UCS_OK) return Fail(UcxError(status, StrCat("endpoint to ", PeerLabel(rank))));
    peers_[rank] = std::move(peer);
  }
  // Flushing every endpoint completes its wire-up within the deadline, so a
  // peer that is gone fails Connect rather than the first collective.
  for (auto& peer : peers_) {
    if (peer == nullptr) continue;
    ucp_request_param_t param = {};
    void* request = ucp_ep_flush_nbx(peer->ep, &param);
    if (UCS_PTR_IS_ERR(request)) {
      return Fail(UcxError(UCS_PTR_STATUS(request), StrCat("connecting to ", PeerLabel(peer->rank))));
    }
    if (request != nullptr) flushes.push_back(request);
  }
  shares_cores_ = RanksOutnumberCpus(host_masks);
  CHORUS_RETURN_IF_ERROR(WaitForRequests(lock, &flushes, deadline, "connecting"));
  for (auto& peer : peers_) {
    if (peer == nullptr) continue;
    ucp_request_param_t param = {};
    param.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA | UCP_OP_ATTR_FLAG_NO_IMM_CMPL;
    param.cb.recv = NoticeArrived;
    param.user_data = peer.get();
    void* request = ucp_tag_recv_nbx(worker_, &peer->notice_in, sizeof(peer->notice_in),
                                     ucx::NoticeTag(peer->rank), ucx::kFullMask, &param);
    if (UCS_PTR_IS_ERR(request)) return Fail(UcxError(UCS_PTR_STATUS(request), "posting the closing-notice receive"));
    peer->notice_recv = request;
  }
  connected_ = true;
  return Status::Ok();
}

Status UcxTransport::WaitForRequests(std::unique_lock<std::mutex>& lock, std::vector<void*>* requests,
                                     Deadline deadline, const char* what) {
  while (true) {
    while (ucp_worker_progress(worker_) != 0) {
    }
    for (auto& peer : peers_) {
      if (peer != nullptr && peer->failure != UCS_OK) {
        return Fail(RemoteError("UCX transport: ", PeerLabel(peer->rank), " failed while ", what, ": ",
                                ucs_status_string(peer->failure)));
      }
    }
    size_t left = 0;
    for (void* request : *requests) {
      const ucs_status_t status = ucp_request_check_status(request);
      if (status == UCS_INPROGRESS) {
        (*requests)[left++] = request;
        continue;
      }
      ucp_request_free(request);
      if (status != UCS_OK && IsPeerFailure(status)) {
        return Fail(RemoteError("UCX transport: a peer failed while ", what, ": ", ucs_status_string(status)));
      }
      if (status != UCS_OK) return Fail(UcxError(status, what));
    }
    requests->resize(left);
    if (requests->empty()) return Status::Ok();
    if (shut_down_.load()) return Fail(InvalidUsage("UCX transport shut down while ", what));
    if (deadline.Expired()) {
      return Fail(TimeoutError("UCX transport: timed out ", what, " (", left, " endpoints not wired up)"));
    }
    CHORUS_RETURN_IF_ERROR(Sleep(lock, deadline.RemainingMs(100)));
  }
}

Endpoint* UcxTransport::endpoint(int peer) {
  if (!connected_ || peer < 0 || peer >= options_.nranks || peers_[peer] == nullptr) return nullptr;
  return &peers_[peer]->endpoint;
}

UcxTransport::Op* UcxTransport::AcquireOp() {
  Op* op = free_ops_;
  if (op != nullptr) {
    free_ops_ = op->next_free;
  } else {
    ops_.emplace_back();
    op = &ops_.back();
  }
  *op = Op();
  return op;
}

void UcxTransport::SendDone(void* request, ucs_status_t status, void* user_data) {
  auto* op = static_cast<Op*>(user_data);
  op->status = status;
  op->done = true;
  op->ucp_request = nullptr;
  ucp_request_free(request);
}

void UcxTransport::RecvDone(void* request, ucs_status_t status, const ucp_tag_recv_info_t* info, void* user_data) {
  auto* op = static_cast<Op*>(user_data);
  op->status = status;
  // A truncated message (longer than the receive) still reports its tag and length.
  if (status == UCS_OK || status == UCS_ERR_MESSAGE_TRUNCATED) {
    op->length = info->length;
    op->sender_tag = info->sender_tag;
  }
  op->done = true;
  op->ucp_request = nullptr;
  ucp_request_free(request);
}

void UcxTransport::NoticeArrived(void* request, ucs_status_t status, const ucp_tag_recv_info_t*, void* user_data) {
  auto* peer = static_cast<Peer*>(user_data);
  if (status == UCS_OK) peer->closed = true;  // else cancelled by our own Teardown
  peer->notice_recv = nullptr;
  ucp_request_free(request);
}

void UcxTransport::PeerFailed(void* arg, ucp_ep_h, ucs_status_t status) {
  auto* peer = static_cast<Peer*>(arg);
  if (peer->failure == UCS_OK) peer->failure = status;
}

void UcxTransport::StartSend(Op* op, const void* buffer, size_t bytes, uint64_t tag) {
  ucp_request_param_t param = {};
  param.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA;
  param.cb.send = SendDone;
  param.user_data = op;
  void* request = ucp_tag_send_nbx(op->peer->ep, buffer, bytes, tag, &param);
  if (request == nullptr || UCS_PTR_IS_ERR(request)) {  // sent at once (buffer reusable), or failed
    op->status = UCS_PTR_STATUS(request);
    op->done = true;
  } else {
    op->ucp_request = request;
  }
}

void UcxTransport::StartRecv(Op* op, void* buffer, size_t bytes, uint64_t tag) {
  ucp_request_param_t param = {};
  // Always through the callback, which reports the received tag and length.
  param.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA | UCP_OP_ATTR_FLAG_NO_IMM_CMPL;
  param.cb.recv = RecvDone;
  param.user_data = op;
  void* request = ucp_tag_recv_nbx(worker_, buffer, bytes, tag, ucx::kMessageMask, &param);
  if (UCS_PTR_IS_ERR(request)) {
    op->status = UCS_PTR_STATUS(request);
    op->done = true;
  } else {
    op->ucp_request = request;
  }
}

Status UcxTransport::Post(int peer_rank, TransferRequest* request, bool is_send) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (!error_.ok()) return error_;
  if (shut_down_.load()) return Fail(InvalidUsage("UCX transport was shut down"));
  if (request == nullptr) return InvalidArgument("UCX transport: null request");
  if (request->buffer == nullptr && request->bytes > 0) {
    return InvalidArgument("UCX transport: null buffer for a ", request->bytes, "-byte message");
  }
  Peer* peer = peers_[peer_rank].get();
  if (peer->gone()) return Fail(PeerFailure(*peer));
  Op* op = AcquireOp();
  op->request = request;
  op->peer = peer;
  op->is_send = is_send;
  request->done = false;
  request->progress = 0;
  if (is_send) {
    StartSend(op, request->buffer, request->bytes, ucx::MessageTag(options_.rank, peer->sends_posted++, request->tag));
  } else {
    StartRecv(op, request->buffer, request->bytes, ucx::MessageTag(peer_rank, peer->recvs_posted++, request->tag));
  }
  inflight_.push_back(op);
  return Status::Ok();
}

Status UcxTransport::PeerFailure(const Peer& peer) {
  if (peer.failure == UCS_OK) return RemoteError("UCX transport: ", PeerLabel(peer.rank), " closed the connection");
  return RemoteError("UCX transport: ", PeerLabel(peer.rank), " failed: ", ucs_status_string(peer.failure));
}

Status UcxTransport::FinishOp(Op* op) {
  TransferRequest& request = *op->request;
  const std::string peer = PeerLabel(op->peer->rank);
  // A receive may fail by a length mismatch, told below.
  if (op->status != UCS_OK && !(op->status == UCS_ERR_MESSAGE_TRUNCATED && !op->is_send)) {
    if (op->peer->failure != UCS_OK || IsPeerFailure(op->status)) {
      return RemoteError("UCX transport: ", peer, " failed (", op->is_send ? "send" : "receive", "): ",
                         ucs_status_string(op->peer->failure != UCS_OK ? op->peer->failure : op->status));
    }
    return UcxError(op->status, StrCat(op->is_send ? "send to " : "receive from ", peer));
  }
  if (!op->is_send) {
    const bool tag_differs = ucx::CheckOf(op->sender_tag) != ucx::TagCheck(request.tag);
    if (tag_differs || op->length != request.bytes || op->status != UCS_OK) {
      return InternalError("message mismatch with ", peer, ": expected tag ", request.tag, " with ", request.bytes,
                           " bytes, got ", tag_differs ? std::string("another tag") : StrCat("tag ", request.tag), " with ",
                           op->length, " bytes");
    }
  }
  request.done = true;
  return Status::Ok();
}

Status UcxTransport::Drive(bool* progressed, bool* active) {
  // Bounded: a peer streaming at us must not keep completions from being reaped.
  for (int round = 0; round < 64 && ucp_worker_progress(worker_) != 0; ++round) {
    if (active != nullptr) *active = true;
  }
  size_t left = 0;
  for (size_t i = 0; i < inflight_.size(); ++i) {
    Op* op = inflight_[i];
    if (!op->done) {
      inflight_[left++] = op;
      continue;
    }
    const Status status = FinishOp(op);
    if (!status.ok()) {
      // The failed op and those after it stay listed, so Teardown lets go of them.
      inflight_.erase(inflight_.begin() + left, inflight_.begin() + i);
      return Fail(status);
    }
    op->next_free = free_ops_;
    free_ops_ = op;
    *progressed = true;
  }
  inflight_.resize(left);
  // As with TCP, a peer that is gone fails us only while something to or
  // from it is pending: a peer that finished first and closed is no error.
  for (const Op* op : inflight_) {
    if (op->peer->gone()) return Fail(PeerFailure(*op->peer));
  }
  return Status::Ok();
}

Status UcxTransport::Fail(Status status) {
  if (error_.ok()) error_ = status;
  // Closing our endpoints at once tells every peer waiting on us that we are gone.
  Teardown();
  return error_;
}

void UcxTransport::Shutdown() {
  if (shut_down_.exchange(true)) return;
  Wakeup();  // a Progress sleeping in poll() returns and releases the mutex
  std::lock_guard<std::mutex> lock(mutex_);
  Teardown();
}

void UcxTransport::Teardown() {
  if (torn_down_ || worker_ == nullptr) return;
  torn_down_ = true;
  shut_down_.store(true);
  // Receives not yet matched are cancelled; the rest end with their
  // endpoint below. Either way no TransferRequest is touched again.
  for (Op* op : inflight_) {
    op->request = nullptr;
    if (!op->is_send && op->ucp_request != nullptr) ucp_request_cancel(worker_, op->ucp_request);
  }
  inflight_.clear();
  // Every live peer is told that we are closing: UCX keeps its tcp
  // connections open until the worker is destroyed, so without a notice a
  // peer waiting on us would learn it only at its deadline. The notices go
  // out with a flush, which on a clean shutdown also delivers what a
  // rendezvous receiver still owes its sender (the acknowledgement that
  // completes the send): at most kFlushMs, kErrorFlushMs after an error.
  // Then every endpoint is closed by force, which also ends what a stalled
  // peer left in flight (the worker must hold no request on an endpoint it
  // destroys).
  constexpr int kFlushMs = 1000;
  constexpr int kErrorFlushMs = 200;
  std::vector<void*> pending;
  for (auto& peer : peers_) {
    if (peer == nullptr || peer->ep == nullptr || peer->failure != UCS_OK) continue;
    ucp_request_param_t param = {};
    void* request = ucp_tag_send_nbx(peer->ep, &peer->notice_out, sizeof(peer->notice_out),
                                     ucx::NoticeTag(options_.rank), &param);
    if (request != nullptr && !UCS_PTR_IS_ERR(request)) pending.push_back(request);
    request = ucp_ep_flush_nbx(peer->ep, &param);
    if (request != nullptr && !UCS_PTR_IS_ERR(request)) pending.push_back(request);
  }
  ProgressUntilComplete(&pending, Deadline::AfterMs(error_.ok() ? kFlushMs : kErrorFlushMs));
  std::vector<void*> closing;
  for (auto& peer : peers_) {
    if (peer == nullptr || peer->ep == nullptr) continue;
    ucp_request_param_t param = {};
    param.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS;
    param.flags = UCP_EP_CLOSE_FLAG_FORCE;
    void* request = ucp_ep_close_nbx(peer->ep, &param);
    peer->ep = nullptr;
    if (request != nullptr && !UCS_PTR_IS_ERR(request)) closing.push_back(request);
  }
  ProgressUntilComplete(&closing, Deadline::AfterMs(kFlushMs));
  // The closing-notice receives stay posted until here, so that a peer's
  // notice that arrives while we flush is matched: one left unexpected makes
  // UCX warn at the worker's destruction ("unexpected tag-receive
  // descriptor was not matched") on every clean shutdown.
  for (auto& peer : peers_) {
    if (peer != nullptr && peer->notice_recv != nullptr) ucp_request_cancel(worker_, peer->notice_recv);
  }
}

void UcxTransport::ProgressUntilComplete(std::vector<void*>* requests, Deadline deadline) {
  while (!requests->empty() && !deadline.Expired()) {
    ucp_worker_progress(worker_);
    size_t left = 0;
    for (void* request : *requests) {
      if (ucp_request_check_status(request) == UCS_INPROGRESS) {
        (*requests)[left++] = request;
      } else {
        ucp_request_free(request);
      }
    }
    requests->resize(left);
  }
  // Freed now, released by UCP when they end (a force close ends them).
  for (void* request : *requests) ucp_request_free(request);
  requests->clear();
}

}  // namespace chorus
