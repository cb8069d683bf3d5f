// Discrete-event replay of the schedules of all ranks of one collective on a
// ClusterModel. It follows the execution rules of algorithms/schedule.h:
// steps cut into chunks, prefix dependencies, per-pair FIFO matching of send
// and receive chunks; a send chunk completes when it is delivered.
//
// Every rank has a send port and a receive port, every host a NIC out and a
// NIC in (full duplex). A chunk travels on its pair's ordered stream through
// the sender's send port, the receiver's receive port and, between hosts,
// both NICs; the streams through one port share it max-min fairly
// (FlowNetwork). The chunk is delivered alpha after its last byte leaves.
// Reductions hold the rank's single compute resource for bytes * gamma.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "algorithms/algorithm.h"
#include "base/status.h"
#include "model/cluster_model.h"

namespace chorus::sim {

// The replay runs on the cost model's description of a cluster.
using model::ClusterModel;
using model::LinkModel;
using model::UniformCluster;

struct SimOptions {
  // Chunk size of the executor (512 KiB by default there). 0 simulates whole
  // steps (segment granularity): faster, and no pipelining inside a step.
  size_t chunk_bytes = 512 * 1024;
  // Build the ranks of one host (or rank 0 alone on one host or with one
  // rank per host) and sample ranks further on; when every sample's compact
  // schedule (peers relative to the rank) equals its representative's,
  // assume every rank's does, build no more and replay the quotient: one
  // host's ranks stand for all (exact for such symmetric schedules). Turns
  // ring allreduce at 4096 ranks from 33 M transfers into 8 K; off = build
  // and replay every rank.
  bool reuse_symmetric_schedules = true;
  // Chunks in flight from one rank to one peer (the executor's default).
  int max_inflight_per_peer = 8;
};

struct SimResult {
  double time_s = 0;      // last chunk done on any rank
  double algbw_Bps = 0;   // nccl-tests size / time
  double busbw_Bps = 0;   // algbw * nccl-tests factor
  uint64_t intra_host_bytes = 0;
  uint64_t inter_host_bytes = 0;
  uint64_t max_rank_sent_bytes = 0;      // busiest rank outbound port
  uint64_t max_rank_received_bytes = 0;  // busiest rank inbound port
  uint64_t max_host_nic_bytes = 0;       // busiest host NIC, either direction
  uint64_t steps = 0;                    // over all ranks
  uint64_t transfers = 0;                // chunks sent over all ranks
  size_t distinct_schedules = 0;
  size_t simulated_ranks = 0;            // nranks, or fewer for a symmetric quotient
};

// Simulates `call` (rank ignored; nranks must equal cluster.nranks()) with
// `algo`. Without a call.topology, the cluster's hosts are the topology
// (the hierarchical algorithms follow them). Fails when the algorithm has no builder, a builder fails, or the
// schedules do not match (a send without its receive, a deadlock).
Status Simulate(const CollectiveArgs& call, Algorithm algo, const ClusterModel& cluster, const SimOptions& options,
                SimResult* result);

// Replays hand-made schedules, one per rank (e.g. a gossip exchange that is
// no Algorithm). algbw and busbw stay 0: there is no call to size them.
Status SimulateSchedules(const std::vector<Schedule>& schedules, const ClusterModel& cluster,
                         const SimOptions& options, SimResult* result);

// Simulate(), then stretched by the shared cores (model/shared_cores.h);
// algbw and busbw follow the new time.
Status SimulateOnSharedCores(const CollectiveArgs& call, Algorithm algo, const ClusterModel& cluster,
                             const SimOptions& options, SimResult* result);

}  // namespace chorus::sim
