#include "sim/simulator.h"

#include <memory>
#include <vector>

#include "sim/bus_bandwidth.h"
#include "sim/compact_schedule.h"
#include "sim/replay_engine.h"

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

}  // namespace

Status Simulate(const CollectiveArgs& call, Algorithm algo, const ClusterModel& cluster, const SimOptions& options,
                SimResult* result) {
  CHORUS_RETURN_IF_ERROR(Validate(call, cluster));
  const int p = call.nranks;
  std::vector<std::shared_ptr<const CompactSchedule>> schedules(static_cast<size_t>(p));
  ScheduleInterner interner;
  auto build = [&](int rank) -> Status {
    CollectiveArgs args = call;
    args.rank = rank;
    Schedule schedule;
    CHORUS_RETURN_IF_ERROR(BuildSchedule(args, algo, &schedule));
    schedules[rank] = interner.Intern(Compact(schedule, rank, p, options.chunk_bytes));
    return Status::Ok();
  };

  bool all_built = false;
  if (options.reuse_symmetric_schedules && p > 8) {
    CHORUS_RETURN_IF_ERROR(build(0));
    bool symmetric = true;
    for (int sample : {1, p / 3, p / 2, p - 1}) {
      CHORUS_RETURN_IF_ERROR(build(sample));
      symmetric = symmetric && schedules[sample] == schedules[0];
    }
    if (symmetric) {
      for (auto& schedule : schedules) schedule = schedules[0];
      all_built = true;
    }
  }
  if (!all_built) {
    for (int rank = 0; rank < p; ++rank) {
      if (schedules[rank] == nullptr) CHORUS_RETURN_IF_ERROR(build(rank));
    }
  }

  SimResult out;
  out.distinct_schedules = interner.distinct();
  ReplayEngine engine(cluster, std::move(schedules), options.max_inflight_per_peer);
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
  ReplayEngine engine(cluster, std::move(compact), options.max_inflight_per_peer);
  CHORUS_RETURN_IF_ERROR(engine.Run(&out));
  *result = out;
  return Status::Ok();
}

}  // namespace chorus::sim
