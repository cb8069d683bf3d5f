#include "sim/cost_model.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "base/dtype.h"

namespace chorus::sim {

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

bool Named(Algorithm algo, const char* name) { return std::strcmp(AlgorithmName(algo), name) == 0; }

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

// Binomial tree, L = ceil(log2 p) levels. The root (and the heaviest inner
// node) moves L blocks through one port, so a pipeline advances one chunk
// every L * chunk * beta once it is full.
bool TreeTime(Collective coll, double p, double n, const CostParams& c, double* t) {
  const double a = c.alpha_s, b = c.beta_s_per_byte, g = c.gamma_s_per_byte;
  const double levels = CeilLog2(static_cast<int>(p));
  const Pipeline pipe = PipelineOf(n, c.chunk_bytes);
  const double x = pipe.chunk;
  const double drain = (pipe.chunks - 1) * levels * x;
  switch (coll) {
    case Collective::kBroadcast:
      *t = levels * (a + x * b) + drain * b;
      return true;
    case Collective::kReduce:
      *t = levels * (a + x * (b + g)) + drain * std::max(b, g);
      return true;
    case Collective::kAllReduce:
      *t = levels * (a + x * (b + g)) + levels * (a + x * b) + drain * std::max(b, g);
      return true;
    default:
      return false;
  }
}

}  // namespace

CostParams CostParamsFor(const ClusterModel& cluster, size_t chunk_bytes) {
  const LinkModel& link = cluster.hosts > 1 ? cluster.inter_host : cluster.intra_host;
  CostParams params;
  params.alpha_s = link.alpha_s;
  params.beta_s_per_byte = 1.0 / link.bandwidth_Bps;
  params.gamma_s_per_byte = cluster.gamma_s_per_byte;
  params.chunk_bytes = chunk_bytes;
  return params;
}

double ParameterServerAllReduceTime(int nranks, double bytes, const CostParams& c) {
  const double p = nranks;
  if (nranks <= 1) return 0;
  // The server handles p-1 messages each way: their per-message cost adds up
  // at its port just like their bytes.
  return 2 * (p - 1) * c.alpha_s + 2 * (p - 1) * bytes * c.beta_s_per_byte + (p - 1) * bytes * c.gamma_s_per_byte;
}

bool AnalyticTime(Algorithm algo, const CollectiveArgs& call, const CostParams& c, double* seconds) {
  const double p = call.nranks;
  const double n = static_cast<double>(call.count) * static_cast<double>(DataTypeSize(call.dtype));
  if (call.nranks <= 1 || call.count == 0) {
    *seconds = 0;
    return Supports(algo, call.coll);
  }
  const double a = c.alpha_s, b = c.beta_s_per_byte, g = c.gamma_s_per_byte;
  const double levels = CeilLog2(call.nranks);
  if (Named(algo, "ring")) return RingTime(call.coll, p, n, c, seconds);
  if (Named(algo, "tree")) return TreeTime(call.coll, p, n, c, seconds);
  if (call.coll != Collective::kAllReduce) {
    if (Named(algo, "chain")) return RingTime(call.coll, p, n, c, seconds);
    return false;
  }
  if (Named(algo, "ps")) {
    *seconds = ParameterServerAllReduceTime(call.nranks, n, c);
  } else if (Named(algo, "ps_sharded")) {  // every rank serves 1/p: p-1 pushes, p-1 pulls of n/p
    *seconds = 2 * (p - 1) * (a + n / p * b) + (p - 1) / p * n * g;
  } else if (Named(algo, "hd")) {  // Rabenseifner
    *seconds = 2 * levels * a + 2 * (p - 1) / p * n * b + (p - 1) / p * n * g;
  } else if (Named(algo, "dbtree")) {  // two pipelined trees, half the data each
    const Pipeline pipe = PipelineOf(n / 2, c.chunk_bytes);
    *seconds = 2 * levels * (a + pipe.chunk * b) + 2 * n * b + n * g;
  } else if (Named(algo, "chain")) {  // chain reduce then chain broadcast
    const Pipeline pipe = PipelineOf(n, c.chunk_bytes);
    *seconds = 2 * (p - 2 + pipe.chunks) * (a + pipe.chunk * b) + n * g;
  } else {
    return false;
  }
  return true;
}

std::vector<Algorithm> AlgorithmsSupporting(Collective coll) {
  std::vector<Algorithm> out;
  // The enum grows at its end; stop at the first value without a name.
  for (int value = static_cast<int>(Algorithm::kAuto) + 1; value < 64; ++value) {
    const Algorithm algo = static_cast<Algorithm>(value);
    if (std::strcmp(AlgorithmName(algo), "unknown") == 0) break;
    if (Supports(algo, coll)) out.push_back(algo);
  }
  return out;
}

}  // namespace chorus::sim
