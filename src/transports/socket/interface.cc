#include "transports/socket/interface.h"

#include <ifaddrs.h>
#include <net/if.h>
#include <netinet/in.h>

#include <algorithm>
#include <cstring>
#include <memory>

namespace chorus {
namespace {

bool IsUsableAddress(const SocketAddress& address) {
  if (address.family() == AF_INET) return true;
  if (address.family() != AF_INET6) return false;
  const auto* v6 = reinterpret_cast<const sockaddr_in6*>(&address.storage);
  return !IN6_IS_ADDR_LINKLOCAL(&v6->sin6_addr);
}

// First match in list order, IPv4 before IPv6.
template <typename Predicate>
const NetworkInterface* FirstMatch(const std::vector<NetworkInterface>& interfaces, Predicate accept) {
  for (int family : {AF_INET, AF_INET6}) {
    for (const NetworkInterface& candidate : interfaces) {
      if (candidate.up && candidate.address.family() == family && IsUsableAddress(candidate.address) &&
          accept(candidate)) {
        return &candidate;
      }
    }
  }
  return nullptr;
}

}  // namespace

InterfaceFilter InterfaceFilter::Parse(const std::string& spec) {
  InterfaceFilter filter;
  size_t at = 0;
  if (at < spec.size() && spec[at] == '^') {
    filter.exclude = true;
    ++at;
  }
  if (at < spec.size() && spec[at] == '=') {
    filter.exact = true;
    ++at;
  }
  while (at <= spec.size()) {
    size_t comma = spec.find(',', at);
    if (comma == std::string::npos) comma = spec.size();
    std::string name = spec.substr(at, comma - at);
    if (!name.empty()) filter.names.push_back(std::move(name));
    at = comma + 1;
  }
  return filter;
}

bool InterfaceFilter::Matches(const std::string& interface_name) const {
  bool listed = false;
  for (const std::string& name : names) {
    listed = exact ? interface_name == name : interface_name.compare(0, name.size(), name) == 0;
    if (listed) break;
  }
  return listed != exclude;
}

Status ChooseInterface(const std::string& spec, const std::vector<NetworkInterface>& interfaces,
                       NetworkInterface* chosen) {
  const InterfaceFilter filter = InterfaceFilter::Parse(spec);
  const NetworkInterface* match = nullptr;
  if (filter.names.empty()) {
    // As NCCL: a real NIC first, a container bridge only if nothing else.
    match = FirstMatch(interfaces, [](const NetworkInterface& i) {
      return !i.loopback && i.address.family() == AF_INET && i.name.rfind("docker", 0) != 0;
    });
    if (match == nullptr) {
      match = FirstMatch(interfaces,
                         [](const NetworkInterface& i) { return !i.loopback && i.address.family() == AF_INET; });
    }
    if (match == nullptr) {
      match = FirstMatch(interfaces, [](const NetworkInterface& i) { return i.loopback; });
    }
  } else {
    match = FirstMatch(interfaces, [&filter](const NetworkInterface& i) { return filter.Matches(i.name); });
  }
  if (match == nullptr) {
    std::string available;
    for (const NetworkInterface& i : interfaces) {
      available += StrCat(available.empty() ? "" : ", ", i.name, "=", i.address.HostString(), i.up ? "" : " (down)");
    }
    // A named interface that is only down (set down, or no carrier) is a
    // network failure, not a bad setting: the same call works once the link
    // is back, and a caller that shrinks after a failure must see it as one.
    for (const NetworkInterface& i : interfaces) {
      if (filter.names.empty() || i.up || !IsUsableAddress(i.address) || !filter.Matches(i.name)) continue;
      return RemoteError("network interface ", i.name, " (", i.address.HostString(), ") that CHORUS_SOCKET_IFNAME='",
                         spec, "' names is down: this host is cut off (available: ", available, ")");
    }
    return InvalidArgument("no network interface matches CHORUS_SOCKET_IFNAME='", spec,
                           "' (available: ", available.empty() ? "none" : available, ")");
  }
  *chosen = *match;
  return Status::Ok();
}

std::vector<std::string> DefaultInterfaceCandidates(const std::vector<NetworkInterface>& interfaces) {
  std::vector<std::string> names;
  for (const NetworkInterface& i : interfaces) {
    if (!i.up || i.loopback || i.address.family() != AF_INET || i.name.rfind("docker", 0) == 0) continue;
    if (std::find(names.begin(), names.end(), i.name) == names.end()) names.push_back(i.name);
  }
  return names;
}

Status ListInterfaces(std::vector<NetworkInterface>* interfaces) {
  ifaddrs* list = nullptr;
  if (getifaddrs(&list) != 0) return ErrnoError(errno, "getifaddrs");
  std::unique_ptr<ifaddrs, decltype(&freeifaddrs)> owner(list, freeifaddrs);
  interfaces->clear();
  for (const ifaddrs* entry = list; entry != nullptr; entry = entry->ifa_next) {
    if (entry->ifa_addr == nullptr) continue;
    const int family = entry->ifa_addr->sa_family;
    if (family != AF_INET && family != AF_INET6) continue;
    NetworkInterface item;
    item.name = entry->ifa_name;
    item.up = (entry->ifa_flags & IFF_UP) != 0 && (entry->ifa_flags & IFF_RUNNING) != 0;
    item.loopback = (entry->ifa_flags & IFF_LOOPBACK) != 0;
    item.address.length = family == AF_INET ? sizeof(sockaddr_in) : sizeof(sockaddr_in6);
    std::memcpy(&item.address.storage, entry->ifa_addr, item.address.length);
    item.address.set_port(0);
    interfaces->push_back(std::move(item));
  }
  return Status::Ok();
}

Status FindInterface(const std::string& spec, NetworkInterface* chosen) {
  std::vector<NetworkInterface> interfaces;
  CHORUS_RETURN_IF_ERROR(ListInterfaces(&interfaces));
  return ChooseInterface(spec, interfaces, chosen);
}

}  // namespace chorus
