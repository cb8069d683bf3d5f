// Command line of chorus_sim: sizes ("30M"), bandwidths ("1gbit", "10GB"),
// times ("50us") and the sweep to run.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "algorithms/collective.h"
#include "base/status.h"

namespace chorus::sim {

struct SimFlags {
  Collective coll = Collective::kAllReduce;
  std::string algo = "all";            // a name, or "all" for every supporting one
  size_t bytes = 30u << 20;            // per-rank buffer (nccl-tests size for allreduce)
  std::vector<int> ranks = {2, 4, 8, 16, 32, 64, 128};
  int hosts = 0;                       // 0: ranks / ranks_per_host
  int ranks_per_host = 1;
  double inter_bandwidth_Bps = 1.25e8;  // 1 Gbit/s
  double inter_latency_s = 50e-6;
  double intra_bandwidth_Bps = 1e10;
  double intra_latency_s = 1e-6;
  double gamma_s_per_byte = 1e-10;     // 10 GB/s reduction
  size_t chunk_bytes = 512 * 1024;     // 0: whole steps
  int physical_cores = 0;              // cores shared by all hosts (0: one per host)
  double host_cpu_s_per_byte = 0;      // CPU per cross-host byte, each end (with physical_cores)
  std::string preset;                  // firecaffe, pipe-sgd, gossip
  double compute_s = 0.1;              // pipe-sgd: compute time per iteration
  bool help = false;
};

Status ParseSimFlags(int argc, char** argv, SimFlags* flags);
const char* SimUsage();

// "30M" -> 31457280 (K, M, G are powers of 1024, as in nccl-tests).
Status ParseBytes(const std::string& text, size_t* bytes);
// "1gbit", "100mbit" (bits, decimal), "10GB", "5.5GB/s" (bytes), "1e9".
Status ParseBandwidth(const std::string& text, double* bytes_per_second);
// "50us", "2ms", "1.5s", "800ns".
Status ParseSeconds(const std::string& text, double* seconds);
// "2,4,8" or "2:1024" (powers of two from 2 to 1024).
Status ParseRanks(const std::string& text, std::vector<int>* ranks);

}  // namespace chorus::sim
