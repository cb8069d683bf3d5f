// Where ranks live: which host each rank runs on. Hierarchical algorithms
// keep traffic inside a host where they can and cross hosts only between
// chosen ranks. A Topology is fixed for a communicator's lifetime.
#pragma once

#include <vector>

namespace chorus {

// host_of_rank[r] identifies rank r's host. Only equality of identities
// matters: the communicator numbers hosts 0..H-1 in first-seen order, but
// builders renumber them in order of each host's lowest rank (HostLayout)
// and assume nothing else (hosts may differ in size, ranks may interleave).
struct Topology {
  std::vector<int> host_of_rank;
  // A level below the host, e.g. NUMA domains (topology/numa_groups.h):
  // group_of_rank[r] identifies rank r's group; groups never span hosts.
  // Empty: none. "hier" keeps each group contiguous in its host's tree.
  std::vector<int> group_of_rank{};
};

// The hosts of `nranks` ranks, numbered 0..H-1 in order of their lowest rank.
// A null topology puts every rank on host 0 (flat). The caller checks
// IsValidTopology first; HostLayout assumes a valid one.
class HostLayout {
 public:
  HostLayout(const Topology* topology, int nranks);

  int host_count() const { return static_cast<int>(ranks_of_host_.size()); }
  int host_of(int rank) const { return host_of_[rank]; }
  // Ranks of `host` in increasing order; the leader is the first.
  const std::vector<int>& local_ranks(int host) const { return ranks_of_host_[host]; }
  // Position of `rank` within local_ranks(host_of(rank)).
  int local_index(int rank) const { return local_index_[rank]; }
  int leader(int host) const { return ranks_of_host_[host].front(); }
  // True when every host has the same number of ranks.
  bool uniform() const;

 private:
  std::vector<int> host_of_;
  std::vector<int> local_index_;
  std::vector<std::vector<int>> ranks_of_host_;
};

// The ranks of `host`, leader first, each group of Topology::group_of_rank
// contiguous: the leader's group, then the others in order of their lowest
// rank, each in increasing rank order. Without groups: local_ranks(host).
std::vector<int> GroupOrderedLocalRanks(const Topology* topology, const HostLayout& layout, int host);

// A topology describes a communicator of `nranks` when it has one host per
// rank and no groups or one per rank (nullptr = flat, always valid).
bool IsValidTopology(const Topology* topology, int nranks);

}  // namespace chorus
