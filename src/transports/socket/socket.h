// Socket: an owned, non-blocking TCP socket (closed in the destructor,
// move-only) with deadline-bounded blocking helpers for the connection
// set-up paths (bootstrap, handshakes). The TCP data path drives the fd
// itself through epoll.
#pragma once

#include <cstddef>
#include <string>

#include "base/deadline.h"
#include "base/status.h"
#include "transports/socket/socket_address.h"

namespace chorus {

// SO_RCVBUF/SO_SNDBUF fixed on a socket before it connects or listens (0:
// leave the kernel's autotuning). Set then, they bound the TCP window scale
// negotiated in the handshake; accepted sockets inherit their listener's.
struct SocketBuffers {
  int receive_bytes = 0;
  int send_bytes = 0;
};

class Socket {
 public:
  Socket() = default;
  explicit Socket(int fd, std::string peer_name = "") : fd_(fd), peer_name_(std::move(peer_name)) {}
  ~Socket() { Close(); }
  Socket(Socket&& other) noexcept;
  Socket& operator=(Socket&& other) noexcept;
  Socket(const Socket&) = delete;
  Socket& operator=(const Socket&) = delete;

  int fd() const { return fd_; }
  bool valid() const { return fd_ >= 0; }
  // How errors name the other end, e.g. "peer 3 (10.0.0.4:5000)".
  const std::string& peer_name() const { return peer_name_; }
  void set_peer_name(std::string name) { peer_name_ = std::move(name); }

  void Close();
  // shutdown(SHUT_RDWR): the peer sees EOF at once; the fd stays open so
  // that another thread polling it is not racing a close.
  void ShutdownBoth();

  // A listener bound to `address` (port 0: ephemeral), non-blocking.
  static Status Listen(const SocketAddress& address, Socket* listener) { return Listen(address, {}, listener); }
  static Status Listen(const SocketAddress& address, const SocketBuffers& buffers, Socket* listener);
  // Connects, retrying refused connections (the peer may not be listening
  // yet) until `deadline`. The result is non-blocking with TCP_NODELAY.
  static Status Connect(const SocketAddress& address, Deadline deadline, Socket* connected) {
    return Connect(address, deadline, {}, connected);
  }
  static Status Connect(const SocketAddress& address, Deadline deadline, const SocketBuffers& buffers,
                        Socket* connected);
  // One attempt, to a peer known to listen already (so a refusal means its
  // process is gone, and retrying would only wait for the deadline):
  // refused or reset is chorusRemoteError.
  static Status ConnectToListener(const SocketAddress& address, Deadline deadline, Socket* connected) {
    return ConnectToListener(address, deadline, {}, connected);
  }
  static Status ConnectToListener(const SocketAddress& address, Deadline deadline, const SocketBuffers& buffers,
                                  Socket* connected);
  // Waits for one connection until `deadline`; non-blocking with TCP_NODELAY.
  Status Accept(Deadline deadline, Socket* accepted) const;

  // Blocking-style transfers bounded by `deadline`: chorusRemoteError naming
  // the peer on EOF or reset, chorusTimeout when the deadline passes.
  Status SendAll(const void* data, size_t bytes, Deadline deadline) const;
  Status RecvAll(void* data, size_t bytes, Deadline deadline) const;

  Status LocalAddress(SocketAddress* address) const;
  Status SetNoDelay() const;
  // The non-zero sizes of `buffers`; before connect()/listen() to take effect
  // on the window scale.
  Status SetBuffers(const SocketBuffers& buffers) const;
  // SO_RCVBUF/SO_SNDBUF as the kernel reports them (twice what was set).
  Status GetBuffers(SocketBuffers* buffers) const;

  // Waits for `events` (POLLIN/POLLOUT) until `deadline`; chorusTimeout after.
  Status WaitFor(short events, Deadline deadline, const char* what) const;

 private:
  int fd_ = -1;
  std::string peer_name_;
};

// Fills `data` with bytes from getrandom(2).
Status FillRandom(void* data, size_t bytes);

}  // namespace chorus
