#include "sim_table.h"

#include <algorithm>
#include <cstdio>

#include "base/dtype.h"
#include "model/cost_model.h"
#include "model/shared_cores.h"

namespace chorus::sim {

using model::AlgorithmsSupporting;

Status ClusterFor(const SimFlags& flags, int nranks, ClusterModel* cluster) {
  ClusterModel out;
  out.ranks_per_host = flags.ranks_per_host;
  out.hosts = flags.hosts > 0 ? flags.hosts : nranks / flags.ranks_per_host;
  if (out.hosts * out.ranks_per_host != nranks) {
    return InvalidArgument(nranks, " ranks do not fill ", out.hosts, " hosts of ", out.ranks_per_host, " ranks");
  }
  out.inter_host = LinkModel{flags.inter_latency_s, flags.inter_bandwidth_Bps};
  out.intra_host = LinkModel{flags.intra_latency_s, flags.intra_bandwidth_Bps};
  out.gamma_s_per_byte = flags.gamma_s_per_byte;
  out.physical_cores = flags.physical_cores;
  out.host_cpu_s_per_byte = flags.host_cpu_s_per_byte;
  *cluster = out;
  return Status::Ok();
}

Status SimulatePoint(const SimFlags& flags, Algorithm algo, int nranks, SimResult* result) {
  ClusterModel cluster;
  CHORUS_RETURN_IF_ERROR(ClusterFor(flags, nranks, &cluster));
  CollectiveArgs call;
  call.coll = flags.coll;
  call.nranks = nranks;
  call.dtype = chorusFloat32;
  call.count = flags.bytes / DataTypeSize(call.dtype);
  SimOptions options;
  options.chunk_bytes = flags.chunk_bytes;
  return SimulateOnSharedCores(call, algo, cluster, options, result);
}

std::string FormatSeconds(double seconds) {
  char text[32];
  if (seconds >= 1) std::snprintf(text, sizeof(text), "%.3f s", seconds);
  else if (seconds >= 1e-3) std::snprintf(text, sizeof(text), "%.3f ms", seconds * 1e3);
  else std::snprintf(text, sizeof(text), "%.1f us", seconds * 1e6);
  return text;
}

std::string FormatBytes(double bytes) {
  char text[32];
  if (bytes >= 1024.0 * 1024 * 1024) std::snprintf(text, sizeof(text), "%.2f GiB", bytes / (1024.0 * 1024 * 1024));
  else if (bytes >= 1024.0 * 1024) std::snprintf(text, sizeof(text), "%.1f MiB", bytes / (1024.0 * 1024));
  else if (bytes >= 1024.0) std::snprintf(text, sizeof(text), "%.1f KiB", bytes / 1024.0);
  else std::snprintf(text, sizeof(text), "%.0f B", bytes);
  return text;
}

Status PrintSweep(const SimFlags& flags) {
  std::vector<Algorithm> algorithms;
  for (Algorithm algo : AlgorithmsSupporting(flags.coll)) {
    if (flags.algo == "all" || flags.algo == AlgorithmName(algo)) algorithms.push_back(algo);
  }
  if (algorithms.empty()) {
    return InvalidArgument("no algorithm '", flags.algo, "' for ", CollectiveName(flags.coll));
  }
  std::printf("# %s of %s, inter-host %.3g GB/s alpha %s, intra-host %.3g GB/s alpha %s, gamma %.3g s/B, chunk %s\n",
              CollectiveName(flags.coll), FormatBytes(static_cast<double>(flags.bytes)).c_str(),
              flags.inter_bandwidth_Bps / 1e9, FormatSeconds(flags.inter_latency_s).c_str(),
              flags.intra_bandwidth_Bps / 1e9, FormatSeconds(flags.intra_latency_s).c_str(), flags.gamma_s_per_byte,
              flags.chunk_bytes == 0 ? "whole steps" : FormatBytes(static_cast<double>(flags.chunk_bytes)).c_str());
  if (flags.physical_cores > 0) {
    std::printf("# hosts share %d physical cores, host CPU %.3g s per cross-host byte and end (model/shared_cores.h)\n",
                flags.physical_cores, flags.host_cpu_s_per_byte);
  }
  std::printf("%6s  %-11s %12s %12s %10s %14s %14s\n", "ranks", "algorithm", "time", "analytic", "busbw GB/s",
              "max link bytes", "inter-host");
  for (int nranks : flags.ranks) {
    for (Algorithm algo : algorithms) {
      SimResult result;
      CHORUS_RETURN_IF_ERROR(SimulatePoint(flags, algo, nranks, &result));
      ClusterModel cluster;
      CHORUS_RETURN_IF_ERROR(ClusterFor(flags, nranks, &cluster));
      CollectiveArgs call;
      call.coll = flags.coll;
      call.nranks = nranks;
      call.count = flags.bytes / 4;
      double analytic = -1;
      const bool has_formula = AnalyticTime(algo, call, CostParamsFor(cluster, flags.chunk_bytes), &analytic);
      const double max_link = static_cast<double>(std::max(
          {result.max_rank_sent_bytes, result.max_rank_received_bytes, result.max_host_nic_bytes}));
      std::printf("%6d  %-11s %12s %12s %10.3f %14s %14s\n", nranks, AlgorithmName(algo),
                  FormatSeconds(result.time_s).c_str(), has_formula ? FormatSeconds(analytic).c_str() : "-",
                  result.busbw_Bps / 1e9, FormatBytes(max_link).c_str(),
                  FormatBytes(static_cast<double>(result.inter_host_bytes)).c_str());
      std::fflush(stdout);
    }
  }
  return Status::Ok();
}

}  // namespace chorus::sim
