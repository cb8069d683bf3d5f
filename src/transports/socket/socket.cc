#include "transports/socket/socket.h"

#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <thread>

namespace chorus {
namespace {

// Bounds one poll so that a deadline far away still gets re-checked.
constexpr int kPollSliceMs = 1000;

bool IsRetryableConnectError(int err) {
  return err == ECONNREFUSED || err == ETIMEDOUT || err == ECONNABORTED || err == EAGAIN || err == ECONNRESET ||
         err == EHOSTUNREACH || err == ENETUNREACH;
}

Status NewSocket(int family, int* fd) {
  *fd = ::socket(family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (*fd < 0) return ErrnoError(errno, "socket");
  return Status::Ok();
}

// One non-blocking connect attempt; returns the errno that ended it (0 = connected).
int TryConnect(int fd, const SocketAddress& address, Deadline deadline) {
  if (::connect(fd, address.sockaddr_ptr(), address.length) == 0) return 0;
  if (errno != EINPROGRESS) return errno;
  pollfd entry = {fd, POLLOUT, 0};
  while (true) {
    const int ready = ::poll(&entry, 1, deadline.RemainingMs(kPollSliceMs));
    if (ready < 0 && errno != EINTR) return errno;
    if (ready > 0) break;
    if (deadline.Expired()) return ETIMEDOUT;
  }
  int err = 0;
  socklen_t length = sizeof(err);
  if (::getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &length) != 0) return errno;
  return err;
}

}  // namespace

Socket::Socket(Socket&& other) noexcept : fd_(other.fd_), peer_name_(std::move(other.peer_name_)) { other.fd_ = -1; }

Socket& Socket::operator=(Socket&& other) noexcept {
  if (this != &other) {
    Close();
    fd_ = other.fd_;
    peer_name_ = std::move(other.peer_name_);
    other.fd_ = -1;
  }
  return *this;
}

void Socket::Close() {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
}

void Socket::ShutdownBoth() {
  if (fd_ >= 0) ::shutdown(fd_, SHUT_RDWR);
}

Status Socket::Listen(const SocketAddress& address, const SocketBuffers& buffers, Socket* listener) {
  int fd = -1;
  CHORUS_RETURN_IF_ERROR(NewSocket(address.family(), &fd));
  Socket owned(fd, address.ToString());
  CHORUS_RETURN_IF_ERROR(owned.SetBuffers(buffers));
  const int on = 1;
  // A fixed port (rank 0 of an env launch) must be reusable right after a
  // previous run left it in TIME_WAIT.
  ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &on, sizeof(on));
  if (::bind(fd, address.sockaddr_ptr(), address.length) != 0) {
    return ErrnoError(errno, StrCat("bind to ", address.ToString()));
  }
  if (::listen(fd, SOMAXCONN) != 0) return ErrnoError(errno, StrCat("listen on ", address.ToString()));
  *listener = std::move(owned);
  return Status::Ok();
}

Status Socket::Connect(const SocketAddress& address, Deadline deadline, const SocketBuffers& buffers,
                       Socket* connected) {
  int backoff_ms = 1;
  int last_error = 0;
  while (true) {
    int fd = -1;
    CHORUS_RETURN_IF_ERROR(NewSocket(address.family(), &fd));
    Socket attempt(fd, address.ToString());
    CHORUS_RETURN_IF_ERROR(attempt.SetBuffers(buffers));
    last_error = TryConnect(fd, address, deadline);
    if (last_error == 0) {
      CHORUS_RETURN_IF_ERROR(attempt.SetNoDelay());
      *connected = std::move(attempt);
      return Status::Ok();
    }
    if (!IsRetryableConnectError(last_error)) {
      return ErrnoError(last_error, StrCat("connect to ", address.ToString()));
    }
    if (deadline.Expired()) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(std::min(backoff_ms, deadline.RemainingMs())));
    backoff_ms = std::min(backoff_ms * 2, 100);
  }
  return TimeoutError("could not connect to ", address.ToString(),
                      " before the deadline (last error: ", ErrnoError(last_error, "connect").message(), ")");
}

Status Socket::ConnectToListener(const SocketAddress& address, Deadline deadline, const SocketBuffers& buffers,
                                 Socket* connected) {
  int fd = -1;
  CHORUS_RETURN_IF_ERROR(NewSocket(address.family(), &fd));
  Socket attempt(fd, address.ToString());
  CHORUS_RETURN_IF_ERROR(attempt.SetBuffers(buffers));
  const int error = TryConnect(fd, address, deadline);
  if (error == ETIMEDOUT && deadline.Expired()) {
    return TimeoutError("could not connect to ", address.ToString(), " before the deadline");
  }
  if (error != 0) {
    return RemoteError(ErrnoError(error, StrCat("connect to ", address.ToString())).message(),
                       ": it was listening, so its process is gone");
  }
  CHORUS_RETURN_IF_ERROR(attempt.SetNoDelay());
  *connected = std::move(attempt);
  return Status::Ok();
}

