// Socket addresses as the rest of Chorus sees them: "host:port" strings
// ("[v6addr]:port" for IPv6) and the sockaddr they stand for.
#pragma once

#include <sys/socket.h>

#include <cstdint>
#include <string>

#include "base/status.h"

namespace chorus {

struct SocketAddress {
  sockaddr_storage storage = {};
  socklen_t length = 0;

  int family() const { return storage.ss_family; }
  uint16_t port() const;
  void set_port(uint16_t port);
  const sockaddr* sockaddr_ptr() const { return reinterpret_cast<const sockaddr*>(&storage); }
  sockaddr* sockaddr_ptr() { return reinterpret_cast<sockaddr*>(&storage); }

  // "1.2.3.4:80" or "[::1]:80"; "<unknown family N>" otherwise.
  std::string ToString() const;
  // Numeric host only, without the port or brackets.
  std::string HostString() const;
};

// Splits "host:port" / "[v6]:port" into its parts; the port must be 0-65535.
Status SplitHostPort(const std::string& text, std::string* host, uint16_t* port);

// Parses "host:port"; host may be numeric (v4, v6 in brackets) or a name,
// resolved with getaddrinfo (IPv4 preferred).
Status ParseSocketAddress(const std::string& text, SocketAddress* address);

}  // namespace chorus
