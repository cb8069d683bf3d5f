// Tuner: picks the fastest exact algorithm for a call from the
// alpha-beta-gamma cost model (src/model/cost_model.h), with link parameters
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
  // Reduction time per byte when the operands stay in cache (calls of up to
  // kCacheResidentBytes); 0: gamma_s_per_byte. The probe behind gamma
  // streams megabytes and runs ~3x slower than a 32 KiB reduction, which
  // made the model overcharge the extra reduction of one-shot at 8-32 KiB.
  double cached_gamma_s_per_byte = 0;
  // Cost of each extra message a rank has in flight at once (what "direct"
  // pays p-2 times per round on top of alpha); see kOverheadPerAlpha.
  double overhead_s = 0;
  // The link class within a host, when it differs from alpha/beta (several
  // hosts: the measurement sees the slower class between hosts). 0 = same.
  double intra_alpha_s = 0;
  double intra_beta_s_per_byte = 0;
  size_t chunk_bytes = 0;
  std::string source;           // "measured", a file name, or "default"

  bool valid() const { return alpha_s > 0 && beta_s_per_byte > 0; }
};

// Unless a tune file says otherwise (overhead_us), the per-message overhead
// is this fraction of alpha: alpha is a dependent hop (post, wake the peer,
// poll), an extra concurrent message mostly only its post and its match.
// Measured on one host (docs/design-notes.md, "Direct allreduce"), where it makes
// direct win at 4 ranks up to medium sizes and the tree win from ~16 ranks.
constexpr double kOverheadPerAlpha = 0.25;

// Calls of up to this many bytes are costed with the cached reduction rate:
// a call's operands (its buffers, the peers' slices) then fit every x86
// core's L2, and what a rank reduces was just received or just written.
constexpr size_t kCacheResidentBytes = 64 * 1024;

// The reduction time per byte the model uses for a call of `bytes`.
double GammaFor(const TunerModel& model, size_t bytes);

struct TunerChoice {
  Algorithm algorithm = Algorithm::kRing;
  double predicted_s = 0;
  // Every candidate with its predicted time, fastest first (for the table).
  std::vector<std::pair<Algorithm, double>> candidates;
};

// Fastest exact algorithm for `args` under `model` (ties: enum order; the
// ring also wins when it is within 5% of the fastest). args.topology, when
// set, gives the hosts that the hierarchical and direct costs depend on
// (null: one host).
TunerChoice ChooseByCost(const CollectiveArgs& args, const TunerModel& model);

// Reads "alpha_us=<x> bandwidth_GBps=<y> gamma_GBps=<z>" and optionally
// "overhead_us=<o> intra_alpha_us=<a> intra_bandwidth_GBps=<b>
// cached_gamma_GBps=<c>" (any order, whitespace or newlines between) from
// `path`.
Status ReadTuneFile(const std::string& path, TunerModel* model);
// Its parse step: `text` is the file's contents, `path` names it in errors
// and becomes `model->source`. On error `*model` is left unchanged; on
// success it is replaced, keeping only its chunk_bytes.
Status ParseTuneText(const std::string& text, const std::string& path, TunerModel* model);

// Derives alpha and beta from ring-allreduce timings of a small and a large
// message on p ranks: T(n) = 2(p-1)(alpha + n/p * beta) (+ reduction).
TunerModel ModelFromRingTimings(int nranks, double small_bytes, double small_s, double large_bytes, double large_s,
                                double gamma_s_per_byte, size_t chunk_bytes);

// One line per (collective, size) with every candidate's predicted time, for
// nranks spread over `hosts` hosts in contiguous blocks.
std::string DescribeDecisions(const TunerModel& model, int nranks, int hosts = 1);

}  // namespace chorus
