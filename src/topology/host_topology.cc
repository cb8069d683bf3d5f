#include "topology/host_topology.h"

#include <algorithm>
#include <iterator>

#include "base/status.h"

namespace chorus {

std::string FormatCpuList(const CpuList& cpus) {
  std::string out;
  for (size_t i = 0; i < cpus.size();) {
    size_t last = i;
    while (last + 1 < cpus.size() && cpus[last + 1] == cpus[last] + 1) ++last;
    out += StrCat(out.empty() ? "" : ",", cpus[i]);
    if (last > i) out += StrCat("-", cpus[last]);
    i = last + 1;
  }
  return out;
}

bool IsSubsetOf(const CpuList& part, const CpuList& whole) {
  return std::includes(whole.begin(), whole.end(), part.begin(), part.end());
}

bool Intersects(const CpuList& a, const CpuList& b) {
  CpuList common;
  std::set_intersection(a.begin(), a.end(), b.begin(), b.end(), std::back_inserter(common));
  return !common.empty();
}

CpuList Union(const CpuList& a, const CpuList& b) {
  CpuList out;
  std::set_union(a.begin(), a.end(), b.begin(), b.end(), std::back_inserter(out));
  return out;
}

const char* DeviceKindName(DeviceKind kind) {
  switch (kind) {
    case DeviceKind::kNetwork: return "network";
    case DeviceKind::kRdma: return "rdma";
    case DeviceKind::kGpu: return "gpu";
  }
  return "?";
}

bool HostTopology::bound() const { return !binding.empty() && binding != pus && IsSubsetOf(binding, pus); }

std::vector<int> HostTopology::BindingNumaDomains() const {
  std::vector<int> domains;
  for (size_t d = 0; d < numa.size(); ++d) {
    if (Intersects(numa[d].cpus, binding)) domains.push_back(static_cast<int>(d));
  }
  return domains;
}

int HostTopology::BindingNuma() const {
  const std::vector<int> domains = BindingNumaDomains();
  return domains.size() == 1 && IsSubsetOf(binding, numa[domains[0]].cpus) ? domains[0] : -1;
}

HostTopology FlatTopology(int cpu_count) {
  HostTopology topology;
  topology.source = "flat";
  topology.packages = 1;
  NumaDomain domain;
  domain.package = 0;
  for (int cpu = 0; cpu < std::max(cpu_count, 1); ++cpu) {
    domain.cpus.push_back(cpu);
    topology.cores.push_back({cpu});
  }
  topology.pus = domain.cpus;
  topology.binding = domain.cpus;
  topology.numa.push_back(std::move(domain));
  return topology;
}

std::string DescribeTopology(const HostTopology& t) {
  std::string out = StrCat("topology (", t.source, "): packages ", t.packages, ", NUMA nodes ", t.numa.size(),
                           ", cores ", t.cores.size(), ", PUs ", t.pus.size(), ", L3 caches ", t.l3_caches, "\n");
  for (size_t d = 0; d < t.numa.size(); ++d) {
    out += StrCat("  NUMA node ", t.numa[d].os_index, ": PUs ", FormatCpuList(t.numa[d].cpus));
    if (t.numa[d].package >= 0) out += StrCat(", package ", t.numa[d].package);
    out += "\n";
  }
  for (const TopologyDevice& device : t.devices) {
    out += StrCat("  ", DeviceKindName(device.kind), " ", device.name, ": NUMA node ",
                  device.numa >= 0 ? StrCat(t.numa[device.numa].os_index) : std::string("unknown"));
    if (!device.pci_bus_id.empty()) out += StrCat(", PCI ", device.pci_bus_id);
    out += "\n";
  }
  if (t.devices.empty()) out += "  no network, RDMA or GPU devices seen\n";
  out += StrCat("  binding: PUs ", FormatCpuList(t.binding), t.bound() ? "" : " (not bound)");
  const int numa = t.BindingNuma();
  if (t.bound() && numa >= 0) out += StrCat(", NUMA node ", t.numa[numa].os_index);
  return out + "\n";
}

}  // namespace chorus
