#include "transports/tcp/tcp_mesh.h"

#include <algorithm>

#include "transports/socket/handshake.h"
#include "transports/socket/handshake_acceptor.h"

namespace chorus {
namespace {

// Accept waits in slices so that cancellation is noticed.
constexpr int kAcceptSliceMs = 100;
// A peer whose lanes are late is asked whether it still listens: first
// after this long without a new lane (a healthy mesh is done by then), then
// this often. Its listener stays open until its own mesh is complete, which
// needs our lanes, so a refusal means it is gone.
constexpr int kProbeLatePeersAfterMs = 500;
constexpr int kProbeLatePeersEveryMs = 250;

Status ConnectLanes(const TcpOptions& options, int peer, const std::string& address, Deadline deadline,
                    std::vector<Socket>* lanes) {
  SocketAddress target;
  CHORUS_RETURN_IF_ERROR(ParseSocketAddress(address, &target).WithContext(TcpPeerLabel(peer, address)));
  for (int lane = 0; lane < options.nsocks; ++lane) {
    // The address came from the rendezvous, so the peer listened before:
    // a refusal means it is gone (it died, or gave up creating the
    // communicator), and retrying would only wait out the deadline.
    Socket socket;
    CHORUS_RETURN_IF_ERROR(Socket::ConnectToListener(target, deadline, TcpLaneBuffers(options), &socket)
                               .WithContext(StrCat("TCP transport rank ", options.rank, ": connecting to ",
                                                   TcpPeerLabel(peer, address))));
    socket.set_peer_name(TcpPeerLabel(peer, address));
    Hello hello;
    hello.purpose = ConnectionPurpose::kTcpLane;
    hello.rank = options.rank;
    hello.lane = lane;
    CHORUS_RETURN_IF_ERROR(ConnectHandshake(socket, options.secret, hello, deadline));
    (*lanes)[lane] = std::move(socket);
  }
  return Status::Ok();
}

std::string MissingLanes(const std::vector<std::vector<Socket>>& lanes, const std::vector<std::string>& addresses,
                         int from_rank) {
  std::string missing;
  int listed = 0;
  for (size_t peer = static_cast<size_t>(from_rank); peer < lanes.size(); ++peer) {
    if (addresses[peer].empty()) continue;
    for (size_t lane = 0; lane < lanes[peer].size(); ++lane) {
      if (lanes[peer][lane].valid()) continue;
      if (++listed > 8) return missing + ", ...";
      missing += StrCat(missing.empty() ? "" : ", ", "rank ", peer, " lane ", lane);
    }
  }
  return missing;
}

// Asks every peer with lanes still missing whether it listens (see
// kProbeLatePeersAfterMs): chorusRemoteError naming the first that refuses.
Status ProbeLatePeers(const TcpOptions& options, const std::vector<std::string>& addresses, Deadline deadline,
                      const std::vector<std::vector<Socket>>& lanes) {
  for (int peer = options.rank + 1; peer < options.nranks; ++peer) {
    if (addresses[peer].empty()) continue;
    const bool missing = std::any_of(lanes[peer].begin(), lanes[peer].end(), [](const Socket& s) { return !s.valid(); });
    if (!missing) continue;
    SocketAddress target;
    CHORUS_RETURN_IF_ERROR(ParseSocketAddress(addresses[peer], &target));
    Socket probe;  // closed at once: the peer's acceptor drops it quietly
    Status status = Socket::ConnectToListener(target, Sooner(deadline, Deadline::AfterMs(kAcceptSliceMs)), &probe);
    if (status.code() == chorusRemoteError) {
      return RemoteError("TCP transport: rank ", options.rank, " waited for ", TcpPeerLabel(peer, addresses[peer]),
                         ", which is gone: its listener refuses connections (its process ended, or it gave up "
                         "creating the communicator)");
    }
  }
  return Status::Ok();
}

// Lanes authenticate concurrently (HandshakeAcceptor): a stranger that
// stays silent or trickles junk delays no peer's lane.
Status AcceptLanes(const TcpOptions& options, const Socket& listener, const std::vector<std::string>& addresses,
                   Deadline deadline,
                   const std::atomic<bool>& cancelled, std::vector<std::vector<Socket>>* lanes) {
  int expected = 0;
  for (int peer = options.rank + 1; peer < options.nranks; ++peer) {
    if (!addresses[peer].empty()) expected += options.nsocks;
  }
  AcceptorOptions acceptor_options;
  acceptor_options.purpose = ConnectionPurpose::kTcpLane;
  acceptor_options.where = StrCat("TCP transport rank ", options.rank);
  // Every lane may come from one host at once.
  acceptor_options.max_pending_per_source = std::max(kMaxPendingPerSource, expected);
  HandshakeAcceptor acceptor(listener, options.secret, acceptor_options);
  std::vector<AdmittedConnection> admitted;
  Deadline next_probe = Deadline::AfterMs(kProbeLatePeersAfterMs);
  while (expected > 0) {
    if (cancelled.load()) return InvalidUsage("TCP transport shut down while connecting");
    if (deadline.Expired()) {
      return TimeoutError("TCP transport: rank ", options.rank, " timed out waiting for connections from ",
                          MissingLanes(*lanes, addresses, options.rank + 1));
    }
    admitted.clear();
    Status accepted = acceptor.Admit(Sooner(deadline, Deadline::AfterMs(kAcceptSliceMs)), &admitted);
    // Shutdown() makes the listener fail; report that, not the errno.
    if (!accepted.ok() && cancelled.load()) continue;
    CHORUS_RETURN_IF_ERROR(accepted);
    for (AdmittedConnection& connection : admitted) {
      const Hello& hello = connection.hello;
      if (hello.rank <= options.rank || hello.rank >= options.nranks || hello.lane < 0 ||
          hello.lane >= options.nsocks || addresses[hello.rank].empty() ||
          (*lanes)[hello.rank][hello.lane].valid()) {
        WarnDroppedConnection(acceptor_options.where,
                              InvalidUsage("unexpected connection claiming rank ", hello.rank, " lane ", hello.lane,
                                           " from ", connection.socket.peer_name()));
        continue;
      }
      connection.socket.set_peer_name(TcpPeerLabel(hello.rank, connection.socket.peer_name()));
      (*lanes)[hello.rank][hello.lane] = std::move(connection.socket);
      --expected;
      next_probe = Deadline::AfterMs(kProbeLatePeersAfterMs);
    }
    if (expected > 0 && next_probe.Expired()) {
      CHORUS_RETURN_IF_ERROR(ProbeLatePeers(options, addresses, deadline, *lanes));
      next_probe = Deadline::AfterMs(kProbeLatePeersEveryMs);
    }
  }
  return Status::Ok();
}

}  // namespace

std::string TcpPeerLabel(int peer, const std::string& address) { return StrCat("peer ", peer, " (", address, ")"); }

SocketBuffers TcpLaneBuffers(const TcpOptions& options) {
  SocketBuffers buffers;
  buffers.receive_bytes = options.socket_rcvbuf;
  buffers.send_bytes = options.socket_sndbuf;
  return buffers;
}

Status EstablishTcpMesh(const TcpOptions& options, const Socket& listener,
                        const std::vector<std::string>& addresses, Deadline deadline,
                        const std::atomic<bool>& cancelled, std::vector<std::vector<Socket>>* lanes) {
  lanes->clear();
  lanes->resize(options.nranks);
  for (auto& peer_lanes : *lanes) peer_lanes.resize(options.nsocks);
  for (int peer = 0; peer < options.rank; ++peer) {
    if (cancelled.load()) return InvalidUsage("TCP transport shut down while connecting");
    if (addresses[peer].empty()) continue;
    CHORUS_RETURN_IF_ERROR(ConnectLanes(options, peer, addresses[peer], deadline, &(*lanes)[peer]));
  }
  return AcceptLanes(options, listener, addresses, deadline, cancelled, lanes);
}

}  // namespace chorus
