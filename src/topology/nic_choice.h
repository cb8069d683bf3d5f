// Which network device a rank uses: the one closest to its CPU binding.
#pragma once

#include <string>
#include <vector>

#include "topology/host_topology.h"

namespace chorus {

// How far a device is from the rank's binding, nearest first.
enum class DeviceDistance { kSameNuma = 0, kSamePackage = 1, kElsewhere = 2, kUnknown = 3 };

// A device is kSameNuma when its NUMA domain holds part of the binding,
// kSamePackage when its package does, kElsewhere otherwise; kUnknown when
// the topology does not place it.
DeviceDistance DistanceToBinding(const HostTopology& topology, const TopologyDevice& device);

// Among `candidates` (network interface names, in the caller's order of
// preference), the index of the one nearest to the binding: same NUMA
// domain, else same package, else any the topology knows. Ties are spread
// over a host's ranks: local rank i takes the (i mod ties)-th. -1 when the
// topology knows none of the candidates (keep the caller's own choice).
int ChooseClosestNetworkDevice(const HostTopology& topology, const std::vector<std::string>& candidates,
                               int local_rank);

}  // namespace chorus
