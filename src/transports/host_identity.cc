#include "transports/host_identity.h"

#include <limits.h>
#include <unistd.h>

#include <fstream>

namespace chorus {
namespace {

std::string Hostname() {
  char name[HOST_NAME_MAX + 1] = {};
  if (::gethostname(name, sizeof(name) - 1) != 0 || name[0] == '\0') return "?";
  return name;
}

std::string BootId() {
  std::ifstream file("/proc/sys/kernel/random/boot_id");
  std::string id;
  if (!std::getline(file, id) || id.empty()) return "?";
  return id;
}

std::string NetworkNamespace() {
  char link[128] = {};
  const ssize_t length = ::readlink("/proc/self/ns/net", link, sizeof(link) - 1);
  if (length <= 0) return "?";
  return std::string(link, static_cast<size_t>(length));
}

}  // namespace

std::string HostIdentity() { return Hostname() + "/" + BootId() + "/" + NetworkNamespace(); }

}  // namespace chorus
