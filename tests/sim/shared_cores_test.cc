// Hosts sharing physical cores (model/shared_cores.h): exact times on crafted
// clusters, and nothing changes with a core per host (the default).
#include "model/shared_cores.h"

#include <gtest/gtest.h>

#include <vector>

#include "model/cost_model.h"
#include "sim/simulator.h"
#include "transfer_step.h"

namespace chorus::sim {

using model::AlgorithmsSupporting;
using model::AnalyticTime;
using model::CostParams;
using model::SharedCoresSeconds;
namespace {

constexpr double kAlpha = 50e-6;
constexpr double kBandwidth = 1.25e8;  // 1 Gbit/s
constexpr double kGamma = 1e-10;
constexpr double kCpu = 2e-9;  // CPU seconds per cross-host byte and end
constexpr size_t kBytes = 1 << 20;

// Every rank sends kBytes to the next and receives kBytes from the previous.
std::vector<Schedule> RingShift(int nranks) {
  std::vector<Schedule> schedules(static_cast<size_t>(nranks));
  for (int rank = 0; rank < nranks; ++rank) {
    schedules[rank].Add(Transfer(StepKind::kSend, (rank + 1) % nranks, kBytes));
    schedules[rank].Add(Transfer(StepKind::kRecv, (rank + nranks - 1) % nranks, kBytes));
  }
  return schedules;
}

ClusterModel Cluster(int hosts, int ranks_per_host, int cores) {
  ClusterModel cluster;
  cluster.hosts = hosts;
  cluster.ranks_per_host = ranks_per_host;
  cluster.inter_host = LinkModel{kAlpha, kBandwidth};
  cluster.intra_host = LinkModel{1e-6, 1e10};
  cluster.gamma_s_per_byte = kGamma;
  cluster.physical_cores = cores;
  cluster.host_cpu_s_per_byte = kCpu;
  return cluster;
}

CollectiveArgs AllReduce(int nranks, size_t floats) {
  CollectiveArgs call;
  call.coll = Collective::kAllReduce;
  call.nranks = nranks;
  call.count = floats;
  call.dtype = chorusFloat32;
  return call;
}

TEST(SharedCoresTest, CountsCrossHostBytesAtBothEndsAndReductions) {
  std::vector<double> work;
  // 8 hosts of one rank: each host sends and receives kBytes.
  ASSERT_TRUE(HostCpuSecondsOfSchedules(RingShift(8), Cluster(8, 1, 2), &work).ok());
  ASSERT_EQ(work.size(), 8u);
  for (double seconds : work) EXPECT_DOUBLE_EQ(seconds, 2 * kBytes * kCpu);
  // 2 hosts of 4: only 3->4 and 7->0 cross, so each host sends one and
  // receives one kBytes across; the rest stays inside and costs nothing.
  ASSERT_TRUE(HostCpuSecondsOfSchedules(RingShift(8), Cluster(2, 4, 1), &work).ok());
  ASSERT_EQ(work.size(), 2u);
  EXPECT_DOUBLE_EQ(work[0], 2 * kBytes * kCpu);
  EXPECT_DOUBLE_EQ(work[1], 2 * kBytes * kCpu);
  // A receive-reduce also costs gamma per byte.
  std::vector<Schedule> reduce(2);
  reduce[0].Add(Transfer(StepKind::kSend, 1, kBytes));
  reduce[1].Add(Transfer(StepKind::kRecvReduce, 0, kBytes));
  ASSERT_TRUE(HostCpuSecondsOfSchedules(reduce, Cluster(2, 1, 1), &work).ok());
  EXPECT_DOUBLE_EQ(work[0], kBytes * kCpu);
  EXPECT_DOUBLE_EQ(work[1], kBytes * (kCpu + kGamma));
  // Bad shapes write nothing.
  work = {42};
  EXPECT_FALSE(HostCpuSecondsOfSchedules(RingShift(8), Cluster(4, 1, 2), &work).ok());
  EXPECT_EQ(work, std::vector<double>{42});
}

TEST(SharedCoresTest, EightHostsOnTwoCoresTakeTheirCpuWorkOverTwo) {
  // Each host: 2 MiB of cross-host bytes = 4.19 ms of CPU; all 8 = 33.6 ms,
  // on 2 cores at least 16.8 ms, against 8.44 ms on the network.
  std::vector<double> work(8, 2 * kBytes * kCpu);
  const double network = kAlpha + kBytes / kBandwidth;
  EXPECT_DOUBLE_EQ(SharedCoresSeconds(network, work, 2), 8 * 2 * kBytes * kCpu / 2);
  // 4 cores: 8.39 ms of CPU per core, under the network's 8.44 ms.
  EXPECT_DOUBLE_EQ(SharedCoresSeconds(network, work, 4), network);
  EXPECT_DOUBLE_EQ(SharedCoresSeconds(network, work, 3), 8 * 2 * kBytes * kCpu / 3);
  // 8 cores (a core per host) or 0 (the default): the network's time.
  EXPECT_DOUBLE_EQ(SharedCoresSeconds(network, work, 8), network);
  EXPECT_DOUBLE_EQ(SharedCoresSeconds(network, work, 0), network);
  // Little CPU work: the cores keep up, the network's time stands.
  std::vector<double> light(8, 1e-4);
  EXPECT_DOUBLE_EQ(SharedCoresSeconds(network, light, 2), network);
  // One busy host runs on one core at a time: its own work bounds the time.
  std::vector<double> one_busy(8, 0.0);
  one_busy[3] = 0.05;
  EXPECT_DOUBLE_EQ(SharedCoresSeconds(network, one_busy, 2), 0.05);
}

TEST(SharedCoresTest, SimulateStretchesTheReplayAndKeepsItWithACorePerHost) {
  const CollectiveArgs call = AllReduce(8, kBytes / 4);  // 1 MiB ring allreduce
  SimOptions options;
  options.chunk_bytes = 0;
  SimResult plain, shared, per_host;
  ClusterModel cluster = Cluster(8, 1, 0);
  ASSERT_TRUE(Simulate(call, Algorithm::kRing, cluster, options, &plain).ok());
  ASSERT_TRUE(SimulateOnSharedCores(call, Algorithm::kRing, cluster, options, &per_host).ok());
  EXPECT_EQ(per_host.time_s, plain.time_s);
  EXPECT_EQ(per_host.busbw_Bps, plain.busbw_Bps);
  // 2 cores: every host sends and receives 2 (p-1)/p n and reduces
  // (p-1)/p n; 8 hosts on 2 cores.
  cluster.physical_cores = 2;
  ASSERT_TRUE(SimulateOnSharedCores(call, Algorithm::kRing, cluster, options, &shared).ok());
  const double n = kBytes, moved = 2 * 7.0 / 8 * n;
  const double per_host_cpu = 2 * moved * kCpu + 7.0 / 8 * n * kGamma;
  ASSERT_GT(8 * per_host_cpu / 2, plain.time_s);  // the case is CPU-bound
  EXPECT_NEAR(shared.time_s, 8 * per_host_cpu / 2, 1e-12);
  EXPECT_NEAR(shared.busbw_Bps * shared.time_s, plain.busbw_Bps * plain.time_s, 1e-6);
  // The closed form sees the same CPU work.
  double analytic = 0;
  ASSERT_TRUE(AnalyticTime(Algorithm::kRing, call, CostParamsFor(cluster, 0), &analytic));
  EXPECT_NEAR(analytic, 8 * per_host_cpu / 2, 1e-12);
}

// The default (physical_cores 0, what the tuner passes) changes no closed
// form, whatever the CPU cost: a real cluster's picks stay as they were.
TEST(SharedCoresTest, ACorePerHostChangesNoClosedForm) {
  for (int p : {2, 4, 8, 6}) {
    const CollectiveArgs call = AllReduce(p, 1 << 18);
    ClusterModel cluster = Cluster(p, 1, 0);
    CostParams plain = CostParamsFor(cluster, 512 * 1024);
    plain.host_cpu_s_per_byte = 0;
    CostParams with_cpu = CostParamsFor(cluster, 512 * 1024);
    ASSERT_EQ(with_cpu.physical_cores, 0);
    ASSERT_EQ(with_cpu.host_cpu_s_per_byte, kCpu);
    for (Algorithm algo : AlgorithmsSupporting(Collective::kAllReduce)) {
      double a = -1, b = -2;
      const bool has_a = AnalyticTime(algo, call, plain, &a);
      const bool has_b = AnalyticTime(algo, call, with_cpu, &b);
      EXPECT_EQ(has_a, has_b) << AlgorithmName(algo);
      if (has_a) {
        EXPECT_EQ(a, b) << AlgorithmName(algo) << " p=" << p;
      }
    }
    CostParams defaults;  // what a tuner builds: no cores field set
    EXPECT_EQ(defaults.physical_cores, 0);
    EXPECT_EQ(defaults.host_cpu_s_per_byte, 0);
  }
}

}  // namespace
}  // namespace chorus::sim
