#include "topology/discovery.h"

#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <iterator>

#include "base/config.h"
#include "chorus_build_config.h"

namespace chorus {

TopologyOptions TopologyOptions::FromEnvironment() {
  TopologyOptions options;
  options.xml_file = EnvValue("CHORUS_TOPO_FILE");
  options.dump_file = EnvValue("CHORUS_TOPO_DUMP_FILE");
  return options;
}

bool TopologyDiscoveryAvailable() { return CHORUS_HAVE_HWLOC != 0; }

Status CurrentThreadCpus(CpuList* out) {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof(set), &set) != 0) return ErrnoError(errno, "sched_getaffinity");
  out->clear();
  for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu) {
    if (CPU_ISSET(cpu, &set)) out->push_back(cpu);
  }
  return Status::Ok();
}

Status LoadTopologyXml(const std::string& path, HostTopology* out) {
  if (!TopologyDiscoveryAvailable()) {
    return InvalidArgument("cannot load topology file '", path, "': Chorus was built without hwloc (-Dhwloc)");
  }
  return detail::ReadTopologyWithHwloc(path, "", /*io_devices=*/true, out);
}

Status DiscoverHostTopology(const TopologyOptions& options, HostTopology* out) {
  HostTopology topology;
  if (TopologyDiscoveryAvailable()) {
    CHORUS_RETURN_IF_ERROR(detail::ReadTopologyWithHwloc(options.xml_file, options.dump_file,
                                                         options.io_devices || !options.dump_file.empty(), &topology));
  } else if (!options.xml_file.empty() || !options.dump_file.empty()) {
    return InvalidArgument("CHORUS_TOPO_FILE and CHORUS_TOPO_DUMP_FILE need hwloc; this Chorus was built without it");
  } else {
    topology = FlatTopology(static_cast<int>(sysconf(_SC_NPROCESSORS_ONLN)));
  }
  CpuList affinity;
  CHORUS_RETURN_IF_ERROR(CurrentThreadCpus(&affinity));
  CpuList binding;
  std::set_intersection(affinity.begin(), affinity.end(), topology.pus.begin(), topology.pus.end(),
                        std::back_inserter(binding));
  topology.binding = binding.empty() ? topology.pus : binding;
  *out = std::move(topology);
  return Status::Ok();
}

}  // namespace chorus
