// HostTopology: what Chorus knows about the machine a rank runs on — its
// packages, NUMA domains, cores, PUs, L3 caches, I/O devices with their NUMA
// node and PCI bus id, and the rank's CPU binding. A plain struct, filled
// from hwloc by DiscoverHostTopology (topology/discovery.h) or built directly
// by tests, so nothing else in Chorus includes hwloc.h.
#pragma once

#include <string>
#include <vector>

namespace chorus {

// PUs (logical CPUs) by their OS index, sorted and without duplicates: the
// numbers sched_setaffinity and /proc/cpuinfo use.
using CpuList = std::vector<int>;

// "0-3,8,10-11"; "" for an empty list.
std::string FormatCpuList(const CpuList& cpus);
bool IsSubsetOf(const CpuList& part, const CpuList& whole);
bool Intersects(const CpuList& a, const CpuList& b);
CpuList Union(const CpuList& a, const CpuList& b);

struct NumaDomain {
  int os_index = 0;  // the kernel's node number (/sys/devices/system/node/nodeN)
  int package = -1;  // index into the packages, -1 when it spans or has none
  CpuList cpus;
};

enum class DeviceKind { kNetwork, kRdma, kGpu };
const char* DeviceKindName(DeviceKind kind);

struct TopologyDevice {
  DeviceKind kind = DeviceKind::kNetwork;
  std::string name;        // as the OS names it: "eth0", "mlx5_0", "card0"
  int numa = -1;           // index into HostTopology::numa, -1 when unknown or spanning
  int package = -1;        // index of its package, -1 when unknown
  std::string pci_bus_id;  // "0000:3b:00.0", empty when not on PCI
};

struct HostTopology {
  std::string source;  // where it came from: "hwloc", "xml <path>", "flat", "synthetic"
  int packages = 0;
  int l3_caches = 0;
  std::vector<NumaDomain> numa;  // their index is the NUMA domain everywhere else in Chorus
  std::vector<CpuList> cores;    // the PUs of each core
  CpuList pus;                   // every PU of the host
  std::vector<TopologyDevice> devices;
  CpuList binding;  // the PUs this rank may run on; equal to `pus` when unbound

  // Bound: the rank may run on some of the host's PUs only.
  bool bound() const;
  // The NUMA domains whose PUs the binding touches, in index order.
  std::vector<int> BindingNumaDomains() const;
  // The one NUMA domain holding the whole binding, else -1 (spans domains,
  // or no domain is known).
  int BindingNuma() const;
};

// One package, one NUMA domain holding `cpu_count` PUs 0..n-1, one core per
// PU, no caches or devices, unbound: what Chorus assumes without hwloc.
HostTopology FlatTopology(int cpu_count);

// Short human form (chorus_info --topology): counts, then each device with
// its NUMA node, then the binding.
std::string DescribeTopology(const HostTopology& topology);

}  // namespace chorus
