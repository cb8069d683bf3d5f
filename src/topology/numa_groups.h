// The ranks of each host grouped by NUMA domain: a level below the host for
// hierarchical algorithms.
#pragma once

#include <vector>

namespace chorus {

// group_of_rank[r] for ranks on hosts `host_of_rank` whose bindings lie in
// NUMA domains `numa_of_rank` (-1: unknown or spanning domains). Ranks of one
// host and one domain form a group; a host with any rank of unknown domain
// stays one group (an unbound rank may run anywhere on it). Groups are
// numbered 0..G-1 in order of their lowest rank, never span hosts.
std::vector<int> GroupRanksByNuma(const std::vector<int>& host_of_rank, const std::vector<int>& numa_of_rank);

}  // namespace chorus
