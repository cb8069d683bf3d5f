// Tuner: picks the fastest exact algorithm for a call from the
// alpha-beta-gamma cost model (src/sim/cost_model.h), with link parameters
// measured on the communicator at creation or read from CHORUS_TUNE_FILE.
// Every rank must pick the same algorithm, so the parameters are agreed on
// (the measurement's times are max-reduced across ranks) before use.
#pragma once

#include <string>
#include <vector>

#include "algorithms/algorithm.h"
#include "base/status.h"

namespace chorus {

struct TunerModel {
  double alpha_s = 0;           // latency per message
  double beta_s_per_byte = 0;   // 1 / bandwidth of the slowest link class in use
  double gamma_s_per_byte = 0;  // reduction time per byte
  size_t chunk_bytes = 0;
  std::string source;           // "measured", a file name, or "default"

  bool valid() const { return alpha_s > 0 && beta_s_per_byte > 0; }
};

struct TunerChoice {
  Algorithm algorithm = Algorithm::kRing;
  double predicted_s = 0;
  // Every candidate with its predicted time, fastest first (for the table).
  std::vector<std::pair<Algorithm, double>> candidates;
};

// Fastest exact algorithm for `args` under `model` (ties: enum order; the
// ring also wins when it is within 5% of the fastest).
TunerChoice ChooseByCost(const CollectiveArgs& args, const TunerModel& model);

// Reads "alpha_us=<x> bandwidth_GBps=<y> gamma_GBps=<z>" (any order,
// whitespace or newlines between) from `path`.
Status ReadTuneFile(const std::string& path, TunerModel* model);

// Derives alpha and beta from ring-allreduce timings of a small and a large
// message on p ranks: T(n) = 2(p-1)(alpha + n/p * beta) (+ reduction).
TunerModel ModelFromRingTimings(int nranks, double small_bytes, double small_s, double large_bytes, double large_s,
                                double gamma_s_per_byte, size_t chunk_bytes);

// One line per (collective, size) with every candidate's predicted time.
std::string DescribeDecisions(const TunerModel& model, int nranks);

}  // namespace chorus
