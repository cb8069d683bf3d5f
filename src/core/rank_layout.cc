#include "core/rank_layout.h"

#include <unistd.h>

#include <map>

#include "base/log.h"
#include "topology/discovery.h"

namespace chorus {

Status RankTopology(int rank, bool io_devices, HostTopology* out) {
  TopologyOptions options = TopologyOptions::FromEnvironment();
  options.io_devices = io_devices;
  Status status = DiscoverHostTopology(options, out);
  if (status.ok() || !options.xml_file.empty() || !options.dump_file.empty()) return status;
  CHORUS_WARN("INIT", "rank ", rank, ": topology unknown, taking the host as flat: ", status.message());
  HostTopology flat = FlatTopology(static_cast<int>(sysconf(_SC_NPROCESSORS_ONLN)));
  CpuList affinity;
  if (CurrentThreadCpus(&affinity).ok() && !affinity.empty() && IsSubsetOf(affinity, flat.pus)) flat.binding = affinity;
  *out = std::move(flat);
  return Status::Ok();
}

int BindingNumaNode(const HostTopology& topology) {
  const int domain = topology.BindingNuma();
  return domain < 0 ? -1 : topology.numa[domain].os_index;
}

std::string DescribeRankLayout(const std::vector<std::string>& host_of_rank, const std::vector<int>& numa_of_rank) {
  std::vector<std::string> hosts;                      // first-seen order
  std::map<std::string, std::map<int, std::string>> ranks;  // host -> NUMA node -> "0,1"
  for (size_t r = 0; r < host_of_rank.size(); ++r) {
    const std::string& host = host_of_rank[r];
    if (ranks.find(host) == ranks.end()) hosts.push_back(host);
    std::string& list = ranks[host][r < numa_of_rank.size() ? numa_of_rank[r] : -1];
    list += StrCat(list.empty() ? "" : ",", r);
  }
  std::string out;
  for (const std::string& host : hosts) {
    out += StrCat(out.empty() ? "" : " | ", "host ", host.substr(0, host.find('/')), ":");
    bool first = true;
    for (const auto& [numa, list] : ranks[host]) {
      out += StrCat(first ? " " : "; ", numa < 0 ? std::string("NUMA ?") : StrCat("NUMA ", numa), ": ", list);
      first = false;
    }
  }
  return out;
}

}  // namespace chorus
