#include "presets.h"

#include <algorithm>
#include <cstdio>
#include <vector>

#include "model/cost_model.h"
#include "sim/simulator.h"
#include "sim_table.h"

namespace chorus::sim {

using model::AnalyticTime;
using model::CostParams;
using model::ParameterServerAllReduceTime;

namespace {

// `algo` itself when an allreduce can run it (the descriptor table says
// so), else nullptr: the column is then a dash.
const Algorithm* IfAllReduce(const Algorithm& algo) {
  return Supports(algo, Collective::kAllReduce) ? &algo : nullptr;
}

std::string SimulatedOrDash(const SimFlags& flags, const Algorithm* algo, int nranks, Status* status) {
  if (algo == nullptr) return "-";
  SimResult result;
  *status = SimulatePoint(flags, *algo, nranks, &result);
  return status->ok() ? FormatSeconds(result.time_s) : "error";
}

void PrintHeader(const char* title, const SimFlags& flags) {
  std::printf("# %s: %s per rank, %d rank(s) per host, inter-host %.3g Gbit/s alpha %s, gamma %.3g s/B, chunk %s\n",
              title, FormatBytes(static_cast<double>(flags.bytes)).c_str(), flags.ranks_per_host,
              flags.inter_bandwidth_Bps * 8 / 1e9, FormatSeconds(flags.inter_latency_s).c_str(),
              flags.gamma_s_per_byte,
              flags.chunk_bytes == 0 ? "whole steps" : FormatBytes(static_cast<double>(flags.chunk_bytes)).c_str());
}

// FireCaffe Figure 4: PS time grows with p, the reduction tree with log p.
Status RunFireCaffe(const SimFlags& flags) {
  PrintHeader("FireCaffe Fig. 4, allreduce of the gradient", flags);
  static constexpr Algorithm kPs = Algorithm::kParameterServer, kTree = Algorithm::kTree, kRing = Algorithm::kRing;
  const Algorithm* ps = IfAllReduce(kPs);
  if (ps == nullptr) std::printf("# note: no \"ps\" algorithm in this build; the PS columns are the analytic model only\n");
  std::printf("%6s %12s %12s %12s %12s %12s\n", "ranks", "ps sim", "ps model", "tree sim", "tree model", "ring sim");
  for (int nranks : flags.ranks) {
    ClusterModel cluster;
    CHORUS_RETURN_IF_ERROR(ClusterFor(flags, nranks, &cluster));
    const CostParams whole = CostParamsFor(cluster, 0);  // FireCaffe's model: no pipelining
    CollectiveArgs call;
    call.nranks = nranks;
    call.count = flags.bytes / 4;
    double tree_model = 0;
    AnalyticTime(Algorithm::kTree, call, whole, &tree_model);
    const double ps_model = ParameterServerAllReduceTime(nranks, static_cast<double>(flags.bytes), whole);
    Status status;
    const std::string ps_sim = SimulatedOrDash(flags, ps, nranks, &status);
    CHORUS_RETURN_IF_ERROR(status);
    const std::string tree_sim = SimulatedOrDash(flags, IfAllReduce(kTree), nranks, &status);
    CHORUS_RETURN_IF_ERROR(status);
    const std::string ring_sim = SimulatedOrDash(flags, IfAllReduce(kRing), nranks, &status);
    CHORUS_RETURN_IF_ERROR(status);
    std::printf("%6d %12s %12s %12s %12s %12s\n", nranks, ps_sim.c_str(), FormatSeconds(ps_model).c_str(),
                tree_sim.c_str(), FormatSeconds(tree_model).c_str(), ring_sim.c_str());
    std::fflush(stdout);
  }
  return Status::Ok();
}

// Pipe-SGD: compute + comm per iteration, against max(compute, comm) when
// step t's allreduce overlaps step t+1's compute.
Status RunPipeSgd(const SimFlags& flags) {
  PrintHeader("Pipe-SGD, ring allreduce of the model each iteration", flags);
  std::printf("# compute per iteration: %s (fixed per-rank batch)\n", FormatSeconds(flags.compute_s).c_str());
  std::printf("%6s %12s %12s %14s %14s %8s\n", "ranks", "comm", "compute", "compute+comm", "max(both)",
              "speedup");
  for (int nranks : flags.ranks) {
    SimResult result;
    CHORUS_RETURN_IF_ERROR(SimulatePoint(flags, Algorithm::kRing, nranks, &result));
    const double sequential = flags.compute_s + result.time_s;
    const double pipelined = std::max(flags.compute_s, result.time_s);
    std::printf("%6d %12s %12s %14s %14s %7.2fx\n", nranks, FormatSeconds(result.time_s).c_str(),
                FormatSeconds(flags.compute_s).c_str(), FormatSeconds(sequential).c_str(),
                FormatSeconds(pipelined).c_str(), sequential / pipelined);
    std::fflush(stdout);
  }
  return Status::Ok();
}

// One GossipGraD step on the hypercube: every rank swaps |W| with rank ^ 1.
std::vector<Schedule> GossipStep(int nranks, size_t bytes) {
  std::vector<Schedule> schedules(static_cast<size_t>(nranks));
  for (int rank = 0; rank < nranks; ++rank) {
    Schedule& schedule = schedules[rank];
    schedule.algorithm = "gossip";
    const int partner = rank ^ 1;
    if (partner >= nranks) continue;
    Step send;
    send.kind = StepKind::kSend;
    send.peer = partner;
    send.src = BufferRange{BufferId::kSend, 0};
    send.bytes = bytes;
    schedule.Add(send);
    Step receive;
    receive.kind = StepKind::kRecv;
    receive.peer = partner;
    receive.dst = BufferRange{BufferId::kRecv, 0};
    receive.bytes = bytes;
    schedule.Add(receive);
  }
  return schedules;
}

Status RunGossip(const SimFlags& flags) {
  PrintHeader("GossipGraD, one partner exchange per step vs ring allreduce", flags);
  std::printf("%6s %14s %14s %14s %10s\n", "ranks", "ring allreduce", "gossip step", "gossip model", "ratio");
  for (int nranks : flags.ranks) {
    SimResult ring;
    CHORUS_RETURN_IF_ERROR(SimulatePoint(flags, Algorithm::kRing, nranks, &ring));
    ClusterModel cluster;
    CHORUS_RETURN_IF_ERROR(ClusterFor(flags, nranks, &cluster));
    SimOptions options;
    options.chunk_bytes = flags.chunk_bytes;
    SimResult gossip;
    CHORUS_RETURN_IF_ERROR(SimulateSchedules(GossipStep(nranks, flags.bytes), cluster, options, &gossip));
    const CostParams params = CostParamsFor(cluster, 0);
    const double model = params.alpha_s + static_cast<double>(flags.bytes) * params.beta_s_per_byte;
    std::printf("%6d %14s %14s %14s %9.2fx\n", nranks, FormatSeconds(ring.time_s).c_str(),
                FormatSeconds(gossip.time_s).c_str(), FormatSeconds(model).c_str(), ring.time_s / gossip.time_s);
    std::fflush(stdout);
  }
  return Status::Ok();
}

}  // namespace

Status ApplyPresetDefaults(const std::string& preset, SimFlags* flags) {
  flags->ranks_per_host = 1;
  flags->hosts = 0;
  if (preset == "firecaffe") {
    // 30 MB of NiN gradients; one GPU per node on an FDR InfiniBand-class
    // fabric (56 Gbit/s, a few us), as in FireCaffe's cluster.
    flags->bytes = 30u << 20;
    flags->ranks = {2, 4, 8, 16, 32, 64, 128, 256, 512, 1024};
    flags->inter_bandwidth_Bps = 56e9 / 8;
    flags->inter_latency_s = 2e-6;
  } else if (preset == "pipe-sgd") {
    // A ~100 MB model (ResNet-50-class gradients in float32) on 10 Gbit/s Ethernet.
    flags->bytes = 100u << 20;
    flags->ranks = {2, 4, 8, 16, 32, 64, 128};
    flags->inter_bandwidth_Bps = 10e9 / 8;
    flags->inter_latency_s = 50e-6;
    flags->compute_s = 0.2;
  } else if (preset == "gossip") {
    flags->bytes = 100u << 20;
    flags->ranks = {2, 4, 8, 16, 32, 64, 128, 256, 512, 1024};
    flags->inter_bandwidth_Bps = 10e9 / 8;
    flags->inter_latency_s = 50e-6;
  } else {
    return InvalidArgument("unknown preset '", preset, "' (firecaffe, pipe-sgd, gossip)");
  }
  return Status::Ok();
}

Status RunPreset(const SimFlags& flags) {
  if (flags.preset == "firecaffe") return RunFireCaffe(flags);
  if (flags.preset == "pipe-sgd") return RunPipeSgd(flags);
  if (flags.preset == "gossip") return RunGossip(flags);
  return InvalidArgument("unknown preset '", flags.preset, "'");
}

}  // namespace chorus::sim
