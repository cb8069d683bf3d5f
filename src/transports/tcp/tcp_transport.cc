#include "transports/tcp/tcp_transport.h"

#include <sys/epoll.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>

#include "base/config.h"
#include "base/log.h"
#include "base/spin_wait.h"
#include "transports/socket/interface.h"
#include "transports/socket/wake_fds.h"
#include "transports/tcp/tcp_interface_choice.h"
#include "transports/tcp/tcp_mesh.h"

namespace chorus {

namespace {

// How long a Progress that may wait polls its lanes before it sleeps in
// epoll_wait. A sleeping rank is woken by the kernel when bytes land, and
// on a VM that wake-up alone cost 20-30 us: 2 ranks on loopback, 8 B
// allreduce 12-38 us a call sleeping at once, 5 us polling (4 ranks on 2
// cores: 64-74 against 50-55 us; docs/design-notes.md). Each poll
// yields the core, so ranks that share cores lose nothing to it.
constexpr std::chrono::microseconds kPollBeforeSleep{50};

}  // namespace

class TcpTransport::TcpEndpoint : public Endpoint {
 public:
  TcpEndpoint(TcpTransport* transport, int peer) : transport_(transport), peer_(peer) {}
  int peer() const override { return peer_; }
  Status PostSend(TransferRequest* request) override { return transport_->Post(peer_, request, true); }
  Status PostRecv(TransferRequest* request) override { return transport_->Post(peer_, request, false); }

