// CHORUS_SOCKET_IFNAME: InterfaceFilter::Parse and ChooseInterface on any
// text, over a fixed list of interfaces (no host lookup).
#include <arpa/inet.h>
#include <netinet/in.h>

#include <cstring>
#include <string>
#include <vector>

#include "fuzz_check.h"
#include "transports/socket/interface.h"

namespace chorus {
namespace {

NetworkInterface Interface(const char* name, int family, const char* address, bool up, bool loopback) {
  NetworkInterface item;
  item.name = name;
  item.up = up;
  item.loopback = loopback;
  if (family == AF_INET) {
    auto* v4 = reinterpret_cast<sockaddr_in*>(&item.address.storage);
    v4->sin_family = AF_INET;
    inet_pton(AF_INET, address, &v4->sin_addr);
    item.address.length = sizeof(sockaddr_in);
  } else {
    auto* v6 = reinterpret_cast<sockaddr_in6*>(&item.address.storage);
    v6->sin6_family = AF_INET6;
    inet_pton(AF_INET6, address, &v6->sin6_addr);
    item.address.length = sizeof(sockaddr_in6);
  }
  return item;
}

const std::vector<NetworkInterface>& Interfaces() {
  static const std::vector<NetworkInterface> list = {
      Interface("lo", AF_INET, "127.0.0.1", true, true),
      Interface("eth0", AF_INET, "10.0.0.2", true, false),
      Interface("eth0", AF_INET6, "fe80::1", true, false),
      Interface("eth1", AF_INET6, "2001:db8::2", true, false),
      Interface("docker0", AF_INET, "172.17.0.1", true, false),
      Interface("ib0", AF_INET, "192.168.0.2", false, false),
  };
  return list;
}

}  // namespace
}  // namespace chorus

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace chorus;
  const std::string spec(reinterpret_cast<const char*>(data), size);
  const InterfaceFilter filter = InterfaceFilter::Parse(spec);
  for (const std::string& name : filter.names) FUZZ_CHECK(!name.empty() && name.find(',') == std::string::npos);
  NetworkInterface chosen;
  if (ChooseInterface(spec, Interfaces(), &chosen).ok()) {
    FUZZ_CHECK(chosen.up);
    if (!filter.names.empty()) FUZZ_CHECK(filter.Matches(chosen.name));
  }
  return 0;
}
