// Host topologies built directly, as discovery would fill them.
#pragma once

#include "topology/host_topology.h"

namespace chorus::testing {

// `first`..`last` inclusive.
inline CpuList Cpus(int first, int last) {
  CpuList cpus;
  for (int cpu = first; cpu <= last; ++cpu) cpus.push_back(cpu);
  return cpus;
}

// 2 packages x 2 NUMA nodes x 8 cores (one PU each, node d holds PUs
// 8d..8d+7), an L3 per node; NIC eth0 on node 0, NIC eth1 and RDMA device
// mlx5_0 on node 2; nodes 1 and 3 have no NIC. Unbound. The same machine as
// tests/topology/two_sockets.xml.
inline HostTopology TwoSockets() {
  HostTopology t;
  t.source = "synthetic";
  t.packages = 2;
  t.l3_caches = 4;
  for (int node = 0; node < 4; ++node) t.numa.push_back(NumaDomain{node, node / 2, Cpus(node * 8, node * 8 + 7)});
  for (int cpu = 0; cpu < 32; ++cpu) t.cores.push_back({cpu});
  t.pus = Cpus(0, 31);
  t.devices = {{DeviceKind::kNetwork, "eth0", 0, 0, "0000:10:00.0"},
               {DeviceKind::kNetwork, "eth1", 2, 1, "0000:90:00.0"},
               {DeviceKind::kRdma, "mlx5_0", 2, 1, "0000:90:00.0"}};
  t.binding = t.pus;
  return t;
}

// 1 package, 1 NUMA node, 4 cores x 2 PUs, one L3, NIC eno1 (locality: the
// package). Unbound. The same machine as tests/topology/one_socket.xml.
inline HostTopology OneSocket() {
  HostTopology t;
  t.source = "synthetic";
  t.packages = 1;
  t.l3_caches = 1;
  t.numa.push_back(NumaDomain{0, 0, Cpus(0, 7)});
  for (int core = 0; core < 4; ++core) t.cores.push_back(Cpus(core * 2, core * 2 + 1));
  t.pus = Cpus(0, 7);
  t.devices = {{DeviceKind::kNetwork, "eno1", 0, 0, "0000:02:00.0"}};
  t.binding = t.pus;
  return t;
}

}  // namespace chorus::testing
