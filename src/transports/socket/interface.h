// Which network interface carries Chorus traffic, chosen like NCCL's
// NCCL_SOCKET_IFNAME:
//   ""            first up, non-loopback IPv4 interface (docker* only if
//                 nothing else); loopback if none
//   "eth0,ib"     interfaces whose name starts with one of the prefixes
//   "^lo,docker"  interfaces whose name starts with none of the prefixes
//   "=eth0"       exactly this name ("^=eth0": anything but exactly this)
// Among matches IPv4 comes before IPv6; IPv6 link-local addresses are skipped
// (they need a scope id that "host:port" strings do not carry).
#pragma once

#include <string>
#include <vector>

#include "base/status.h"
#include "transports/socket/socket_address.h"

namespace chorus {

struct NetworkInterface {
  std::string name;
  SocketAddress address;  // port 0
  bool up = false;
  bool loopback = false;
};

// The parsed form of an ifname string.
struct InterfaceFilter {
  bool exclude = false;
  bool exact = false;
  std::vector<std::string> names;  // empty: the default rule

  static InterfaceFilter Parse(const std::string& spec);
  bool Matches(const std::string& interface_name) const;
};

// Pure selection over a given list (testable without a real host).
Status ChooseInterface(const std::string& spec, const std::vector<NetworkInterface>& interfaces,
                       NetworkInterface* chosen);

// The names of the interfaces the default rule ("") chooses among first:
// up, not loopback, IPv4, not docker*; in list order, each name once.
std::vector<std::string> DefaultInterfaceCandidates(const std::vector<NetworkInterface>& interfaces);

// The host's interfaces with an IPv4 or IPv6 address, via getifaddrs.
Status ListInterfaces(std::vector<NetworkInterface>* interfaces);

// ListInterfaces + ChooseInterface.
Status FindInterface(const std::string& spec, NetworkInterface* chosen);

}  // namespace chorus
