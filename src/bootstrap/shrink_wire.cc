// Shrink's building blocks: the listener, single connection attempts, the
// table and the derived secret.
#include <fcntl.h>
#include <poll.h>
#include <sys/socket.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "base/siphash.h"
#include "bootstrap/rendezvous_protocol.h"
#include "bootstrap/shrink_protocol.h"
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

std::string EncodeTable(const Table& table) {
  std::string body(reinterpret_cast<const char*>(table.nonce), kNonceBytes);
  uint8_t word[4];
  PutU32(word, static_cast<uint32_t>(table.survivors.size()));
  body.append(reinterpret_cast<const char*>(word), 4);
  for (int rank : table.survivors) {
    PutU32(word, static_cast<uint32_t>(rank));
    body.append(reinterpret_cast<const char*>(word), 4);
  }
  PutU32(word, static_cast<uint32_t>(table.root_address.size()));
  body.append(reinterpret_cast<const char*>(word), 4);
  return body + table.root_address;
}

Status DecodeTable(const std::string& body, int old_nranks, Table* table) {
  const auto* bytes = reinterpret_cast<const uint8_t*>(body.data());
  size_t at = kNonceBytes;
  if (body.size() < at + 4) return InternalError("shrink: truncated table");
  std::memcpy(table->nonce, bytes, kNonceBytes);
  const uint32_t count = GetU32(bytes + at);
  at += 4;
  if (count < 1 || count > static_cast<uint32_t>(old_nranks) || body.size() - at < 4 * size_t{count} + 4) {
    return InternalError("shrink: bad survivor count ", count, " in the table");
  }
  table->survivors.clear();
  for (uint32_t i = 0; i < count; ++i, at += 4) {
    const int rank = static_cast<int32_t>(GetU32(bytes + at));
    const int previous = table->survivors.empty() ? -1 : table->survivors.back();
    if (rank <= previous || rank >= old_nranks) return InternalError("shrink: bad survivor ", rank, " in the table");
    table->survivors.push_back(rank);
  }
  const uint32_t length = GetU32(bytes + at);
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

Status Probe(const std::string& address, Deadline deadline, bool* alive, Socket* connected) {
  *alive = false;
  SocketAddress target;
  CHORUS_RETURN_IF_ERROR(ParseSocketAddress(address, &target));
  const int fd = ::socket(target.family(), SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) return ErrnoError(errno, "socket");
  Socket attempt(fd, address);
  int error = 0;
  if (::connect(fd, target.sockaddr_ptr(), target.length) != 0) {
    error = errno;
    if (error == EINPROGRESS) {
      const Deadline window = Deadline::AfterMs(std::min(kProbeWindowMs, deadline.RemainingMs()));
      if (!attempt.WaitFor(POLLOUT, window, "probing").ok()) return Status::Ok();  // unreachable
      socklen_t length = sizeof(error);
      if (::getsockopt(fd, SOL_SOCKET, SO_ERROR, &error, &length) != 0) return ErrnoError(errno, "getsockopt");
    }
  }
  if (error != 0) return Status::Ok();  // refused, reset, unreachable: gone
  CHORUS_RETURN_IF_ERROR(attempt.SetNoDelay());
  *connected = std::move(attempt);
  *alive = true;
  return Status::Ok();
}

Status SendReply(const Socket& socket, chorusResult_t code, const std::string& body, Deadline deadline) {
  uint8_t header[kReplyHeaderBytes];
  PutU32(header, static_cast<uint32_t>(code));
  PutU64(header + 4, body.size());
  CHORUS_RETURN_IF_ERROR(socket.SendAll(header, sizeof(header), deadline));
  return socket.SendAll(body.data(), body.size(), deadline);
}

}  // namespace shrink
}  // namespace chorus
