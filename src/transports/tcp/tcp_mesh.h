// Establishing the TCP transport's full mesh: for every pair the higher rank
// connects `nsocks` authenticated sockets ("lanes") to the lower rank's
// listener, so each pair is connected exactly once and no two ranks wait
// on each other (rank 0 only accepts; rank r connects down, then accepts).
#pragma once

#include <atomic>
#include <string>
#include <vector>

#include "base/deadline.h"
#include "base/status.h"
#include "transports/socket/socket.h"
#include "transports/tcp/tcp_transport.h"

namespace chorus {

// Fills (*lanes)[peer][lane] for every peer != options.rank whose address
// is not empty (peers without one are served by another transport). Connections
// that fail authentication are dropped with a warning and do not count.
// Returns early with chorusInvalidUsage once `*cancelled` becomes true.
Status EstablishTcpMesh(const TcpOptions& options, const Socket& listener,
                        const std::vector<std::string>& addresses, Deadline deadline,
                        const std::atomic<bool>& cancelled, std::vector<std::vector<Socket>>* lanes);

// "peer 3 (10.0.0.4:5000)": how every error names a TCP peer.
std::string TcpPeerLabel(int peer, const std::string& address);

// The socket buffers every lane gets (CHORUS_SOCKET_RCVBUF/SNDBUF): set on
// connecting sockets before connect() and on the listener before listen(),
// whose accepted sockets inherit them, so the window scale negotiated in the
// handshake fits them on both sides.
SocketBuffers TcpLaneBuffers(const TcpOptions& options);

}  // namespace chorus
