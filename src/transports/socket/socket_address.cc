#include "transports/socket/socket_address.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>

#include <charconv>
#include <cstring>
#include <memory>

namespace chorus {

uint16_t SocketAddress::port() const {
  if (family() == AF_INET) return ntohs(reinterpret_cast<const sockaddr_in*>(&storage)->sin_port);
  if (family() == AF_INET6) return ntohs(reinterpret_cast<const sockaddr_in6*>(&storage)->sin6_port);
  return 0;
}

void SocketAddress::set_port(uint16_t port) {
  if (family() == AF_INET) reinterpret_cast<sockaddr_in*>(&storage)->sin_port = htons(port);
  if (family() == AF_INET6) reinterpret_cast<sockaddr_in6*>(&storage)->sin6_port = htons(port);
}

std::string SocketAddress::HostString() const {
  char text[INET6_ADDRSTRLEN] = {};
  if (family() == AF_INET) {
    inet_ntop(AF_INET, &reinterpret_cast<const sockaddr_in*>(&storage)->sin_addr, text, sizeof(text));
  } else if (family() == AF_INET6) {
    inet_ntop(AF_INET6, &reinterpret_cast<const sockaddr_in6*>(&storage)->sin6_addr, text, sizeof(text));
  } else {
    return StrCat("<unknown family ", family(), ">");
  }
  return text;
}

std::string SocketAddress::ToString() const {
  if (family() == AF_INET) return StrCat(HostString(), ":", port());
  if (family() == AF_INET6) return StrCat("[", HostString(), "]:", port());
  return HostString();
}

Status SplitHostPort(const std::string& text, std::string* host, uint16_t* port) {
  size_t colon;
  if (!text.empty() && text[0] == '[') {
    const size_t close = text.find(']');
    if (close == std::string::npos || close + 1 >= text.size() || text[close + 1] != ':') {
      return InvalidArgument("bad address '", text, "': expected [v6addr]:port");
    }
    *host = text.substr(1, close - 1);
    colon = close + 1;
  } else {
    colon = text.rfind(':');
    if (colon == std::string::npos || colon == 0) {
      return InvalidArgument("bad address '", text, "': expected host:port");
    }
    *host = text.substr(0, colon);
    if (host->find(':') != std::string::npos) {
      return InvalidArgument("bad address '", text, "': IPv6 hosts need brackets, [v6addr]:port");
    }
  }
  const char* first = text.data() + colon + 1;
  const char* last = text.data() + text.size();
  unsigned value = 0;
  auto [end, error] = std::from_chars(first, last, value);
  if (first == last || error != std::errc() || end != last || value > 65535) {
    return InvalidArgument("bad port in address '", text, "'");
  }
  if (host->empty()) return InvalidArgument("empty host in address '", text, "'");
  *port = static_cast<uint16_t>(value);
  return Status::Ok();
}

Status ParseSocketAddress(const std::string& text, SocketAddress* address) {
  std::string host;
  uint16_t port = 0;
  CHORUS_RETURN_IF_ERROR(SplitHostPort(text, &host, &port));
  addrinfo hints = {};
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  const int rc = getaddrinfo(host.c_str(), nullptr, &hints, &found);
  if (rc != 0) {
    return InvalidArgument("cannot resolve host '", host, "' of address '", text, "': ", gai_strerror(rc));
  }
  std::unique_ptr<addrinfo, decltype(&freeaddrinfo)> owner(found, freeaddrinfo);
  const addrinfo* chosen = nullptr;
  for (const addrinfo* a = found; a != nullptr; a = a->ai_next) {
    if (a->ai_family == AF_INET) {
      chosen = a;
      break;
    }
    if (a->ai_family == AF_INET6 && chosen == nullptr) chosen = a;
  }
  if (chosen == nullptr) return InvalidArgument("no IPv4/IPv6 address for host '", host, "'");
  *address = SocketAddress();
  std::memcpy(&address->storage, chosen->ai_addr, chosen->ai_addrlen);
  address->length = chosen->ai_addrlen;
  address->set_port(port);
  return Status::Ok();
}

}  // namespace chorus
