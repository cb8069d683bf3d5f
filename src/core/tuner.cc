#include "core/tuner.h"

#include <algorithm>
#include <fstream>
#include <sstream>

#include "algorithms/topology.h"
#include "model/cost_model.h"

namespace chorus {

double GammaFor(const TunerModel& model, size_t bytes) {
  const bool cached = model.cached_gamma_s_per_byte > 0 && bytes <= kCacheResidentBytes;
  return cached ? model.cached_gamma_s_per_byte : model.gamma_s_per_byte;
}

TunerChoice ChooseByCost(const CollectiveArgs& args, const TunerModel& model) {
  model::CostParams params;
  params.alpha_s = model.alpha_s;
  params.beta_s_per_byte = model.beta_s_per_byte;
  params.gamma_s_per_byte = GammaFor(model, args.count * DataTypeSize(args.dtype));
  params.chunk_bytes = model.chunk_bytes;
  params.overhead_s = model.overhead_s;
  params.intra_alpha_s = model.intra_alpha_s;
  params.intra_beta_s_per_byte = model.intra_beta_s_per_byte;
  if (args.topology != nullptr && IsValidTopology(args.topology, args.nranks)) {
    const HostLayout layout(args.topology, args.nranks);
    params.hosts = layout.host_count();
    for (int h = 0; h < layout.host_count(); ++h) {
      params.ranks_per_host = std::max(params.ranks_per_host, static_cast<int>(layout.local_ranks(h).size()));
    }
  }
  TunerChoice choice;
  for (Algorithm algo : model::AlgorithmsSupporting(args.coll)) {
    double seconds = 0;
    if (model::AnalyticTime(algo, args, params, &seconds)) choice.candidates.emplace_back(algo, seconds);
  }
  std::stable_sort(choice.candidates.begin(), choice.candidates.end(),
                   [](const auto& a, const auto& b) { return a.second < b.second; });
  // A single-host-only algorithm (direct) has a cost that assumes a port
  // serves p-1 concurrent inbound flows at full rate. Across TCP hosts Chorus
  // does not (one stream runs ahead of the others it is combined with:
  // "Fan-in on the emulated cluster", docs/algorithms.md; direct at 8 hosts,
  // 1 MiB: +66 % over the ring), so it stays a candidate in the table but is
  // chosen only on one host.
  auto eligible = [&](Algorithm algo) {
    const AlgorithmDescriptor* descriptor = FindAlgorithmDescriptor(algo);
    return descriptor != nullptr && (!descriptor->single_host_only || params.hosts <= 1);
  };
  const auto first = std::find_if(choice.candidates.begin(), choice.candidates.end(),
                                  [&](const auto& candidate) { return eligible(candidate.first); });
  if (first == choice.candidates.end()) return choice;
  choice.algorithm = first->first;
  choice.predicted_s = first->second;
  // The model cannot tell apart algorithms within a few percent; the ring
  // keeps every link busy with one steady flow, which measured best when
  // the model called it a near tie (docs/algorithms.md), so it wins those.
  for (const auto& [algo, seconds] : choice.candidates) {
    if (algo == Algorithm::kRing && seconds <= choice.predicted_s * 1.05) {
      choice.algorithm = algo;
      choice.predicted_s = seconds;
    }
  }
  return choice;
}

Status ReadTuneFile(const std::string& path, TunerModel* model) {
  std::ifstream file(path);
  if (!file) return InvalidArgument("CHORUS_TUNE_FILE: cannot read '", path, "'");
  std::ostringstream text;
  text << file.rdbuf();
  return ParseTuneText(text.str(), path, model);
}

namespace {
constexpr double kMinTuneValue = 1e-9;
constexpr double kMaxTuneValue = 1e12;
}  // namespace

Status ParseTuneText(const std::string& text, const std::string& path, TunerModel* model) {
  std::istringstream in(text);
  TunerModel parsed;
  parsed.chunk_bytes = model->chunk_bytes;
  std::string token;
  double bandwidth = 0, gamma_bandwidth = 0, cached_gamma_bandwidth = 0, intra_bandwidth = 0, overhead_us = -1;
  while (in >> token) {
    size_t eq = token.find('=');
    if (eq == std::string::npos) return InvalidArgument("CHORUS_TUNE_FILE '", path, "': expected key=value, got '", token, "'");
    std::string key = token.substr(0, eq);
    double value = 0;
    std::istringstream number(token.substr(eq + 1));
    if (!(number >> value) || value <= 0) {
      return InvalidArgument("CHORUS_TUNE_FILE '", path, "': '", token, "' needs a positive number");
    }
    // Far beyond any real link or latency, and what keeps every derived
    // time (1 / bandwidth, ...) finite and positive.
    if (!(value >= kMinTuneValue && value <= kMaxTuneValue)) {
      return InvalidArgument("CHORUS_TUNE_FILE '", path, "': '", token, "' must be between ", kMinTuneValue,
                             " and ", kMaxTuneValue);
    }
    if (key == "alpha_us") parsed.alpha_s = value * 1e-6;
    else if (key == "bandwidth_GBps") bandwidth = value * 1e9;
    else if (key == "gamma_GBps") gamma_bandwidth = value * 1e9;
    else if (key == "cached_gamma_GBps") cached_gamma_bandwidth = value * 1e9;
    else if (key == "overhead_us") overhead_us = value;
    else if (key == "intra_alpha_us") parsed.intra_alpha_s = value * 1e-6;
    else if (key == "intra_bandwidth_GBps") intra_bandwidth = value * 1e9;
    else return InvalidArgument("CHORUS_TUNE_FILE '", path, "': unknown key '", key, "'");
  }
  if (parsed.alpha_s <= 0 || bandwidth <= 0) {
    return InvalidArgument("CHORUS_TUNE_FILE '", path, "' must set alpha_us and bandwidth_GBps");
  }
  parsed.beta_s_per_byte = 1 / bandwidth;
  parsed.gamma_s_per_byte = gamma_bandwidth > 0 ? 1 / gamma_bandwidth : 0;
  parsed.cached_gamma_s_per_byte = cached_gamma_bandwidth > 0 ? 1 / cached_gamma_bandwidth : 0;
  parsed.intra_beta_s_per_byte = intra_bandwidth > 0 ? 1 / intra_bandwidth : 0;
  parsed.overhead_s = overhead_us > 0 ? overhead_us * 1e-6 : parsed.alpha_s * kOverheadPerAlpha;
  parsed.source = path;
  *model = parsed;
  return Status::Ok();
}

TunerModel ModelFromRingTimings(int nranks, double small_bytes, double small_s, double large_bytes, double large_s,
                                double gamma_s_per_byte, size_t chunk_bytes) {
  TunerModel model;
  model.chunk_bytes = chunk_bytes;
  model.gamma_s_per_byte = gamma_s_per_byte;
  model.source = "measured";
  const double p = std::max(2, nranks);
  const double steps = 2 * (p - 1);
  model.alpha_s = std::max(1e-7, small_s / steps - small_bytes / p * 1e-10);
  const double reduce_s = (p - 1) / p * large_bytes * gamma_s_per_byte;
  const double per_step = std::max(0.0, (large_s - reduce_s) / steps - model.alpha_s);
  model.beta_s_per_byte = std::max(1e-12, per_step * p / large_bytes);
  model.overhead_s = model.alpha_s * kOverheadPerAlpha;
  return model;
}

std::string DescribeDecisions(const TunerModel& model, int nranks, int hosts) {
  hosts = std::clamp(hosts, 1, std::max(1, nranks));
  Topology topology;
  for (int r = 0; r < nranks; ++r) topology.host_of_rank.push_back(static_cast<int>(int64_t{r} * hosts / nranks));
  auto gbps = [](double seconds_per_byte) { return seconds_per_byte > 0 ? 1e-9 / seconds_per_byte : 0; };
  std::ostringstream out;
  out << "# tuner: p=" << nranks << " hosts=" << hosts << " alpha=" << model.alpha_s * 1e6
      << "us bandwidth=" << gbps(model.beta_s_per_byte) << "GB/s gamma=" << gbps(model.gamma_s_per_byte)
      << "GB/s overhead=" << model.overhead_s * 1e6 << "us";
  if (model.cached_gamma_s_per_byte > 0) {
    out << " cached-gamma=" << gbps(model.cached_gamma_s_per_byte) << "GB/s (to " << kCacheResidentBytes << " B)";
  }
  if (model.intra_alpha_s > 0 || model.intra_beta_s_per_byte > 0) {
    out << " intra-host alpha=" << (model.intra_alpha_s > 0 ? model.intra_alpha_s : model.alpha_s) * 1e6
        << "us bandwidth="
        << gbps(model.intra_beta_s_per_byte > 0 ? model.intra_beta_s_per_byte : model.beta_s_per_byte) << "GB/s";
  }
  out << " (" << model.source << ")\n";
  for (Collective coll : {Collective::kAllReduce, Collective::kBroadcast, Collective::kReduce,
                          Collective::kAllGather, Collective::kReduceScatter}) {
    for (size_t bytes = 8; bytes <= (size_t{1} << 30); bytes *= 8) {
      CollectiveArgs args;
      args.coll = coll;
      args.dtype = chorusUint8;
      args.count = bytes;
      args.nranks = nranks;
      args.topology = &topology;
      TunerChoice choice = ChooseByCost(args, model);
      out << CollectiveName(coll) << " " << bytes << " B -> " << AlgorithmName(choice.algorithm) << " ("
          << choice.predicted_s * 1e6 << " us)";
      for (size_t i = 1; i < choice.candidates.size(); ++i) {
        out << "; " << AlgorithmName(choice.candidates[i].first) << " " << choice.candidates[i].second * 1e6 << " us";
      }
      out << "\n";
    }
  }
  return out.str();
}

}  // namespace chorus
