// A communicator's view of where its ranks sit: each rank's host and NUMA
// node (exchanged in PeerInfo), and the CPUs its own helper threads use.
#pragma once

#include <string>
#include <vector>

#include "base/status.h"
#include "topology/host_topology.h"

namespace chorus {

// This rank's topology for a new communicator: CHORUS_TOPO_FILE when set (a
// bad file fails creation), else discovered; a machine hwloc cannot read is
// taken as flat, with a warning. Writes CHORUS_TOPO_DUMP_FILE when set.
// `io_devices`: look for this machine's NICs too (only to choose one).
Status RankTopology(int rank, bool io_devices, HostTopology* out);

// The NUMA node (kernel number) of this rank's binding, -1 when it spans
// nodes or none is known: what the rank tells the others.
int BindingNumaNode(const HostTopology& topology);

// "host a: NUMA 0: 0,1; NUMA 1: 2,3 | host b: NUMA ?: 4,5": the INFO line a
// communicator logs once at creation. `host_of_rank` holds the ranks' host
// identities (only their hostname part is shown); NUMA -1 shows as "?".
std::string DescribeRankLayout(const std::vector<std::string>& host_of_rank, const std::vector<int>& numa_of_rank);

}  // namespace chorus
