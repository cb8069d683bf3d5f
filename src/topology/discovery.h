// How a rank learns its HostTopology: hwloc's discovery of this machine, or
// an hwloc XML file instead (CHORUS_TOPO_FILE, as NCCL_TOPO_FILE), written
// out as hwloc XML when asked (CHORUS_TOPO_DUMP_FILE). Without hwloc (built
// with -Dhwloc=disabled or without libhwloc-dev) the topology is flat.
#pragma once

#include <string>

#include "base/status.h"
#include "topology/host_topology.h"

namespace chorus {

struct TopologyOptions {
  std::string xml_file;   // load this instead of discovering
  std::string dump_file;  // write what was loaded here (hwloc XML)
  // Look for NICs, RDMA devices and GPUs on this machine's PCI buses: most of
  // discovery's time (tens of ms against a few), so a communicator asks only
  // when it will choose a NIC. Files always keep their devices; a dump
  // always includes them.
  bool io_devices = true;

  // CHORUS_TOPO_FILE and CHORUS_TOPO_DUMP_FILE.
  static TopologyOptions FromEnvironment();
};

// Whether this build reads topologies with hwloc.
bool TopologyDiscoveryAvailable();

// Discovers (or loads) the host's topology and sets its binding to the
// calling thread's CPU affinity. A binding that shares no PU with a loaded
// XML topology (one describing another machine) counts as unbound.
Status DiscoverHostTopology(const TopologyOptions& options, HostTopology* out);

// The topology of an hwloc XML file, unbound (tests set the binding).
Status LoadTopologyXml(const std::string& path, HostTopology* out);

// The calling thread's CPU affinity (sched_getaffinity).
Status CurrentThreadCpus(CpuList* out);

namespace detail {
// hwloc's reader behind the two above: `xml_file` empty = this machine.
Status ReadTopologyWithHwloc(const std::string& xml_file, const std::string& dump_file, bool io_devices,
                             HostTopology* out);
}  // namespace detail

}  // namespace chorus
