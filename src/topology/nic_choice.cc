#include "topology/nic_choice.h"

#include <algorithm>

namespace chorus {

DeviceDistance DistanceToBinding(const HostTopology& topology, const TopologyDevice& device) {
  const std::vector<int> domains = topology.BindingNumaDomains();
  if (device.numa >= 0 && std::find(domains.begin(), domains.end(), device.numa) != domains.end()) {
    return DeviceDistance::kSameNuma;
  }
  if (device.package >= 0) {
    for (int domain : domains) {
      if (topology.numa[domain].package == device.package) return DeviceDistance::kSamePackage;
    }
  }
  return device.numa >= 0 || device.package >= 0 ? DeviceDistance::kElsewhere : DeviceDistance::kUnknown;
}

int ChooseClosestNetworkDevice(const HostTopology& topology, const std::vector<std::string>& candidates,
                               int local_rank) {
  std::vector<DeviceDistance> distance(candidates.size(), DeviceDistance::kUnknown);
  for (size_t c = 0; c < candidates.size(); ++c) {
    for (const TopologyDevice& device : topology.devices) {
      if (device.kind == DeviceKind::kNetwork && device.name == candidates[c]) {
        distance[c] = DistanceToBinding(topology, device);
      }
    }
  }
  const auto nearest = std::min_element(distance.begin(), distance.end());
  if (nearest == distance.end() || *nearest == DeviceDistance::kUnknown) return -1;
  std::vector<int> ties;
  for (size_t c = 0; c < candidates.size(); ++c) {
    if (distance[c] == *nearest) ties.push_back(static_cast<int>(c));
  }
  return ties[static_cast<size_t>(std::max(local_rank, 0)) % ties.size()];
}

}  // namespace chorus
