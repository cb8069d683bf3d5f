// Closed-form alpha-beta-gamma costs per (algorithm, collective), for the
// tuner and as a check on the simulator. alpha: latency per message, beta:
// seconds per byte of a link, gamma: seconds per byte reduced. n is the
// nccl-tests size per rank's block (count * element size). Formulas assume
// one link class (a uniform cluster) and a schedule cut into chunks of
// chunk_bytes (0: whole steps, no pipelining).
#pragma once

#include <cstddef>
#include <vector>

#include "algorithms/algorithm.h"
#include "model/cluster_model.h"

namespace chorus::model {

struct CostParams {
  double alpha_s = 0;  // the link class the collective crosses (inter-host when hosts > 1)
  double beta_s_per_byte = 0;
  double gamma_s_per_byte = 0;
  size_t chunk_bytes = 0;
  // Per-message cost a rank pays for each extra message it has in flight at
  // once (LogP's o): what concurrent messages do not overlap. The ring and
  // trees have one message per step on the critical path, so their alpha
  // already holds it; "direct" posts p-1 at once and pays (p-2) o more.
  double overhead_s = 0;
  // Where the ranks are: `hosts` hosts of `ranks_per_host` ranks (0 = the
  // call's ranks spread evenly, at least one per host), and the link class
  // within a host (0 = the same as alpha and beta). The hierarchical
  // algorithms cost their host-local phases with it, and "direct" charges
  // each host's shared NIC with all of its ranks' cross-host traffic.
  int hosts = 1;
  int ranks_per_host = 0;
  double intra_alpha_s = 0;
  double intra_beta_s_per_byte = 0;
  // Hosts sharing `physical_cores` cores (an emulated cluster; 0 = a core
  // per host, a real cluster: the time is the network's), each end of a
  // cross-host byte costing its host host_cpu_s_per_byte of CPU: the time
  // is stretched as model/shared_cores.h says. The tuner leaves both 0.
  int physical_cores = 0;
  double host_cpu_s_per_byte = 0;
};

// The link class the collective crosses: inter-host when there are several
// hosts (the slower class bounds a ring or tree that spans them); also the
// cluster's hosts and its intra-host class for the hierarchical costs.
CostParams CostParamsFor(const ClusterModel& cluster, size_t chunk_bytes);

// Seconds for `call` (count, dtype, nranks, coll) with `algo`. Returns false
// when there is no formula for the pair. ring and tree (binomial) are exact
// for whole steps; ps, ps_sharded, hd (p = 2^L) and chain are the textbook
// estimates; hd for other p follows the schedule's port sharing
// (folded_halving_doubling.h); dbtree is a fill per segment plus a steady
// state, shaped on the replay; direct, hier and hier_sliced are built from the ring and tree
// terms per link class (docs/algorithms.md). Each algorithm's formula is
// its row in cost_model.cc's kCostRows; an algorithm without one has no
// formula (false).
bool AnalyticTime(Algorithm algo, const CollectiveArgs& call, const CostParams& params, double* seconds);

// FireCaffe's central parameter server for an allreduce of n bytes over p
// workers: every worker's gradient crosses the server's port in, the sum
// crosses it out, p-1 times each: 2 (p-1) (alpha + n beta) + (p-1) n gamma
// (the server pays the per-message cost of each of its 2(p-1) messages).
double ParameterServerAllReduceTime(int nranks, double bytes, const CostParams& params);

// Every algorithm whose descriptor lists `coll` (kAuto lists none), in enum
// order: new algorithms appear here by themselves.
std::vector<Algorithm> AlgorithmsSupporting(Collective coll);

}  // namespace chorus::model
