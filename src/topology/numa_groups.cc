#include "topology/numa_groups.h"

#include <cstddef>
#include <map>
#include <set>
#include <utility>

namespace chorus {

std::vector<int> GroupRanksByNuma(const std::vector<int>& host_of_rank, const std::vector<int>& numa_of_rank) {
  std::set<int> unsplit_hosts;
  for (size_t r = 0; r < host_of_rank.size(); ++r) {
    if (r >= numa_of_rank.size() || numa_of_rank[r] < 0) unsplit_hosts.insert(host_of_rank[r]);
  }
  std::map<std::pair<int, int>, int> group_of_key;  // (host, domain) -> group
  std::vector<int> group_of_rank;
  for (size_t r = 0; r < host_of_rank.size(); ++r) {
    const int host = host_of_rank[r];
    const int domain = unsplit_hosts.count(host) != 0 ? -1 : numa_of_rank[r];
    auto [it, inserted] = group_of_key.emplace(std::make_pair(host, domain), static_cast<int>(group_of_key.size()));
    group_of_rank.push_back(it->second);
  }
  return group_of_rank;
}

}  // namespace chorus
