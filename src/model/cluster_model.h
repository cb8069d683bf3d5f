// The machine a simulated collective runs on: hosts of ranks, two link
// classes (within a host, between hosts) and a reduction cost.
#pragma once

namespace chorus::model {

// One link class in the alpha-beta model: a message of n bytes takes
// alpha + n / bandwidth seconds from first byte sent to last byte received.
struct LinkModel {
  double alpha_s = 0;            // latency per message (chunk)
  double bandwidth_Bps = 1e9;    // bytes per second
};

// Ranks r live on host r / ranks_per_host. Every rank has an inbound and an
// outbound port (full duplex), each carrying one transfer at a time; traffic
// between hosts also crosses the host's single NIC in each direction, shared
// by the host's ranks. A transfer holds every port on its path for
// bytes / bandwidth of its link class.
struct ClusterModel {
  int hosts = 1;
  int ranks_per_host = 1;
  LinkModel intra_host;
  LinkModel inter_host;
  double gamma_s_per_byte = 0;  // reduction time per byte (RecvReduce, Reduce)
  // Emulated clusters (perf/cluster/cluster.sh) run every host on the cores
  // of one machine: `physical_cores` cores shared by all hosts (0 = a core
  // per host, a real cluster). Each end of a transfer between hosts then
  // costs its host `host_cpu_s_per_byte` of CPU (kernel TCP copies), which
  // together with the reductions can outrun the cores (model/shared_cores.h).
  int physical_cores = 0;
  double host_cpu_s_per_byte = 0;

  int nranks() const { return hosts * ranks_per_host; }
  int HostOf(int rank) const { return rank / ranks_per_host; }
};

// A cluster where every rank is on its own host: one link class everywhere.
inline ClusterModel UniformCluster(int nranks, double alpha_s, double bandwidth_Bps, double gamma_s_per_byte) {
  ClusterModel cluster;
  cluster.hosts = nranks;
  cluster.ranks_per_host = 1;
  cluster.inter_host = LinkModel{alpha_s, bandwidth_Bps};
  cluster.intra_host = cluster.inter_host;
  cluster.gamma_s_per_byte = gamma_s_per_byte;
  return cluster;
}

}  // namespace chorus::model
