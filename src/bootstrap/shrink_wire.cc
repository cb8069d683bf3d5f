// Shrink's building blocks: the listener, single connection attempts, the
// request and reply, the table and the derived secret.
#include <fcntl.h>
#include <poll.h>
#include <sys/socket.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "base/log.h"
#include "base/siphash.h"
#include "bootstrap/rendezvous_protocol.h"
#include "bootstrap/shrink_protocol.h"
#include "transports/socket/handshake.h"
#include "transports/socket/interface.h"

namespace chorus {

Status OpenRecoveryListener(const std::string& ifname, RecoveryEndpoint* endpoint) {
  NetworkInterface chosen;
  CHORUS_RETURN_IF_ERROR(FindInterface(ifname, &chosen));
  CHORUS_RETURN_IF_ERROR(Socket::Listen(chosen.address, &endpoint->listener));
  SocketAddress bound;
  CHORUS_RETURN_IF_ERROR(endpoint->listener.LocalAddress(&bound));
  endpoint->address = bound.ToString();
  if (endpoint->address.size() >= kRecoveryAddressBytes) {
    return InternalError("recovery listener address '", endpoint->address, "' is too long");
  }
  endpoint->ifname = ifname;
  return Status::Ok();
}

namespace shrink {

using rendezvous::GetU32;
using rendezvous::GetU64;
using rendezvous::PutU32;
using rendezvous::PutU64;

namespace {

void AppendU32(std::string* out, uint32_t value) {
  uint8_t word[4];
  PutU32(word, value);
  out->append(reinterpret_cast<const char*>(word), 4);
}

// n u32 then n old ranks u32, strictly ascending and below `old_nranks`,
// starting at `*at`; `*at` moves past them.
Status ParseRanks(const std::string& body, int old_nranks, size_t* at, std::vector<int>* ranks) {
  const auto* bytes = reinterpret_cast<const uint8_t*>(body.data());
  if (body.size() < *at + 4) return InternalError("shrink: truncated membership");
  const uint32_t count = GetU32(bytes + *at);
  *at += 4;
  if (count < 1 || count > static_cast<uint32_t>(old_nranks) || body.size() - *at < 4 * size_t{count}) {
    return InternalError("shrink: bad member count ", count);
  }
  ranks->clear();
  for (uint32_t i = 0; i < count; ++i, *at += 4) {
    const int rank = static_cast<int32_t>(GetU32(bytes + *at));
    const int previous = ranks->empty() ? -1 : ranks->back();
    if (rank <= previous || rank >= old_nranks) return InternalError("shrink: bad member ", rank);
    ranks->push_back(rank);
  }
  return Status::Ok();
}

}  // namespace

std::string EncodeRanks(const std::vector<int>& ranks) {
  std::string body;
  AppendU32(&body, static_cast<uint32_t>(ranks.size()));
  for (int rank : ranks) AppendU32(&body, static_cast<uint32_t>(rank));
  return body;
}

Status DecodeRanks(const std::string& body, int old_nranks, std::vector<int>* ranks) {
  size_t at = 0;
  CHORUS_RETURN_IF_ERROR(ParseRanks(body, old_nranks, &at, ranks));
  if (at != body.size()) return InternalError("shrink: trailing bytes after a membership");
  return Status::Ok();
}

std::string FormatRanks(const std::vector<int>& ranks) {
  std::string text = "{";
  for (size_t i = 0; i < ranks.size(); ++i) {
    if (i > 0) text += ',';
    text += std::to_string(ranks[i]);
  }
  text += '}';
  return text;
}

Status LeftOutError(int rank, const std::vector<int>& agreed, int told_by) {
  return RemoteError("rank ", rank, " was left out of a shrink that ranks ", FormatRanks(agreed),
                     " completed (told by rank ", told_by,
                     "): it did not take part before their root stopped "
                     "waiting for it. It cannot form a communicator without them; they go on without it");
}

std::string EncodeTable(const Table& table) {
  std::string body(reinterpret_cast<const char*>(table.nonce), kNonceBytes);
  body += EncodeRanks(table.survivors);
  AppendU32(&body, static_cast<uint32_t>(table.root_address.size()));
  return body + table.root_address;
}

Status DecodeTable(const std::string& body, int old_nranks, Table* table) {
  if (body.size() < kNonceBytes) return InternalError("shrink: truncated table");
  std::memcpy(table->nonce, body.data(), kNonceBytes);
  size_t at = kNonceBytes;
  CHORUS_RETURN_IF_ERROR(ParseRanks(body, old_nranks, &at, &table->survivors));
  if (body.size() - at < 4) return InternalError("shrink: truncated table");
  const uint32_t length = GetU32(reinterpret_cast<const uint8_t*>(body.data()) + at);
  at += 4;
  if (length == 0 || body.size() - at != length) return InternalError("shrink: bad root address in the table");
  table->root_address.assign(body, at, length);
  return Status::Ok();
}

void DeriveSecret(const uint8_t old_secret[16], const uint8_t nonce[kNonceBytes], uint8_t out[16]) {
  static constexpr char kLabel[] = "chorus-shrink";
  uint8_t message[sizeof(kLabel) + kNonceBytes];
  std::memcpy(message, kLabel, sizeof(kLabel));
  std::memcpy(message + sizeof(kLabel), nonce, kNonceBytes);
  SipHash128(old_secret, message, sizeof(message), out);
}

namespace {

// Only the host's kernel answering proves a rank gone: a refusal (nothing
// listens there any more) or a reset (the connection had completed into the
// listener's queue when the listener closed: its process was exiting). No
// route, a host unreachable or a timeout may be a partition, behind which
// the rank lives on.
ProbeState AfterError(int error) {
  return error == ECONNREFUSED || error == ECONNRESET ? ProbeState::kGone : ProbeState::kUnreachable;
}

}  // namespace

Status StartProbe(const std::string& address, Socket* attempt, ProbeState* state) {
  SocketAddress target;
  CHORUS_RETURN_IF_ERROR(ParseSocketAddress(address, &target));
  const int fd = ::socket(target.family(), SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) return ErrnoError(errno, "socket");
  Socket started(fd, address);
  if (::connect(fd, target.sockaddr_ptr(), target.length) != 0) {
    if (errno != EINPROGRESS) {
      *state = AfterError(errno);
      return Status::Ok();
    }
    *state = ProbeState::kPending;
  } else {
    CHORUS_RETURN_IF_ERROR(started.SetNoDelay());
    *state = ProbeState::kConnected;
  }
  *attempt = std::move(started);
  return Status::Ok();
}

Status FinishProbe(Socket* attempt, ProbeState* state) {
  int error = 0;
  socklen_t length = sizeof(error);
  if (::getsockopt(attempt->fd(), SOL_SOCKET, SO_ERROR, &error, &length) != 0) return ErrnoError(errno, "getsockopt");
  if (error != 0) {
    *attempt = Socket();
    *state = AfterError(error);
    return Status::Ok();
  }
  CHORUS_RETURN_IF_ERROR(attempt->SetNoDelay());
  *state = ProbeState::kConnected;
  return Status::Ok();
}

Status Probe(const std::string& address, Deadline deadline, ProbeState* state, Socket* connected) {
  Socket attempt;
  CHORUS_RETURN_IF_ERROR(StartProbe(address, &attempt, state));
  if (*state == ProbeState::kPending) {
    // Unreachable only after the whole window: the caller's deadline
    // cutting it short is a timeout, not an answer.
    const bool whole_window = deadline.RemainingMs() > kProbeWindowMs;
    const Deadline window = whole_window ? Deadline::AfterMs(kProbeWindowMs) : deadline;
    if (!attempt.WaitFor(POLLOUT, window, "probing").ok()) {
      if (!whole_window) return TimeoutError("probing ", address, ": the deadline passed before it answered");
      *state = ProbeState::kUnreachable;
      return Status::Ok();
    }
    CHORUS_RETURN_IF_ERROR(FinishProbe(&attempt, state));
  }
  if (*state == ProbeState::kConnected) *connected = std::move(attempt);
  return Status::Ok();
}

Status SendRequest(const RecoveryEndpoint& endpoint, const Socket& socket, Deadline deadline) {
  Hello hello;
  hello.purpose = ConnectionPurpose::kRendezvous;
  hello.rank = endpoint.rank;
  CHORUS_RETURN_IF_ERROR(ConnectHandshake(socket, endpoint.secret, hello, deadline));
  uint8_t request[kJoinBytes];
  PutU32(request, kJoinMagic);
  PutU32(request + 4, static_cast<uint32_t>(endpoint.rank));
  PutU32(request + 8, static_cast<uint32_t>(endpoint.nranks));
  return socket.SendAll(request, sizeof(request), deadline);
}

Status ReadReply(const Socket& socket, Deadline deadline, Reply* reply) {
  uint8_t header[kReplyHeaderBytes];
  CHORUS_RETURN_IF_ERROR(socket.RecvAll(header, sizeof(header), deadline));
  reply->code = GetU32(header);
  const uint64_t body_bytes = GetU64(header + 4);
  const bool known =
      reply->code < chorusNumResults || reply->code == kReplyLeftOut || reply->code == kReplyNotShrinking;
  if (!known || body_bytes > kMaxBodyBytes) return InternalError("shrink: malformed reply from ", socket.peer_name());
  reply->body.assign(body_bytes, '\0');
  return socket.RecvAll(reply->body.data(), reply->body.size(), deadline);
}

AcceptorOptions RequestAcceptorOptions(const RecoveryEndpoint& endpoint, const std::string& where) {
  AcceptorOptions options;
  options.purpose = ConnectionPurpose::kRendezvous;
  options.where = where;
  options.budget_ms = rendezvous::kPerConnectionTimeoutMs;
  // The root expects every rank, possibly all from one host.
  options.max_pending_per_source = std::max(kMaxPendingPerSource, endpoint.nranks);
  options.framing = [](const std::string& received, size_t* more) {
    *more = kJoinBytes - received.size();
    return Status::Ok();
  };
  const int rank = endpoint.rank;
  options.on_drop = [rank, where](const Status& why) {
    // Abandoned probes and joins end here as well as strangers: not worth a warning.
    CHORUS_TRACE("SHRINK", "rank ", rank, ": ", where, " dropped a connection: ", why.message());
  };
  return options;
}

Status CheckRequest(const RecoveryEndpoint& endpoint, const AdmittedConnection& connection, Deadline deadline,
                    int* asker) {
  const auto* request = reinterpret_cast<const uint8_t*>(connection.request.data());
  const Socket& socket = connection.socket;
  if (connection.request.size() != kJoinBytes) return InternalError("shrink: truncated request");
  const int rank = static_cast<int32_t>(GetU32(request + 4));
  const int nranks = static_cast<int32_t>(GetU32(request + 8));
  Status valid;
  if (GetU32(request) != kJoinMagic || rank != connection.hello.rank) {
    valid = InvalidUsage("malformed shrink request from ", socket.peer_name());
  } else if (nranks != endpoint.nranks || rank < 0 || rank >= nranks || rank == endpoint.rank) {
    valid =
        InvalidUsage("rank ", endpoint.rank, " of ", endpoint.nranks, " ranks cannot answer a shrink request of rank ",
                     rank, " of ", nranks, " (different communicators)");
  }
  if (!valid.ok()) {
    SendReply(socket, valid.code(), valid.message(), deadline).IgnoreError();
    return valid;
  }
  *asker = rank;
  return Status::Ok();
}

Status SendReply(const Socket& socket, uint32_t code, const std::string& body, Deadline deadline) {
  uint8_t header[kReplyHeaderBytes];
  PutU32(header, code);
  PutU64(header + 4, body.size());
  CHORUS_RETURN_IF_ERROR(socket.SendAll(header, sizeof(header), deadline));
  return socket.SendAll(body.data(), body.size(), deadline);
}

}  // namespace shrink
}  // namespace chorus
