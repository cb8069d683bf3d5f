#include "model/cost_model.h"

#include <algorithm>
#include <cmath>

#include "base/dtype.h"
#include "model/folded_halving_doubling.h"
#include "model/shared_cores.h"

namespace chorus::model {

namespace {

int CeilLog2(int p) {
  int levels = 0;
  while ((1 << levels) < p) ++levels;
  return levels;
}

// A pipeline of k equal chunks of c bytes (k = 1 without chunking).
struct Pipeline {
  double chunks = 1;
  double chunk = 0;
};

Pipeline PipelineOf(double bytes, size_t chunk_bytes) {
  Pipeline pipe;
  pipe.chunks = chunk_bytes == 0 || bytes <= 0 ? 1 : std::ceil(bytes / static_cast<double>(chunk_bytes));
  pipe.chunk = bytes / pipe.chunks;
  return pipe;
}

bool RingTime(Collective coll, double p, double n, const CostParams& c, double* t) {
  const double a = c.alpha_s, b = c.beta_s_per_byte, g = c.gamma_s_per_byte;
  const Pipeline pipe = PipelineOf(n, c.chunk_bytes);
  switch (coll) {
    case Collective::kAllReduce:
      *t = 2 * (p - 1) * (a + n * b / p) + (p - 1) / p * n * g;
      return true;
    case Collective::kReduceScatter:
      *t = (p - 1) * (a + n * b) + (p - 1) * n * g;
      return true;
    case Collective::kAllGather:
    case Collective::kAllToAll:
    case Collective::kGather:
    case Collective::kScatter:
      *t = (p - 1) * (a + n * b);  // p-1 blocks through one port
      return true;
    case Collective::kBroadcast:  // a chain: p-1 hops, then one chunk per hop time
      *t = (p - 2 + pipe.chunks) * (a + pipe.chunk * b);
      return true;
    case Collective::kReduce:
      *t = (p - 2 + pipe.chunks) * (a + pipe.chunk * (b + g));
      return true;
    default:
      return false;
  }
}

// Binomial tree, L = ceil(log2 p) levels, on full-duplex ports shared
// fairly. A node posts the sends to all its children at once, so in a
// broadcast a chunk leaves a node with j children after j chunk times: the
// first chunk reaches the deepest leaf after L + (L-1) + ... + 1 =
// L(L+1)/2 chunk times. After it, the root's port (L chunks per chunk)
// sets the pace: one chunk every L chunk times. A reduction's children
// finish their subtrees one after the other, so whole steps cross a level
// in one step time; once pipelined, the children's streams overlap and the
// way up fills like the broadcast's way down. The blend between the two,
// full from 4 chunks on, is fitted to the replay (docs/simulator.md).
bool TreeTime(Collective coll, double p, double n, const CostParams& c, double* t) {
  const double a = c.alpha_s, b = c.beta_s_per_byte, g = c.gamma_s_per_byte;
  const double levels = CeilLog2(static_cast<int>(p));
  const Pipeline pipe = PipelineOf(n, c.chunk_bytes);
  const double x = pipe.chunk;
  const double fanout = levels * (levels + 1) / 2;  // chunk times to the deepest leaf
  const double overlap = std::min(1.0, (pipe.chunks - 1) / 3);
  const double up = levels + (fanout - levels) * overlap;  // chunk times to the root
  // Steady state: the executor reduces a chunk on the thread that received
  // it, so a reducing pipeline pays gamma per chunk too (the replay, which
  // overlaps reductions with transfers, is up to gamma/beta faster).
  const double steady = (pipe.chunks - 1) * levels * x * b;
  const double steady_reducing = (pipe.chunks - 1) * levels * x * (b + g);
  const double broadcast = levels * a + fanout * x * b;
  const double reduce = levels * (a + x * g) + up * x * b;
  switch (coll) {
    case Collective::kBroadcast:
      *t = broadcast + steady;
      return true;
    case Collective::kReduce:
      *t = reduce + steady_reducing;
      return true;
    case Collective::kAllReduce:  // up and down stream at once, on the two directions of the ports
      *t = reduce + broadcast + steady_reducing;
      return true;
    default:
      return false;
  }
}

// Double binary tree allreduce (algorithms/dbtree/): half the vector goes
// up and back down each of two binary trees of depth D = ceil(log2 p), the
// two trees side by side (the builder orders each pair's stream by pipeline
// time, so neither tree waits behind the other). Each half is cut into S
// segments (call.segment_bytes, 0 = one), each into m chunks of x bytes
// (the executor's); segments pipeline like chunks, so with M = S m chunks
// per half:
//   fill   F chunk times + 4 D alpha: the first chunk up and down both trees
//          at once, about 4 chunk times per level (a node with two children
//          receives two chunks through its one receive port on the way up
//          and sends two on the way down): F = 4 D - 2 for p a power of two
//          (the top has one child), 4 D - 4 for p = 2^(D-1) + 1, 4 D - 3
//          otherwise (shallower subtrees); p = 2: 2, p = 3: 7 (rank 0 is
//          interior in both trees). Exact for whole steps (M = 1).
//   steady R = 4 chunk times per further chunk: the busiest port carries
//          4 chunks per round of both trees (an interior rank receives two
//          from its children and one from its parent, and one from its
//          parent in the tree where it is a leaf): 2 |W| beta in all, the
//          port bound. p = 2: 2 (one chunk each way per tree on full-duplex
//          ports).
// Plus n gamma for the reductions of the interior nodes (two children of
// n/2, on the progress thread). Against the replay (docs/simulator.md):
// whole halves within 11 %, segments within 12 % from p = 6 (25 % at p = 4,
// 5, where one-chunk segments fill the doubly linked pair less evenly).
double DoubleBinaryTreeTime(int p, double n, double segment_bytes, const CostParams& c) {
  const double a = c.alpha_s, b = c.beta_s_per_byte, g = c.gamma_s_per_byte;
  const double half = std::ceil(n / 2);
  const double segment = segment_bytes > 0 && segment_bytes < half ? segment_bytes : half;
  const double segments = std::ceil(half / segment);
  const Pipeline pipe = PipelineOf(segment, c.chunk_bytes);
  const double chunks = segments * pipe.chunks;
  const int depth = CeilLog2(p);
  double fill = 4.0 * depth - 3;
  if ((p & (p - 1)) == 0) fill = 4.0 * depth - 2;
  if (p == (1 << (depth - 1)) + 1) fill = 4.0 * depth - 4;
  if (p == 2) fill = 2;
  if (p == 3) fill = 7;
  const double steady = p == 2 ? 2 : 4;
  return ((chunks - 1) * steady + fill) * pipe.chunk * b + 4 * depth * a + n * g;
}

// The two link classes and the host shape of a call.
struct Placement {
  double hosts = 1;
  double local = 1;  // ranks per host (the largest host when uneven)
  CostParams inter;  // the class between hosts (= the params as given)
  CostParams intra;  // the class within a host
};

Placement PlacementOf(int nranks, const CostParams& c) {
  Placement where;
  where.hosts = std::clamp(c.hosts, 1, std::max(1, nranks));
  where.local = c.ranks_per_host > 0 ? c.ranks_per_host : std::ceil(nranks / where.hosts);
  where.inter = c;
  where.intra = c;
  // On one host alpha and beta already are the host's class.
  if (where.hosts > 1 && c.intra_alpha_s > 0) where.intra.alpha_s = c.intra_alpha_s;
  if (where.hosts > 1 && c.intra_beta_s_per_byte > 0) where.intra.beta_s_per_byte = c.intra_beta_s_per_byte;
  return where;
}

// Direct: two rounds (reduce-scatter, allgather), each one message to and
// from every peer at once. A round costs one latency, (p-2) overheads for
// the extra messages in flight and the bytes through the busiest port: a
// rank's own p-1 slices (local-1 inside its host, p-local across), or its
// host NIC carrying the cross-host slices of all `local` ranks of the host.
bool DirectTime(Collective coll, double p, double n, const CostParams& c, double* t) {
  const Placement where = PlacementOf(static_cast<int>(p), c);
  const double a = c.alpha_s, g = c.gamma_s_per_byte;
  const double local = std::min(where.local, p);
  const double rank_port = (local - 1) * where.intra.beta_s_per_byte + (p - local) * c.beta_s_per_byte;
  const double nic = local * (p - local) * c.beta_s_per_byte;
  const double per_slice = std::max(rank_port, nic);  // seconds per byte of one slice, a round
  const double round_latency = a + (p - 2) * c.overhead_s;
  switch (coll) {
    case Collective::kAllReduce:
      *t = 2 * round_latency + 2 * n / p * per_slice + (p - 1) / p * n * g;
      return true;
    case Collective::kReduceScatter:  // n is the block: p-1 blocks each way
      *t = round_latency + n * per_slice + (p - 1) * n * g;
      return true;
    case Collective::kAllGather:
      *t = round_latency + n * per_slice;
      return true;
    default:
      return false;
  }
}

// One-shot: one round in which every rank sends its whole buffer to every
// peer (the busiest port carries p-1 buffers, or its host NIC the cross-host
// buffers of all `local` ranks), then p-1 local folds of the whole buffer.
double OneShotTime(double p, double n, const CostParams& c) {
  const Placement where = PlacementOf(static_cast<int>(p), c);
  const double local = std::min(where.local, p);
  const double rank_port = (local - 1) * where.intra.beta_s_per_byte + (p - local) * c.beta_s_per_byte;
  const double nic = local * (p - local) * c.beta_s_per_byte;
  return c.alpha_s + (p - 2) * c.overhead_s + n * std::max(rank_port, nic) + (p - 1) * n * c.gamma_s_per_byte;
}

// hier: tree reduce inside each host, ring allreduce among the H leaders,
// tree broadcast inside each host; the phases do not overlap.
double HierarchicalTime(double p, double n, const CostParams& c) {
  const Placement where = PlacementOf(static_cast<int>(p), c);
  double t = 0;
  if (where.local > 1) {
    double reduce = 0, broadcast = 0;
    TreeTime(Collective::kReduce, where.local, n, where.intra, &reduce);
    TreeTime(Collective::kBroadcast, where.local, n, where.intra, &broadcast);
    t += reduce + broadcast;
  }
  if (where.hosts > 1) {
    double ring = 0;
    RingTime(Collective::kAllReduce, where.hosts, n, where.inter, &ring);
    t += ring;
  }
  return t;
}

// hier_sliced (equal hosts): ring reduce-scatter inside each host, a ring
// allreduce of each 1/L slice among the H ranks of that slice, ring
// allgather inside each host. Uneven hosts fall back to hier.
double HierarchicalSlicedTime(double p, double n, const CostParams& c) {
  const Placement where = PlacementOf(static_cast<int>(p), c);
  if (where.local * where.hosts != p) return HierarchicalTime(p, n, c);
  const double local = where.local, slice = n / local;
  double t = 0;
  if (local > 1) {
    const CostParams& in = where.intra;
    t += 2 * (local - 1) * (in.alpha_s + slice * in.beta_s_per_byte) + (local - 1) * slice * in.gamma_s_per_byte;
  }
  if (where.hosts > 1) {
    // The `local` rings of a host (one per slice) run at once through its
    // one NIC: each gets 1/local of it.
    CostParams shared = where.inter;
    shared.beta_s_per_byte *= local;
    double ring = 0;
    RingTime(Collective::kAllReduce, where.hosts, slice, shared, &ring);
    t += ring;
  }
  return t;
}

}  // namespace

CostParams CostParamsFor(const ClusterModel& cluster, size_t chunk_bytes) {
  const LinkModel& link = cluster.hosts > 1 ? cluster.inter_host : cluster.intra_host;
  CostParams params;
  params.alpha_s = link.alpha_s;
  params.beta_s_per_byte = 1.0 / link.bandwidth_Bps;
  params.gamma_s_per_byte = cluster.gamma_s_per_byte;
  params.chunk_bytes = chunk_bytes;
  params.hosts = cluster.hosts;
  params.ranks_per_host = cluster.ranks_per_host;
  params.intra_alpha_s = cluster.intra_host.alpha_s;
  params.intra_beta_s_per_byte = 1.0 / cluster.intra_host.bandwidth_Bps;
  params.physical_cores = cluster.physical_cores;
  params.host_cpu_s_per_byte = cluster.host_cpu_s_per_byte;
  return params;
}

double ParameterServerAllReduceTime(int nranks, double bytes, const CostParams& c) {
  const double p = nranks;
  if (nranks <= 1) return 0;
  // The server handles p-1 messages each way: their per-message cost adds up
  // at its port just like their bytes.
  return 2 * (p - 1) * c.alpha_s + 2 * (p - 1) * bytes * c.beta_s_per_byte + (p - 1) * bytes * c.gamma_s_per_byte;
}

namespace {

// Each algorithm's closed form for a call of p > 1 ranks and n > 0 bytes
// per rank (call: its collective, shape and segments); false when there is
// no formula for the collective.
using CostFunction = bool (*)(const CollectiveArgs& call, double p, double n, const CostParams& c, double* t);

// A formula per collective (ring, tree, direct) as a cost function.
template <bool (*Time)(Collective coll, double p, double n, const CostParams& c, double* t)>
bool PerCollective(const CollectiveArgs& call, double p, double n, const CostParams& c, double* t) {
  return Time(call.coll, p, n, c, t);
}

// FireCaffe's model, but the server's pulls of chunk k overlap its pushes of
// chunk k+1: (p-1)(n + x) bytes through its port. It still reduces (p-1) n
// on its progress thread (the replay overlaps that). Whole steps:
// ParameterServerAllReduceTime.
bool ParameterServerCost(const CollectiveArgs& call, double p, double n, const CostParams& c, double* t) {
  if (call.coll != Collective::kAllReduce) return false;
  const Pipeline pipe = PipelineOf(n, c.chunk_bytes);
  *t = 2 * (p - 1) * c.alpha_s + (p - 1) * (n + pipe.chunk) * c.beta_s_per_byte + (p - 1) * n * c.gamma_s_per_byte;
  return true;
}

// Every rank serves 1/p: p-1 pushes, p-1 pulls of n/p.
bool ShardedParameterServerCost(const CollectiveArgs& call, double p, double n, const CostParams& c, double* t) {
  if (call.coll != Collective::kAllReduce) return false;
  *t = 2 * (p - 1) * (c.alpha_s + n / p * c.beta_s_per_byte) + (p - 1) / p * n * c.gamma_s_per_byte;
  return true;
}

// Rabenseifner; p not a power of two: the fold and the eager exchanges
// share ports.
bool HalvingDoublingCost(const CollectiveArgs& call, double p, double n, const CostParams& c, double* t) {
  if (call.coll != Collective::kAllReduce) return false;
  const double levels = CeilLog2(call.nranks);
  *t = 2 * levels * c.alpha_s + 2 * (p - 1) / p * n * c.beta_s_per_byte + (p - 1) / p * n * c.gamma_s_per_byte;
  if ((call.nranks & (call.nranks - 1)) != 0) *t = FoldedHalvingDoublingTime(call.nranks, n, c);
  return true;
}

bool DoubleBinaryTreeCost(const CollectiveArgs& call, double, double n, const CostParams& c, double* t) {
  if (call.coll != Collective::kAllReduce) return false;
  *t = DoubleBinaryTreeTime(call.nranks, n, static_cast<double>(call.segment_bytes), c);
  return true;
}

// Broadcast and reduce: the ring's (a pipelined chain); allreduce: chain
// reduce then chain broadcast.
bool ChainCost(const CollectiveArgs& call, double p, double n, const CostParams& c, double* t) {
  if (call.coll != Collective::kAllReduce) return RingTime(call.coll, p, n, c, t);
  const Pipeline pipe = PipelineOf(n, c.chunk_bytes);
  *t = 2 * (p - 2 + pipe.chunks) * (c.alpha_s + pipe.chunk * c.beta_s_per_byte) + n * c.gamma_s_per_byte;
  return true;
}

// An allreduce-only formula of (p, n) as a cost function.
template <double (*Time)(double p, double n, const CostParams& c)>
bool AllReduceOnly(const CollectiveArgs& call, double p, double n, const CostParams& c, double* t) {
  if (call.coll != Collective::kAllReduce) return false;
  *t = Time(p, n, c);
  return true;
}

// The closed-form cost of each algorithm that has one. An algorithm without
// a row (a new one, before its formula is written) is never the tuner's
// pick; CHORUS_ALGO and the simulator's replay still run it.
struct CostRow {
  Algorithm id;
  CostFunction cost;
};
constexpr CostRow kCostRows[] = {
    {Algorithm::kRing, PerCollective<RingTime>},
    {Algorithm::kTree, PerCollective<TreeTime>},
    {Algorithm::kParameterServer, ParameterServerCost},
    {Algorithm::kShardedParameterServer, ShardedParameterServerCost},
    {Algorithm::kHalvingDoubling, HalvingDoublingCost},
    {Algorithm::kDoubleBinaryTree, DoubleBinaryTreeCost},
    {Algorithm::kChain, ChainCost},
    {Algorithm::kHierarchical, AllReduceOnly<HierarchicalTime>},
    {Algorithm::kHierarchicalSliced, AllReduceOnly<HierarchicalSlicedTime>},
    {Algorithm::kDirect, PerCollective<DirectTime>},
    {Algorithm::kOneShot, AllReduceOnly<OneShotTime>},
};

CostFunction CostOf(Algorithm algo) {
  for (const CostRow& row : kCostRows) {
    if (row.id == algo) return row.cost;
  }
  return nullptr;
}

// The time on the network alone (every formula above).
bool NetworkTime(Algorithm algo, const CollectiveArgs& call, const CostParams& c, double* seconds) {
  const double p = call.nranks;
  const double n = static_cast<double>(call.count) * static_cast<double>(DataTypeSize(call.dtype));
  if (call.nranks <= 1 || call.count == 0) {
    *seconds = 0;
    return Supports(algo, call.coll);
  }
  const CostFunction cost = CostOf(algo);
  return cost != nullptr && cost(call, p, n, c, seconds);
}

}  // namespace

bool AnalyticTime(Algorithm algo, const CollectiveArgs& call, const CostParams& c, double* seconds) {
  if (!NetworkTime(algo, call, c, seconds)) return false;
  const Placement where = PlacementOf(call.nranks, c);
  if (c.physical_cores <= 0 || c.physical_cores >= where.hosts || *seconds <= 0) return true;
  // Shared cores: the CPU work of the real schedules (model/shared_cores.h).
  ClusterModel cluster;
  cluster.hosts = static_cast<int>(where.hosts);
  cluster.ranks_per_host = static_cast<int>(where.local);
  cluster.gamma_s_per_byte = c.gamma_s_per_byte;
  cluster.host_cpu_s_per_byte = c.host_cpu_s_per_byte;
  std::vector<double> per_host;
  if (cluster.nranks() != call.nranks || !HostCpuSeconds(call, algo, cluster, &per_host).ok()) return true;
  *seconds = SharedCoresSeconds(*seconds, per_host, c.physical_cores);
  return true;
}

std::vector<Algorithm> AlgorithmsSupporting(Collective coll) {
  std::vector<Algorithm> out;
  for (const AlgorithmDescriptor& descriptor : kAlgorithmDescriptors) {
    if (Supports(descriptor.id, coll)) out.push_back(descriptor.id);
  }
  return out;
}

}  // namespace chorus::model
