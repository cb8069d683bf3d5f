#include "algorithms/topology.h"

#include <algorithm>
#include <cstddef>
#include <map>

namespace chorus {

HostLayout::HostLayout(const Topology* topology, int nranks) : host_of_(nranks), local_index_(nranks) {
  std::map<int, int> index_of_identity;  // host identity -> host number
  for (int rank = 0; rank < nranks; ++rank) {
    const int identity = topology == nullptr ? 0 : topology->host_of_rank[rank];
    auto [it, inserted] = index_of_identity.emplace(identity, static_cast<int>(ranks_of_host_.size()));
    if (inserted) ranks_of_host_.emplace_back();
    host_of_[rank] = it->second;
    local_index_[rank] = static_cast<int>(ranks_of_host_[it->second].size());
    ranks_of_host_[it->second].push_back(rank);
  }
}

bool HostLayout::uniform() const {
  for (const std::vector<int>& ranks : ranks_of_host_) {
    if (ranks.size() != ranks_of_host_.front().size()) return false;
  }
  return true;
}

std::vector<int> GroupOrderedLocalRanks(const Topology* topology, const HostLayout& layout, int host) {
  const std::vector<int>& local = layout.local_ranks(host);
  if (topology == nullptr || topology->group_of_rank.empty()) return local;
  std::vector<int> groups;  // in order of their lowest rank: the leader's first
  for (int rank : local) {
    const int group = topology->group_of_rank[rank];
    if (std::find(groups.begin(), groups.end(), group) == groups.end()) groups.push_back(group);
  }
  std::vector<int> ordered;
  for (int group : groups) {
    for (int rank : local) {
      if (topology->group_of_rank[rank] == group) ordered.push_back(rank);
    }
  }
  return ordered;
}

bool IsValidTopology(const Topology* topology, int nranks) {
  return topology == nullptr || (topology->host_of_rank.size() == static_cast<size_t>(nranks) &&
                                 (topology->group_of_rank.empty() ||
                                  topology->group_of_rank.size() == static_cast<size_t>(nranks)));
}

}  // namespace chorus
