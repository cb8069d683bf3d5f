// Hosts that share physical cores (an emulated cluster: network namespaces
// on one machine). Every byte a host sends to or receives from another host
// costs it CPU (ClusterModel::host_cpu_s_per_byte, the kernel's TCP copies),
// every byte it reduces costs gamma. With a core per host that work runs
// beside the transfers and the replay's time stands. With C physical cores
// for H > C hosts, the cores can do at most C seconds of work per second,
// so the collective takes at least (CPU work of all hosts) / C; and a host
// runs its work on one core at a time (one progress thread), so at least
// its own CPU work. The time is the largest of the three: the network's
// (replay or closed form), the cores' and the busiest host's. This is a
// bound, not a schedule: it assumes the CPU work can be spread over the
// whole call, so it only stretches calls whose average CPU demand exceeds
// the cores (docs/simulator.md, docs/algorithms.md).
#pragma once

#include <vector>

#include "algorithms/algorithm.h"
#include "base/status.h"
#include "model/cluster_model.h"

namespace chorus::model {

// CPU seconds each host of `cluster` spends on these schedules (one per
// rank): host_cpu_s_per_byte for each byte sent or received across hosts,
// gamma for each byte reduced. `per_host` gets cluster.hosts entries.
Status HostCpuSecondsOfSchedules(const std::vector<Schedule>& schedules, const ClusterModel& cluster,
                                 std::vector<double>* per_host);

// The same for `call` run with `algo` (builds every rank's schedule).
Status HostCpuSeconds(const CollectiveArgs& call, Algorithm algo, const ClusterModel& cluster,
                      std::vector<double>* per_host);

// `seconds` stretched by the shared cores: unchanged when physical_cores is
// 0 or at least the number of hosts, else max(seconds, sum / cores, max).
double SharedCoresSeconds(double seconds, const std::vector<double>& per_host, int physical_cores);

}  // namespace chorus::model