 private:
  TcpTransport* transport_;
  int peer_;
};

struct TcpTransport::Peer {
  Peer(TcpTransport* transport, int rank) : endpoint(transport, rank) {}
  TcpEndpoint endpoint;
  std::vector<std::unique_ptr<TcpLane>> lanes;
  uint64_t sends_posted = 0;  // picks the lane of the next send
  uint64_t recvs_posted = 0;  // picks the lane of the next receive
};

Status CreateTcpTransport(const TcpOptions& options, std::unique_ptr<Transport>* transport) {
  if (options.nranks < 1 || options.rank < 0 || options.rank >= options.nranks) {
    return InvalidArgument("TCP transport: rank ", options.rank, " out of range for ", options.nranks, " ranks");
  }
  if (options.nsocks < 1 || options.nsocks > 64) {
    return InvalidArgument("TCP transport: nsocks must be in [1, 64], got ", options.nsocks);
  }
  for (const auto& [bytes, key] : {std::pair<int, const char*>{options.socket_rcvbuf, "CHORUS_SOCKET_RCVBUF"},
                                    std::pair<int, const char*>{options.socket_sndbuf, "CHORUS_SOCKET_SNDBUF"}}) {
    if (bytes < 0 || bytes > kMaxSocketBufferBytes) {
      return InvalidArgument("TCP transport: ", key, " must be in [0, ", kMaxSocketBufferBytes, "], got ", bytes);
    }
  }
  std::unique_ptr<TcpTransport> created(new TcpTransport(options));
  CHORUS_RETURN_IF_ERROR(created->Listen());
  // Only the listener's NIC choice reads the topology, and the caller's does
  // not outlive creation (BuildCommunicator): keep no pointer to it.
  created->options_.topology = nullptr;
  *transport = std::move(created);
  return Status::Ok();
}

TcpTransport::TcpTransport(const TcpOptions& options) : options_(options) {}

TcpTransport::~TcpTransport() = default;

Status TcpTransport::Listen() {
  NetworkInterface chosen;
  CHORUS_RETURN_IF_ERROR(FindInterface(ChooseInterfaceSpec(options_), &chosen));
  // Accepted lanes inherit the listener's buffer sizes (set before listen()).
  CHORUS_RETURN_IF_ERROR(Socket::Listen(chosen.address, TcpLaneBuffers(options_), &listener_));
  SocketAddress bound;
  CHORUS_RETURN_IF_ERROR(listener_.LocalAddress(&bound));
  local_address_ = bound.ToString();

  CHORUS_RETURN_IF_ERROR(CreateWakeupFd(&wakeup_));
  // The wakeup fd's event carries a null pointer, which marks it; the lanes
  // join at Connect.
  return CreateWaitSet({wakeup_.fd()}, "eventfd", &epoll_);
}

Status TcpTransport::Connect(const std::vector<std::string>& addresses, Deadline deadline) {
  if (connected_) return InvalidUsage("TCP transport: Connect called twice");
  if (static_cast<int>(addresses.size()) != options_.nranks) {
    return InvalidArgument("TCP transport: ", addresses.size(), " addresses for ", options_.nranks, " ranks");
  }
  std::vector<std::vector<Socket>> sockets;
  CHORUS_RETURN_IF_ERROR(EstablishTcpMesh(options_, listener_, addresses, deadline, shut_down_, &sockets));

  std::lock_guard<std::mutex> lock(shutdown_mutex_);
  if (shut_down_.load()) return InvalidUsage("TCP transport shut down while connecting");
  peers_.resize(options_.nranks);
  for (int rank = 0; rank < options_.nranks; ++rank) {
    if (rank == options_.rank || addresses[rank].empty()) continue;
    auto peer = std::make_unique<Peer>(this, rank);
    for (Socket& socket : sockets[rank]) {
      // A fixed receive buffer bounds the lane's wake-up batches.
      SocketBuffers kernel_buffers;
      if (options_.socket_rcvbuf > 0) CHORUS_RETURN_IF_ERROR(socket.GetBuffers(&kernel_buffers));
      auto lane = std::make_unique<TcpLane>(std::move(socket), TcpPeerLabel(rank, addresses[rank]),
                                            options_.socket_rcvbuf > 0 ? kernel_buffers.receive_bytes : 0);
      epoll_event event = {};
      // Edge-triggered: readiness is remembered by the lane, so an idle lane
      // with unread data or free buffer space never wakes us in a loop, and
      // EPOLLRDHUP reports a dead peer even when nothing is posted.
      event.events = EPOLLIN | EPOLLOUT | EPOLLRDHUP | EPOLLET;
      event.data.ptr = lane.get();
      if (::epoll_ctl(epoll_.fd(), EPOLL_CTL_ADD, lane->fd(), &event) != 0) {
        return ErrnoError(errno, "epoll_ctl(lane)");
      }
      lanes_.push_back(lane.get());
      peer->lanes.push_back(std::move(lane));
    }
    peers_[rank] = std::move(peer);
  }
  listener_.Close();  // everyone is in; later strangers get ECONNREFUSED
  connected_ = true;
  if (options_.socket_rcvbuf > 0 || options_.socket_sndbuf > 0) LogLaneBuffers();
  return Status::Ok();
}

std::vector<SocketBuffers> TcpTransport::LaneBufferSizes() const {
  std::vector<SocketBuffers> sizes;
  for (const TcpLane* lane : lanes_) {
    SocketBuffers buffers;
    if (!lane->GetSocketBuffers(&buffers).ok()) buffers = {-1, -1};
    sizes.push_back(buffers);
  }
  return sizes;
}

namespace {

// "SO_RCVBUF 524288 (CHORUS_SOCKET_RCVBUF=262144)" over every lane; warns
// when a lane got less than twice the request (net.core.*mem_max caps it).
std::string DescribeBuffer(const std::vector<SocketBuffers>& sizes, int SocketBuffers::*field, int requested,
                           const char* option, const char* key, const char* cap, int rank) {
  if (requested <= 0) return StrCat(option, " autotuned");
  int low = sizes[0].*field, high = low;
  for (const SocketBuffers& lane : sizes) {
    low = std::min(low, lane.*field);
    high = std::max(high, lane.*field);
  }
  if (low < 2 * requested) {
    CHORUS_WARN("NET", "rank ", rank, ": ", key, "=", requested, " gave a TCP lane ", option, " ", low, " instead of ",
                2LL * requested, ": ", cap, " caps it");
  }
  return StrCat(option, " ", low, low == high ? "" : StrCat("..", high), " (", key, "=", requested, ")");
}

}  // namespace

void TcpTransport::LogLaneBuffers() const {
  const std::vector<SocketBuffers> sizes = LaneBufferSizes();
  if (sizes.empty()) return;
  const std::string receive = DescribeBuffer(sizes, &SocketBuffers::receive_bytes, options_.socket_rcvbuf,
                                             "SO_RCVBUF", "CHORUS_SOCKET_RCVBUF", "net.core.rmem_max", options_.rank);
  const std::string send = DescribeBuffer(sizes, &SocketBuffers::send_bytes, options_.socket_sndbuf, "SO_SNDBUF",
                                          "CHORUS_SOCKET_SNDBUF", "net.core.wmem_max", options_.rank);
  CHORUS_INFO("NET", "rank ", options_.rank, ": ", sizes.size(), " TCP lanes, ", receive, ", ", send,
              " (getsockopt: the kernel doubles what is set)");
}

Endpoint* TcpTransport::endpoint(int peer) {
  if (!connected_ || peer < 0 || peer >= options_.nranks || peers_[peer] == nullptr) return nullptr;
  return &peers_[peer]->endpoint;
}

Status TcpTransport::Post(int peer, TransferRequest* request, bool is_send) {
  if (!error_.ok()) return error_;
  if (shut_down_.load()) return Fail(InvalidUsage("TCP transport was shut down"));
  if (request == nullptr) return InvalidArgument("TCP transport: null request");
  if (request->buffer == nullptr && request->bytes > 0) {
    return InvalidArgument("TCP transport: null buffer for a ", request->bytes, "-byte message");
  }
  Peer& target = *peers_[peer];
  uint64_t& posted = is_send ? target.sends_posted : target.recvs_posted;
  request->done = false;
  request->progress = 0;
  request->lane = static_cast<uint32_t>(posted++ % target.lanes.size());
  TcpLane& lane = *target.lanes[request->lane];
  if (is_send) {
    lane.PushSend(request);
  } else {
    lane.PushRecv(request);
  }
  return Status::Ok();
}

Status TcpTransport::Fail(Status status) {
  if (error_.ok()) error_ = status;
  // Closing our side at once tells every peer waiting on us that we are
  // gone, and passes on a notice we were given.
  CloseNotice notice;
  if (!shut_down_.load() && ScanNotices(&notice)) {
    ShutdownWithNotice(notice);
  } else {
    Shutdown();
  }
  return error_;
}

bool TcpTransport::ScanNotices(CloseNotice* notice) {
  if (ReceivedNotice(notice)) return true;
  for (TcpLane* lane : lanes_) {
    WireHeader header;
    if (!lane->FindNotice(&header)) continue;
    CloseNotice found;
    found.origin = static_cast<int32_t>(header.bytes);
    found.reason = static_cast<uint32_t>(header.tag);
    uint64_t none = 0;
    notice_.compare_exchange_strong(none, EncodeCloseNotice(found));
    return ReceivedNotice(notice);
  }
  return false;
}

bool TcpTransport::ReceivedNotice(CloseNotice* notice) const {
  return DecodeCloseNotice(notice_.load(std::memory_order_acquire), notice);
}

void TcpTransport::ShutdownWithNotice(const CloseNotice& notice) {
  {
    std::lock_guard<std::mutex> lock(shutdown_mutex_);
    if (!shut_down_.load() && connected_) {
      const WireHeader header = {kNoticeMagic, 0, notice.reason, static_cast<uint64_t>(notice.origin)};
      for (const auto& peer : peers_) {
        if (peer == nullptr) continue;
        for (const auto& lane : peer->lanes) {
          if (lane->SendNotice(header)) break;
        }
      }
    }
  }
  Shutdown();
}

Status TcpTransport::ProgressLanes(bool* progressed) {
  for (TcpLane* lane : lanes_) {
    if (lane->idle()) continue;
    Status status = lane->Progress(progressed);
    if (!status.ok()) return Fail(status);
  }
  return Status::Ok();
}

Status TcpTransport::WaitForEvents(int timeout_ms, bool* lane_events, bool* woken) {
  epoll_event events[64];
  const int count = ::epoll_wait(epoll_.fd(), events, 64, timeout_ms);
  if (count < 0) {
    if (errno == EINTR) return Status::Ok();
    return Fail(ErrnoError(errno, "epoll_wait"));
  }
  bool hung_up = false;
  for (int i = 0; i < count; ++i) {
    if (events[i].data.ptr == nullptr) {
      DrainWakeupFd(wakeup_.fd());
      if (woken != nullptr) *woken = true;
      continue;
    }
    static_cast<TcpLane*>(events[i].data.ptr)->OnEvents(events[i].events);
    *lane_events = true;
    hung_up |= (events[i].events & (EPOLLRDHUP | EPOLLHUP)) != 0;
  }
  // A peer that closes with a notice concerns us even when nothing is
  // posted to it (we may wait for other peers): the notice precedes its
  // hang-up on the lane.
  CloseNotice notice;
  if (hung_up && ScanNotices(&notice)) {
    return Fail(RemoteError("rank ", notice.origin, " closed its connections with notice ", notice.reason));
  }
  return Status::Ok();
}

Status TcpTransport::PollBeforeSleeping(bool* progressed) {
  Status status;
  // No busy spin: each poll after the first yields the core.
  SpinThenYield(SpinBudget{std::chrono::microseconds(0), kPollBeforeSleep}, [&] {
    bool lane_events = false, woken = false;
    status = WaitForEvents(0, &lane_events, &woken);
    if (status.ok() && lane_events) status = ProgressLanes(progressed);
    return !status.ok() || *progressed || woken;
  });
  return status;
}

Status TcpTransport::Progress(int timeout_ms) {
  if (!error_.ok()) return error_;
  if (shut_down_.load()) return Fail(InvalidUsage("TCP transport was shut down"));
  if (!connected_) return InvalidUsage("TCP transport: Progress before Connect");
  bool progressed = false;
  CHORUS_RETURN_IF_ERROR(ProgressLanes(&progressed));
  if (!progressed && timeout_ms > 0) {
    CHORUS_RETURN_IF_ERROR(PollBeforeSleeping(&progressed));
    if (progressed) return Status::Ok();
  }
  bool lane_events = false;
  CHORUS_RETURN_IF_ERROR(WaitForEvents(progressed ? 0 : timeout_ms, &lane_events));
  if (shut_down_.load()) return Fail(InvalidUsage("TCP transport was shut down"));
  if (lane_events) CHORUS_RETURN_IF_ERROR(ProgressLanes(&progressed));
  return Status::Ok();
}

Status TcpTransport::ArmWait(bool look_only, WaitArm* arm) {
  (void)look_only;  // the same either way: nothing to arm
  *arm = WaitArm();
  if (!error_.ok()) return error_;
  if (shut_down_.load()) return Fail(InvalidUsage("TCP transport was shut down"));
  if (!connected_) return InvalidUsage("TCP transport: ArmWait before Connect");
  // The last look: sends posted since the last sweep go out, events
  // already queued are taken. Nothing to arm: edge-triggered lane events
  // and the level-triggered eventfd stay queued in the set until
  // WaitForEvents takes them.
  bool progressed = false, lane_events = false, woken = false;
  CHORUS_RETURN_IF_ERROR(ProgressLanes(&progressed));
  CHORUS_RETURN_IF_ERROR(WaitForEvents(0, &lane_events, &woken));
  if (lane_events) CHORUS_RETURN_IF_ERROR(ProgressLanes(&progressed));
  arm->fd = epoll_.fd();
  arm->ready = progressed || woken;
  return Status::Ok();
}

void TcpTransport::Wakeup() { SignalWakeupFd(wakeup_.fd()); }

void TcpTransport::Shutdown() {
  {
    std::lock_guard<std::mutex> lock(shutdown_mutex_);
    if (shut_down_.exchange(true)) return;
    listener_.ShutdownBoth();
    for (TcpLane* lane : lanes_) lane->ShutdownSocket();
  }
  Wakeup();
}

}  // namespace chorus
