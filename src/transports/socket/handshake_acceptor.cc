#include "transports/socket/handshake_acceptor.h"

#include <sys/socket.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "base/log.h"

namespace chorus {

// One connection on its way through the handshake: it sends the challenge,
// reads the reply, sends the answer, then reads the request. A send step
// keeps what is left in `out`; a read step fills `reply` or `request`.
struct HandshakeAcceptor::Pending {
  enum class Phase { kSendChallenge, kReadReply, kSendAnswer, kReadRequest };

  Socket socket;
  std::string source;  // the peer's host, without the port
  uint64_t order = 0;
  Deadline expires = Deadline::Never();
  Phase phase = Phase::kSendChallenge;
  uint8_t challenge[kHandshakeChallengeBytes] = {};
  uint8_t out[kHandshakeAnswerBytes] = {};
  size_t out_bytes = 0;
  size_t out_sent = 0;
  uint8_t reply[kHandshakeReplyBytes] = {};
  size_t reply_bytes = 0;
  Hello hello;
  std::string request;
  size_t request_more = 0;

  short events() const {
    return phase == Phase::kSendChallenge || phase == Phase::kSendAnswer ? POLLOUT : POLLIN;
  }
};

namespace {

// What one non-blocking transfer did.
enum class Io { kDone, kAgain, kClosed, kError };

Io SendSome(const Socket& socket, const uint8_t* data, size_t bytes, size_t* sent, int* error) {
  while (*sent < bytes) {
    const ssize_t n = ::send(socket.fd(), data + *sent, bytes - *sent, MSG_NOSIGNAL);
    if (n > 0) {
      *sent += static_cast<size_t>(n);
      continue;
    }
    if (errno == EINTR) continue;
    if (errno == EAGAIN || errno == EWOULDBLOCK) return Io::kAgain;
    *error = errno;
    return errno == EPIPE || errno == ECONNRESET ? Io::kClosed : Io::kError;
  }
  return Io::kDone;
}

// Reads exactly up to `bytes` (never past them: what follows belongs to the
// caller, e.g. a TCP lane's first message).
Io RecvSome(const Socket& socket, uint8_t* data, size_t bytes, size_t* received, int* error) {
  while (*received < bytes) {
    const ssize_t n = ::recv(socket.fd(), data + *received, bytes - *received, 0);
    if (n > 0) {
      *received += static_cast<size_t>(n);
      continue;
    }
    if (n == 0) return Io::kClosed;
    if (errno == EINTR) continue;
    if (errno == EAGAIN || errno == EWOULDBLOCK) return Io::kAgain;
    *error = errno;
    return errno == ECONNRESET ? Io::kClosed : Io::kError;
  }
  return Io::kDone;
}

Status IoFailure(Io io, int error, const Socket& socket, const char* while_doing) {
  if (io == Io::kClosed) return RemoteError(socket.peer_name(), " closed the connection ", while_doing);
  return ErrnoError(error, StrCat(while_doing, " (", socket.peer_name(), ")"));
}

}  // namespace

HandshakeAcceptor::HandshakeAcceptor(const Socket& listener, const uint8_t secret[kSecretBytes],
                                     AcceptorOptions options)
    : listener_(listener), options_(std::move(options)) {
  std::memcpy(secret_, secret, sizeof(secret_));
  if (!options_.on_drop) {
    const std::string where = options_.where;
    options_.on_drop = [where](const Status& why) { WarnDroppedConnection(where, why); };
  }
  set_max_pending_per_source(options_.max_pending_per_source);
}

HandshakeAcceptor::~HandshakeAcceptor() = default;

size_t HandshakeAcceptor::pending() const { return pending_.size(); }

Status HandshakeAcceptor::Admit(Deadline until, std::vector<AdmittedConnection>* admitted) {
  std::vector<pollfd> entries;
  AppendPollEntries(&entries);
  const int ready = ::poll(entries.data(), entries.size(), PollTimeoutMs(until));
  if (ready < 0 && errno != EINTR) return ErrnoError(errno, StrCat(options_.where, ": poll"));
  if (ready <= 0) {
    for (pollfd& entry : entries) entry.revents = 0;
  }
  return Handle(entries, admitted);
}

void HandshakeAcceptor::AppendPollEntries(std::vector<pollfd>* entries) {
  first_entry_ = entries->size();
  entries->push_back({listener_.fd(), POLLIN, 0});
  for (const Pending& pending : pending_) entries->push_back({pending.socket.fd(), pending.events(), 0});
  entries_ = 1 + pending_.size();
}

int HandshakeAcceptor::PollTimeoutMs(Deadline until) const {
  Deadline soonest = until;
  for (const Pending& pending : pending_) {
    if (pending.expires.time_point() < soonest.time_point()) soonest = pending.expires;
  }
  // Sliced, so that a far deadline is still looked at again.
  return soonest.RemainingMs(1000);
}

Status HandshakeAcceptor::Handle(const std::vector<pollfd>& entries, std::vector<AdmittedConnection>* admitted) {
  if (entries_ == 0 || entries.size() < first_entry_ + entries_) return InternalError(options_.where, ": stale poll entries");
  // Pending connections first, from the back, so that erasing one leaves the
  // indices still to visit (and their entries) in place.
  for (size_t i = entries_ - 1; i >= 1; --i) {
    const pollfd& entry = entries[first_entry_ + i];
    if (entry.revents == 0) continue;
    if (i - 1 >= pending_.size() || pending_[i - 1].socket.fd() != entry.fd) {
      return InternalError(options_.where, ": poll entries out of step");
    }
    AdvanceAt(i - 1, admitted);
  }
  entries_ = 0;
  DropExpired();
  if (entries[first_entry_].revents != 0) return AcceptNew(admitted);
  return Status::Ok();
}

Status HandshakeAcceptor::AcceptNew(std::vector<AdmittedConnection>* admitted) {
  // Bounded per round, so that a flood does not starve the connections
  // already pending.
  for (int round = 0; round < 256; ++round) {
    SocketAddress remote;
    remote.length = sizeof(remote.storage);
    const int fd = ::accept4(listener_.fd(), remote.sockaddr_ptr(), &remote.length, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0) {
      const int error = errno;
      // Errors of the aborted connection itself are not the listener's fault.
      if (error == EINTR || error == ECONNABORTED || error == EPROTO) continue;
      if (error == EAGAIN || error == EWOULDBLOCK) return Status::Ok();  // nothing more queued
      const bool out_of_descriptors = error == EMFILE || error == ENFILE || error == ENOBUFS || error == ENOMEM;
      if (out_of_descriptors && !pending_.empty()) {
        // Free one (the oldest stranger) instead of spinning on a listener
        // that stays readable.
        size_t oldest = 0;
        for (size_t i = 1; i < pending_.size(); ++i) {
          if (pending_[i].order < pending_[oldest].order) oldest = i;
        }
        Drop(oldest, ErrnoError(error, "accept; dropped the oldest connection waiting to authenticate"));
        return Status::Ok();
      }
      return ErrnoError(error, StrCat(options_.where, ": accept"));
    }
    Pending pending;
    pending.socket = Socket(fd, remote.ToString());
    pending.source = remote.HostString();
    pending.order = accepted_++;
    pending.expires = Deadline::AfterMs(options_.budget_ms);
    // Small messages both ways: no Nagle delay on the request's reply.
    Status nodelay = pending.socket.SetNoDelay();
    if (!nodelay.ok()) {
      options_.on_drop(nodelay.WithContext(StrCat("connection from ", pending.socket.peer_name())));
      continue;
    }
    CHORUS_RETURN_IF_ERROR(NewHandshakeChallenge(pending.challenge));
    std::memcpy(pending.out, pending.challenge, kHandshakeChallengeBytes);
    pending.out_bytes = kHandshakeChallengeBytes;
    MakeRoomFor(pending.source);
    pending_.push_back(std::move(pending));
    AdvanceAt(pending_.size() - 1, admitted);
  }
  return Status::Ok();
}

void HandshakeAcceptor::MakeRoomFor(const std::string& source) {
  size_t count = 0;
  size_t oldest = pending_.size();
  for (size_t i = 0; i < pending_.size(); ++i) {
    if (pending_[i].source != source) continue;
    ++count;
    if (oldest == pending_.size() || pending_[i].order < pending_[oldest].order) oldest = i;
  }
  if (count < static_cast<size_t>(options_.max_pending_per_source)) return;
  Drop(oldest, InvalidUsage("connection from ", pending_[oldest].socket.peer_name(), " pushed out: ",
                            options_.max_pending_per_source, " newer connections from ", source,
                            " are waiting to authenticate"));
}

void HandshakeAcceptor::DropExpired() {
  for (size_t i = pending_.size(); i-- > 0;) {
    if (!pending_[i].expires.Expired()) continue;
    Drop(i, TimeoutError("connection from ", pending_[i].socket.peer_name(), " did not authenticate and send its ",
                         "request within ", options_.budget_ms, " ms"));
  }
}

void HandshakeAcceptor::Drop(size_t index, const Status& why) {
  pending_.erase(pending_.begin() + static_cast<std::ptrdiff_t>(index));  // closes it
  options_.on_drop(why);
}

bool HandshakeAcceptor::ClosedWithoutAWord(const Pending& pending, const Status& why) {
  const bool silent = pending.phase == Pending::Phase::kSendChallenge ||
                      (pending.phase == Pending::Phase::kReadReply && pending.reply_bytes == 0);
  return silent && why.code() == chorusRemoteError;
}

void HandshakeAcceptor::AdvanceAt(size_t index, std::vector<AdmittedConnection>* admitted) {
  Status why;
  switch (Advance(pending_[index], &why)) {
    case Step::kWaiting:
      return;
    case Step::kFailed:
      if (ClosedWithoutAWord(pending_[index], why)) {
        // A liveness probe (or a port scan): it sent nothing, so it cannot
        // be a peer that failed to authenticate; not worth a warning.
        CHORUS_TRACE("NET", options_.where, ": ", why.message());
        pending_.erase(pending_.begin() + static_cast<std::ptrdiff_t>(index));
        return;
      }
      Drop(index, why);
      return;
    case Step::kAdmitted: {
      Pending& done = pending_[index];
      admitted->push_back({std::move(done.socket), done.hello, std::move(done.request)});
      pending_.erase(pending_.begin() + static_cast<std::ptrdiff_t>(index));
      return;
    }
  }
}

HandshakeAcceptor::Step HandshakeAcceptor::Advance(Pending& pending, Status* why) {
  using Phase = Pending::Phase;
  int error = 0;
  while (true) {
    switch (pending.phase) {
      case Phase::kSendChallenge:
      case Phase::kSendAnswer: {
        const Io io = SendSome(pending.socket, pending.out, pending.out_bytes, &pending.out_sent, &error);
        if (io == Io::kAgain) return Step::kWaiting;
        if (io != Io::kDone) {
          *why = IoFailure(io, error, pending.socket, "during the handshake");
          return Step::kFailed;
        }
        pending.out_sent = 0;
        if (pending.phase == Phase::kSendChallenge) {
          pending.phase = Phase::kReadReply;
          continue;
        }
        pending.phase = Phase::kReadRequest;
        pending.request_more = 0;
        if (options_.framing) {
          *why = options_.framing(pending.request, &pending.request_more);
          if (!why->ok()) return Step::kFailed;
        }
        if (pending.request_more == 0) return Step::kAdmitted;
        continue;
      }
      case Phase::kReadReply: {
        const Io io = RecvSome(pending.socket, pending.reply, sizeof(pending.reply), &pending.reply_bytes, &error);
        if (io == Io::kAgain) return Step::kWaiting;
        if (io != Io::kDone) {
          *why = IoFailure(io, error, pending.socket, "before authenticating");
          return Step::kFailed;
        }
        *why = CheckHandshakeReply(secret_, options_.purpose, pending.challenge, pending.reply,
                                   pending.socket.peer_name(), &pending.hello, pending.out);
        if (!why->ok()) return Step::kFailed;
        pending.out_bytes = kHandshakeAnswerBytes;
        pending.phase = Phase::kSendAnswer;
        continue;
      }
      case Phase::kReadRequest: {
        const size_t had = pending.request.size();
        pending.request.resize(had + pending.request_more);
        size_t received = had;
        const Io io = RecvSome(pending.socket, reinterpret_cast<uint8_t*>(pending.request.data()),
                               pending.request.size(), &received, &error);
        pending.request_more -= received - had;
        pending.request.resize(received);
        if (io == Io::kAgain) return Step::kWaiting;
        if (io != Io::kDone) {
          *why = IoFailure(io, error, pending.socket, "before its request was complete");
          return Step::kFailed;
        }
        *why = options_.framing(pending.request, &pending.request_more);
        if (!why->ok()) return Step::kFailed;
        if (pending.request_more == 0) return Step::kAdmitted;
        continue;
      }
    }
  }
}

}  // namespace chorus
