#include "transports/tcp/tcp_interface_choice.h"

#include "base/log.h"
#include "topology/nic_choice.h"

namespace chorus {

std::string TcpInterfaceSpec(const std::string& ifname, const HostTopology* topology, int local_rank,
                             const std::vector<NetworkInterface>& interfaces) {
  if (!ifname.empty() || topology == nullptr) return ifname;
  const std::vector<std::string> candidates = DefaultInterfaceCandidates(interfaces);
  if (candidates.size() < 2) return ifname;
  const int chosen = ChooseClosestNetworkDevice(*topology, candidates, local_rank);
  return chosen < 0 ? ifname : "=" + candidates[chosen];
}

bool TcpMayChooseInterface(const std::string& ifname) {
  std::vector<NetworkInterface> interfaces;
  return ifname.empty() && ListInterfaces(&interfaces).ok() && DefaultInterfaceCandidates(interfaces).size() > 1;
}

std::string ChooseInterfaceSpec(const TransportOptions& options) {
  if (!options.ifname.empty() || options.topology == nullptr) return options.ifname;
  std::vector<NetworkInterface> interfaces;
  if (!ListInterfaces(&interfaces).ok()) return options.ifname;
  std::string spec = TcpInterfaceSpec(options.ifname, options.topology, options.local_rank, interfaces);
  if (!spec.empty()) {
    CHORUS_INFO("NET", "rank ", options.rank, ": interface ", spec.substr(1), " is nearest to its CPUs (local rank ",
                options.local_rank, ")");
  }
  return spec;
}

}  // namespace chorus
