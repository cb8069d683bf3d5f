#include "sim/simulator.h"

#include <memory>
#include <vector>

#include "algorithms/topology.h"
#include "sim/bus_bandwidth.h"
#include "sim/compact_schedule.h"
#include "sim/replay_engine.h"
#include "model/shared_cores.h"

namespace chorus::sim {

namespace {

Status Validate(const CollectiveArgs& call, const ClusterModel& cluster) {
  if (cluster.hosts < 1 || cluster.ranks_per_host < 1) {
    return InvalidArgument("cluster needs at least one host and one rank per host");
  }
  if (call.nranks != cluster.nranks()) {
    return InvalidArgument("call has ", call.nranks, " ranks but the cluster ", cluster.nranks());
  }
  for (const LinkModel* link : {&cluster.intra_host, &cluster.inter_host}) {
    if (!(link->bandwidth_Bps > 0) || link->alpha_s < 0) {
      return InvalidArgument("link bandwidth must be positive and latency non-negative");
    }
  }
  return Status::Ok();
}

// The smallest shift that maps the cluster onto itself: one rank when
// every rank is alike (one host, or a rank per host), else one host.
int ClusterPeriod(const ClusterModel& cluster) { return cluster.hosts > 1 ? cluster.ranks_per_host : 1; }

// Ranks whose schedules must equal their representative's (rank mod
// period) before the quotient is trusted: both ends, the middle, and a
// spread of others.
std::vector<int> SampleRanks(int p, int period) {
  std::vector<int> samples = {period, 2 * period - 1, p / 3, p / 2, p - 2, p - 1};
  uint64_t state = 0x9e3779b97f4a7c15ULL;
  for (int i = 0; i < 10; ++i) {
    state = state * 6364136223846793005ULL + 1442695040888963407ULL;
    samples.push_back(static_cast<int>((state >> 33) % static_cast<uint64_t>(p)));
  }
  std::vector<int> out;
  for (int rank : samples) {
    if (rank >= period && rank < p) out.push_back(rank);
  }
  return out;
}

}  // namespace

Status Simulate(const CollectiveArgs& call, Algorithm algo, const ClusterModel& cluster, const SimOptions& options,
                SimResult* result) {
  CHORUS_RETURN_IF_ERROR(Validate(call, cluster));
  const int p = call.nranks;
  Topology hosts;
  CollectiveArgs base = call;
  if (base.topology == nullptr && cluster.hosts > 1) {
    hosts.host_of_rank.resize(static_cast<size_t>(p));
    for (int rank = 0; rank < p; ++rank) hosts.host_of_rank[rank] = cluster.HostOf(rank);
    base.topology = &hosts;
  }
  std::vector<std::shared_ptr<const CompactSchedule>> schedules(static_cast<size_t>(p));
  ScheduleInterner interner;
  auto build = [&](int rank) -> Status {
    CollectiveArgs args = base;
    args.rank = rank;
    Schedule schedule;
    CHORUS_RETURN_IF_ERROR(BuildSchedule(args, algo, &schedule));
    schedules[rank] = interner.Intern(Compact(schedule, rank, p, options.chunk_bytes));
    return Status::Ok();
  };

  const int period = ClusterPeriod(cluster);
  bool quotient = false;
  if (options.reuse_symmetric_schedules && p > 8 && p > period && p % period == 0) {
    for (int rank = 0; rank < period; ++rank) CHORUS_RETURN_IF_ERROR(build(rank));
    quotient = true;
    for (int sample : SampleRanks(p, period)) {
      CHORUS_RETURN_IF_ERROR(build(sample));
      quotient = quotient && schedules[sample] == schedules[sample % period];
      if (!quotient) break;
    }
  }
  if (quotient) {
    schedules.resize(static_cast<size_t>(period));
  } else {
    for (int rank = 0; rank < p; ++rank) {
      if (schedules[rank] == nullptr) CHORUS_RETURN_IF_ERROR(build(rank));
    }
  }

  SimResult out;
  out.distinct_schedules = interner.distinct();
  ReplayEngine engine(cluster, p, std::move(schedules), options.max_inflight_per_peer);
  CHORUS_RETURN_IF_ERROR(engine.Run(&out));
  if (out.time_s > 0) {
    out.algbw_Bps = NcclTestsBytes(call) / out.time_s;
    out.busbw_Bps = out.algbw_Bps * BusBandwidthFactor(call.coll, p);
  }
  *result = out;
  return Status::Ok();
}

Status SimulateSchedules(const std::vector<Schedule>& schedules, const ClusterModel& cluster,
                         const SimOptions& options, SimResult* result) {
  CollectiveArgs call;
  call.nranks = static_cast<int>(schedules.size());
  CHORUS_RETURN_IF_ERROR(Validate(call, cluster));
  ScheduleInterner interner;
  std::vector<std::shared_ptr<const CompactSchedule>> compact;
  compact.reserve(schedules.size());
  for (size_t rank = 0; rank < schedules.size(); ++rank) {
    compact.push_back(interner.Intern(Compact(schedules[rank], static_cast<int>(rank), call.nranks,
                                              options.chunk_bytes)));
  }
  SimResult out;
  out.distinct_schedules = interner.distinct();
  ReplayEngine engine(cluster, call.nranks, std::move(compact), options.max_inflight_per_peer);
  CHORUS_RETURN_IF_ERROR(engine.Run(&out));
  *result = out;
  return Status::Ok();
}

Status SimulateOnSharedCores(const CollectiveArgs& call, Algorithm algo, const ClusterModel& cluster,
                             const SimOptions& options, SimResult* result) {
  SimResult out;
  CHORUS_RETURN_IF_ERROR(Simulate(call, algo, cluster, options, &out));
  if (cluster.physical_cores > 0 && cluster.physical_cores < cluster.hosts && out.time_s > 0) {
    std::vector<double> per_host;
    CHORUS_RETURN_IF_ERROR(model::HostCpuSeconds(call, algo, cluster, &per_host));
    const double stretched = model::SharedCoresSeconds(out.time_s, per_host, cluster.physical_cores);
    out.algbw_Bps *= out.time_s / stretched;
    out.busbw_Bps *= out.time_s / stretched;
    out.time_s = stretched;
  }
  *result = out;
  return Status::Ok();
}

}  // namespace chorus::sim