Status Socket::Accept(Deadline deadline, Socket* accepted) const {
  while (true) {
    SocketAddress remote;
    remote.length = sizeof(remote.storage);
    const int fd = ::accept4(fd_, remote.sockaddr_ptr(), &remote.length, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd >= 0) {
      Socket owned(fd, remote.ToString());
      CHORUS_RETURN_IF_ERROR(owned.SetNoDelay());
      *accepted = std::move(owned);
      return Status::Ok();
    }
    // Errors of the aborted connection itself are not the listener's fault.
    if (errno == EINTR || errno == ECONNABORTED || errno == EPROTO) continue;
    if (errno != EAGAIN && errno != EWOULDBLOCK) return ErrnoError(errno, "accept");
    CHORUS_RETURN_IF_ERROR(WaitFor(POLLIN, deadline, "accepting a connection"));
  }
}

Status Socket::WaitFor(short events, Deadline deadline, const char* what) const {
  pollfd entry = {fd_, events, 0};
  while (true) {
    if (deadline.Expired()) {
      return TimeoutError("timed out ", what, peer_name_.empty() ? "" : " (", peer_name_,
                          peer_name_.empty() ? "" : ")");
    }
    const int ready = ::poll(&entry, 1, deadline.RemainingMs(kPollSliceMs));
    if (ready > 0) return Status::Ok();  // errors and hang-ups surface in the next call
    if (ready < 0 && errno != EINTR) return ErrnoError(errno, "poll");
  }
}

Status Socket::SendAll(const void* data, size_t bytes, Deadline deadline) const {
  const auto* at = static_cast<const char*>(data);
  while (bytes > 0) {
    const ssize_t sent = ::send(fd_, at, bytes, MSG_NOSIGNAL);
    if (sent > 0) {
      at += sent;
      bytes -= static_cast<size_t>(sent);
      continue;
    }
    if (errno == EINTR) continue;
    if (errno == EAGAIN || errno == EWOULDBLOCK) {
      CHORUS_RETURN_IF_ERROR(WaitFor(POLLOUT, deadline, "sending to"));
      continue;
    }
    if (errno == EPIPE) return RemoteError(peer_name_, " closed the connection");
    if (errno == ECONNRESET) return RemoteError(peer_name_, " reset the connection");
    return ErrnoError(errno, StrCat("send to ", peer_name_));
  }
  return Status::Ok();
}

Status Socket::RecvAll(void* data, size_t bytes, Deadline deadline) const {
  auto* at = static_cast<char*>(data);
  while (bytes > 0) {
    const ssize_t got = ::recv(fd_, at, bytes, 0);
    if (got > 0) {
      at += got;
      bytes -= static_cast<size_t>(got);
      continue;
    }
    if (got == 0) return RemoteError(peer_name_, " closed the connection");
    if (errno == EINTR) continue;
    if (errno == EAGAIN || errno == EWOULDBLOCK) {
      CHORUS_RETURN_IF_ERROR(WaitFor(POLLIN, deadline, "receiving from"));
      continue;
    }
    if (errno == ECONNRESET) return RemoteError(peer_name_, " reset the connection");
    return ErrnoError(errno, StrCat("recv from ", peer_name_));
  }
  return Status::Ok();
}

Status Socket::LocalAddress(SocketAddress* address) const {
  *address = SocketAddress();
  address->length = sizeof(address->storage);
  if (::getsockname(fd_, address->sockaddr_ptr(), &address->length) != 0) {
    return ErrnoError(errno, "getsockname");
  }
  return Status::Ok();
}

Status Socket::SetNoDelay() const {
  const int on = 1;
  if (::setsockopt(fd_, IPPROTO_TCP, TCP_NODELAY, &on, sizeof(on)) != 0) {
    return ErrnoError(errno, "setsockopt(TCP_NODELAY)");
  }
  return Status::Ok();
}

Status Socket::SetBuffers(const SocketBuffers& buffers) const {
  if (buffers.receive_bytes > 0 &&
      ::setsockopt(fd_, SOL_SOCKET, SO_RCVBUF, &buffers.receive_bytes, sizeof(buffers.receive_bytes)) != 0) {
    return ErrnoError(errno, StrCat("setsockopt(SO_RCVBUF, ", buffers.receive_bytes, ")"));
  }
  if (buffers.send_bytes > 0 &&
      ::setsockopt(fd_, SOL_SOCKET, SO_SNDBUF, &buffers.send_bytes, sizeof(buffers.send_bytes)) != 0) {
    return ErrnoError(errno, StrCat("setsockopt(SO_SNDBUF, ", buffers.send_bytes, ")"));
  }
  return Status::Ok();
}

Status Socket::GetBuffers(SocketBuffers* buffers) const {
  socklen_t length = sizeof(buffers->receive_bytes);
  if (::getsockopt(fd_, SOL_SOCKET, SO_RCVBUF, &buffers->receive_bytes, &length) != 0) {
    return ErrnoError(errno, "getsockopt(SO_RCVBUF)");
  }
  length = sizeof(buffers->send_bytes);
  if (::getsockopt(fd_, SOL_SOCKET, SO_SNDBUF, &buffers->send_bytes, &length) != 0) {
    return ErrnoError(errno, "getsockopt(SO_SNDBUF)");
  }
  return Status::Ok();
}

Status FillRandom(void* data, size_t bytes) {
  auto* at = static_cast<char*>(data);
  while (bytes > 0) {
    const ssize_t got = ::getrandom(at, bytes, 0);
    if (got < 0) {
      if (errno == EINTR) continue;
      return ErrnoError(errno, "getrandom");
    }
    at += got;
    bytes -= static_cast<size_t>(got);
  }
  return Status::Ok();
}

}  // namespace chorus
