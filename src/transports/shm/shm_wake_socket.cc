#include "transports/shm/shm_wake_socket.h"

#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstddef>

namespace chorus {
namespace shm {
namespace {

// "\0chorus-wake-" and the nonce in hex: unique per segment.
socklen_t WakeAddress(const SegmentHeader& header, sockaddr_un* address) {
  static constexpr char kPrefix[] = "chorus-wake-";
  static constexpr char kHex[] = "0123456789abcdef";
  *address = sockaddr_un();
  address->sun_family = AF_UNIX;
  size_t length = 1;  // sun_path[0] == 0: the abstract namespace
  for (const char* c = kPrefix; *c != '\0'; ++c) address->sun_path[length++] = *c;
  for (uint8_t byte : header.nonce) {
    address->sun_path[length++] = kHex[byte >> 4];
    address->sun_path[length++] = kHex[byte & 15];
  }
  static_assert(1 + sizeof(kPrefix) - 1 + 2 * kMacBytes <= sizeof(sockaddr_un::sun_path), "wake name fits");
  return static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + length);
}

}  // namespace

int OpenWakeSocket(const SegmentHeader& header) {
  const int fd = ::socket(AF_UNIX, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) return -1;
  sockaddr_un address;
  const socklen_t length = WakeAddress(header, &address);
  if (::bind(fd, reinterpret_cast<const sockaddr*>(&address), length) != 0) {
    ::close(fd);
    return -1;
  }
  return fd;
}

void SendWake(const SegmentHeader& header) {
  const int fd = ::socket(AF_UNIX, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) return;
  sockaddr_un address;
  const socklen_t length = WakeAddress(header, &address);
  const char byte = 1;
  [[maybe_unused]] ssize_t sent =
      ::sendto(fd, &byte, 1, MSG_DONTWAIT | MSG_NOSIGNAL, reinterpret_cast<const sockaddr*>(&address), length);
  ::close(fd);
}

void DrainWakeSocket(int fd) {
  char bytes[64];
  while (::recv(fd, bytes, sizeof(bytes), MSG_DONTWAIT) > 0) {
  }
}

}  // namespace shm
}  // namespace chorus
