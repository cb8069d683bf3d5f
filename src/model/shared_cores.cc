#include "model/shared_cores.h"

#include <algorithm>
#include <numeric>

#include "algorithms/topology.h"

namespace chorus::model {

Status HostCpuSecondsOfSchedules(const std::vector<Schedule>& schedules, const ClusterModel& cluster,
                                 std::vector<double>* per_host) {
  if (cluster.hosts < 1 || cluster.ranks_per_host < 1 || static_cast<int>(schedules.size()) != cluster.nranks()) {
    return InvalidArgument("host CPU work: ", schedules.size(), " schedules for a cluster of ", cluster.hosts,
                           " hosts of ", cluster.ranks_per_host, " ranks");
  }
  if (cluster.host_cpu_s_per_byte < 0 || cluster.gamma_s_per_byte < 0) {
    return InvalidArgument("host CPU cost and gamma must not be negative");
  }
  std::vector<double> work(static_cast<size_t>(cluster.hosts), 0.0);
  for (int rank = 0; rank < cluster.nranks(); ++rank) {
    const int host = cluster.HostOf(rank);
    for (const Step& step : schedules[rank].steps) {
      const double bytes = static_cast<double>(step.bytes);
      const bool moves =
          step.kind == StepKind::kSend || step.kind == StepKind::kRecv || step.kind == StepKind::kRecvReduce;
      if (moves && step.peer >= 0 && step.peer < cluster.nranks() && cluster.HostOf(step.peer) != host) {
        work[host] += bytes * cluster.host_cpu_s_per_byte;
      }
      if (step.kind == StepKind::kRecvReduce || step.kind == StepKind::kReduce) {
        work[host] += bytes * cluster.gamma_s_per_byte;
      }
    }
  }
  *per_host = std::move(work);
  return Status::Ok();
}

Status HostCpuSeconds(const CollectiveArgs& call, Algorithm algo, const ClusterModel& cluster,
                      std::vector<double>* per_host) {
  if (call.nranks != cluster.nranks()) {
    return InvalidArgument("call has ", call.nranks, " ranks but the cluster ", cluster.nranks());
  }
  Topology hosts;
  CollectiveArgs base = call;
  if (base.topology == nullptr && cluster.hosts > 1) {  // as Simulate: the cluster's hosts are the topology
    for (int rank = 0; rank < call.nranks; ++rank) hosts.host_of_rank.push_back(cluster.HostOf(rank));
    base.topology = &hosts;
  }
  std::vector<Schedule> schedules(static_cast<size_t>(call.nranks));
  for (int rank = 0; rank < call.nranks; ++rank) {
    CollectiveArgs args = base;
    args.rank = rank;
    CHORUS_RETURN_IF_ERROR(BuildSchedule(args, algo, &schedules[rank]));
  }
  return HostCpuSecondsOfSchedules(schedules, cluster, per_host);
}

double SharedCoresSeconds(double seconds, const std::vector<double>& per_host, int physical_cores) {
  if (physical_cores <= 0 || physical_cores >= static_cast<int>(per_host.size())) return seconds;
  const double total = std::accumulate(per_host.begin(), per_host.end(), 0.0);
  const double busiest = per_host.empty() ? 0.0 : *std::max_element(per_host.begin(), per_host.end());
  return std::max({seconds, total / physical_cores, busiest});
}

}  // namespace chorus::model
