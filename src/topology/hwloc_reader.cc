// The only file that includes hwloc.h: turns an hwloc topology (this
// machine's, or an XML file's) into a HostTopology.
#include "chorus_build_config.h"
#include "topology/discovery.h"

#if CHORUS_HAVE_HWLOC
#include <hwloc.h>

#include <algorithm>
#include <cstdio>
#include <memory>

namespace chorus::detail {
namespace {

struct TopologyDeleter {
  void operator()(hwloc_topology* topology) const { hwloc_topology_destroy(topology); }
};
using TopologyHandle = std::unique_ptr<hwloc_topology, TopologyDeleter>;

CpuList ToCpuList(hwloc_const_cpuset_t set) {
  CpuList cpus;
  if (set == nullptr) return cpus;
  int cpu = -1;
  while ((cpu = hwloc_bitmap_next(set, cpu)) != -1) cpus.push_back(cpu);
  return cpus;
}

// Logical index of the package `obj` is in (or is), -1 when none.
int PackageOf(hwloc_topology_t topology, hwloc_obj_t obj) {
  if (obj == nullptr) return -1;
  if (obj->type == HWLOC_OBJ_PACKAGE) return static_cast<int>(obj->logical_index);
  hwloc_obj_t package = hwloc_get_ancestor_obj_by_type(topology, HWLOC_OBJ_PACKAGE, obj);
  return package == nullptr ? -1 : static_cast<int>(package->logical_index);
}

// Index into `numa` of the single NUMA node of `nodeset`, -1 when it has
// none or several.
int NumaOf(hwloc_const_nodeset_t nodeset, const std::vector<NumaDomain>& numa) {
  if (nodeset == nullptr || hwloc_bitmap_weight(nodeset) != 1) return -1;
  const int os_index = hwloc_bitmap_first(nodeset);
  for (size_t d = 0; d < numa.size(); ++d) {
    if (numa[d].os_index == os_index) return static_cast<int>(d);
  }
  return -1;
}

bool KindOf(hwloc_obj_osdev_type_e type, DeviceKind* kind) {
  switch (type) {
    case HWLOC_OBJ_OSDEV_NETWORK: *kind = DeviceKind::kNetwork; return true;
    case HWLOC_OBJ_OSDEV_OPENFABRICS: *kind = DeviceKind::kRdma; return true;
    case HWLOC_OBJ_OSDEV_GPU:
    case HWLOC_OBJ_OSDEV_COPROC: *kind = DeviceKind::kGpu; return true;
    default: return false;  // block devices, DMA engines
  }
}

std::string PciBusIdOf(hwloc_obj_t obj) {
  for (; obj != nullptr; obj = obj->parent) {
    if (obj->type != HWLOC_OBJ_PCI_DEVICE) continue;
    char id[32];
    std::snprintf(id, sizeof(id), "%04x:%02x:%02x.%01x", obj->attr->pcidev.domain, obj->attr->pcidev.bus,
                  obj->attr->pcidev.dev, obj->attr->pcidev.func);
    return id;
  }
  return "";
}

HostTopology Convert(hwloc_topology_t topology) {
  HostTopology out;
  out.packages = hwloc_get_nbobjs_by_type(topology, HWLOC_OBJ_PACKAGE);
  out.l3_caches = hwloc_get_nbobjs_by_type(topology, HWLOC_OBJ_L3CACHE);
  for (hwloc_obj_t node = nullptr; (node = hwloc_get_next_obj_by_type(topology, HWLOC_OBJ_NUMANODE, node));) {
    NumaDomain domain;
    domain.os_index = static_cast<int>(node->os_index);
    domain.package = PackageOf(topology, node);
    domain.cpus = ToCpuList(node->cpuset);
    out.numa.push_back(std::move(domain));
  }
  for (hwloc_obj_t core = nullptr; (core = hwloc_get_next_obj_by_type(topology, HWLOC_OBJ_CORE, core));) {
    out.cores.push_back(ToCpuList(core->cpuset));
  }
  for (hwloc_obj_t pu = nullptr; (pu = hwloc_get_next_obj_by_type(topology, HWLOC_OBJ_PU, pu));) {
    out.pus.push_back(static_cast<int>(pu->os_index));
  }
  std::sort(out.pus.begin(), out.pus.end());
  for (hwloc_obj_t osdev = nullptr; (osdev = hwloc_get_next_osdev(topology, osdev));) {
    TopologyDevice device;
    if (osdev->name == nullptr || !KindOf(osdev->attr->osdev.type, &device.kind)) continue;
    device.name = osdev->name;
    hwloc_obj_t local = hwloc_get_non_io_ancestor_obj(topology, osdev);
    device.numa = NumaOf(local == nullptr ? nullptr : local->nodeset, out.numa);
    device.package = PackageOf(topology, local);
    if (device.package < 0 && device.numa >= 0) device.package = out.numa[device.numa].package;
    device.pci_bus_id = PciBusIdOf(osdev);
    out.devices.push_back(std::move(device));
  }
  out.binding = out.pus;
  return out;
}

}  // namespace

Status ReadTopologyWithHwloc(const std::string& xml_file, const std::string& dump_file, bool io_devices,
                             HostTopology* out) {
  hwloc_topology_t raw = nullptr;
  if (hwloc_topology_init(&raw) != 0) return SystemError("hwloc_topology_init failed");
  TopologyHandle topology(raw);
  // NICs, RDMA devices and GPUs with their PCI locality; bridges and other
  // PCI devices only where they lead to those.
  if (io_devices || !xml_file.empty()) hwloc_topology_set_io_types_filter(raw, HWLOC_TYPE_FILTER_KEEP_IMPORTANT);
  if (!xml_file.empty() && hwloc_topology_set_xml(raw, xml_file.c_str()) != 0) {
    return InvalidArgument("CHORUS_TOPO_FILE='", xml_file, "': not a readable hwloc XML topology");
  }
  if (hwloc_topology_load(raw) != 0) {
    return xml_file.empty() ? SystemError("hwloc could not discover this machine's topology")
                            : InvalidArgument("CHORUS_TOPO_FILE='", xml_file, "': hwloc could not load it");
  }
  if (!dump_file.empty() && hwloc_topology_export_xml(raw, dump_file.c_str(), 0) != 0) {
    return InvalidArgument("CHORUS_TOPO_DUMP_FILE='", dump_file, "': cannot write the topology there");
  }
  *out = Convert(raw);
  out->source = xml_file.empty() ? "hwloc" : "xml " + xml_file;
  return Status::Ok();
}

}  // namespace chorus::detail

#else  // without hwloc: DiscoverHostTopology falls back to a flat topology

namespace chorus::detail {

Status ReadTopologyWithHwloc(const std::string&, const std::string&, bool, HostTopology*) {
  return InvalidArgument("Chorus was built without hwloc");
}

}  // namespace chorus::detail

#endif
