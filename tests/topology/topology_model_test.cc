// The Chorus-side topology model and its first uses on synthetic machines:
// NIC choice, NUMA grouping, helper thread placement.
#include <gtest/gtest.h>

#include "synthetic_topologies.h"
#include "topology/nic_choice.h"
#include "topology/numa_groups.h"
#include "topology/thread_placement.h"

namespace chorus {
namespace {

using testing::Cpus;
using testing::OneSocket;
using testing::TwoSockets;

HostTopology BoundTo(HostTopology topology, CpuList binding) {
  topology.binding = std::move(binding);
  return topology;
}

TEST(CpuListTest, FormatsRanges) {
  EXPECT_EQ(FormatCpuList({}), "");
  EXPECT_EQ(FormatCpuList({3}), "3");
  EXPECT_EQ(FormatCpuList({0, 1, 2, 3, 8, 10, 11}), "0-3,8,10-11");
}

TEST(CpuListTest, SetRelations) {
  EXPECT_TRUE(IsSubsetOf({1, 2}, Cpus(0, 3)));
  EXPECT_FALSE(IsSubsetOf({1, 4}, Cpus(0, 3)));
  EXPECT_TRUE(Intersects({1, 9}, {9}));
  EXPECT_FALSE(Intersects({1, 2}, {3}));
  EXPECT_EQ(Union({0, 4}, {1, 4, 5}), (CpuList{0, 1, 4, 5}));
}

TEST(HostTopologyTest, BindingAndItsNumaDomains) {
  const HostTopology unbound = TwoSockets();
  EXPECT_FALSE(unbound.bound());
  EXPECT_EQ(unbound.BindingNumaDomains(), (std::vector<int>{0, 1, 2, 3}));
  EXPECT_EQ(unbound.BindingNuma(), -1);

  const HostTopology one_core = BoundTo(TwoSockets(), {9});
  EXPECT_TRUE(one_core.bound());
  EXPECT_EQ(one_core.BindingNuma(), 1);

  const HostTopology spanning = BoundTo(TwoSockets(), {7, 8});
  EXPECT_EQ(spanning.BindingNumaDomains(), (std::vector<int>{0, 1}));
  EXPECT_EQ(spanning.BindingNuma(), -1);

  // One NUMA node: an unbound rank is still on it.
  EXPECT_EQ(OneSocket().BindingNuma(), 0);
  EXPECT_FALSE(OneSocket().bound());
}

TEST(HostTopologyTest, FlatTopology) {
  const HostTopology flat = FlatTopology(3);
  EXPECT_EQ(flat.packages, 1);
  EXPECT_EQ(flat.numa.size(), 1u);
  EXPECT_EQ(flat.cores.size(), 3u);
  EXPECT_EQ(flat.pus, Cpus(0, 2));
  EXPECT_EQ(flat.l3_caches, 0);
  EXPECT_TRUE(flat.devices.empty());
  EXPECT_FALSE(flat.bound());
  EXPECT_EQ(FlatTopology(0).pus, (CpuList{0}));  // never empty
}

TEST(HostTopologyTest, Describes) {
  EXPECT_EQ(DescribeTopology(BoundTo(TwoSockets(), Cpus(16, 23))),
            "topology (synthetic): packages 2, NUMA nodes 4, cores 32, PUs 32, L3 caches 4\n"
            "  NUMA node 0: PUs 0-7, package 0\n"
            "  NUMA node 1: PUs 8-15, package 0\n"
            "  NUMA node 2: PUs 16-23, package 1\n"
            "  NUMA node 3: PUs 24-31, package 1\n"
            "  network eth0: NUMA node 0, PCI 0000:10:00.0\n"
            "  network eth1: NUMA node 2, PCI 0000:90:00.0\n"
            "  rdma mlx5_0: NUMA node 2, PCI 0000:90:00.0\n"
            "  binding: PUs 16-23, NUMA node 2\n");
  EXPECT_EQ(DescribeTopology(FlatTopology(2)),
            "topology (flat): packages 1, NUMA nodes 1, cores 2, PUs 2, L3 caches 0\n"
            "  NUMA node 0: PUs 0-1, package 0\n"
            "  no network, RDMA or GPU devices seen\n"
            "  binding: PUs 0-1 (not bound)\n");
}

TEST(DeviceDistanceTest, SameNumaThenPackageThenElsewhere) {
  const HostTopology t = BoundTo(TwoSockets(), {9});  // NUMA node 1, package 0
  EXPECT_EQ(DistanceToBinding(t, t.devices[0]), DeviceDistance::kSamePackage);
  EXPECT_EQ(DistanceToBinding(t, t.devices[1]), DeviceDistance::kElsewhere);
  EXPECT_EQ(DistanceToBinding(BoundTo(TwoSockets(), {0}), t.devices[0]), DeviceDistance::kSameNuma);
  EXPECT_EQ(DistanceToBinding(t, TopologyDevice{DeviceKind::kNetwork, "veth0", -1, -1, ""}),
            DeviceDistance::kUnknown);
}

TEST(NicChoiceTest, BoundRanksTakeTheNearestNic) {
  const std::vector<std::string> nics = {"eth0", "eth1"};
  for (int local_rank = 0; local_rank < 4; ++local_rank) {
    SCOPED_TRACE(local_rank);
    EXPECT_EQ(ChooseClosestNetworkDevice(BoundTo(TwoSockets(), Cpus(0, 7)), nics, local_rank), 0);   // same NUMA
    EXPECT_EQ(ChooseClosestNetworkDevice(BoundTo(TwoSockets(), {9}), nics, local_rank), 0);          // same package
    EXPECT_EQ(ChooseClosestNetworkDevice(BoundTo(TwoSockets(), Cpus(16, 23)), nics, local_rank), 1);  // same NUMA
    EXPECT_EQ(ChooseClosestNetworkDevice(BoundTo(TwoSockets(), {30}), nics, local_rank), 1);          // same package
    EXPECT_EQ(ChooseClosestNetworkDevice(BoundTo(TwoSockets(), {7, 8}), nics, local_rank), 0);  // touches node 0
  }
}

TEST(NicChoiceTest, TiesSpreadByLocalRank) {
  const std::vector<std::string> nics = {"eth0", "eth1"};
  // Unbound: both NICs share a NUMA node with the binding.
  EXPECT_EQ(ChooseClosestNetworkDevice(TwoSockets(), nics, 0), 0);
  EXPECT_EQ(ChooseClosestNetworkDevice(TwoSockets(), nics, 1), 1);
  EXPECT_EQ(ChooseClosestNetworkDevice(TwoSockets(), nics, 2), 0);
  EXPECT_EQ(ChooseClosestNetworkDevice(TwoSockets(), nics, 5), 1);
  // Bound to the NIC-less nodes of both packages: both are in its packages.
  const HostTopology across = BoundTo(TwoSockets(), {8, 24});
  EXPECT_EQ(ChooseClosestNetworkDevice(across, nics, 0), 0);
  EXPECT_EQ(ChooseClosestNetworkDevice(across, nics, 1), 1);
  // Candidate order decides the order of the ties.
  EXPECT_EQ(ChooseClosestNetworkDevice(TwoSockets(), {"eth1", "eth0"}, 0), 0);
}

TEST(NicChoiceTest, UnknownInterfaces) {
  // The topology places none of them: the caller keeps its own rule.
  EXPECT_EQ(ChooseClosestNetworkDevice(TwoSockets(), {"veth0", "veth1"}, 0), -1);
  EXPECT_EQ(ChooseClosestNetworkDevice(TwoSockets(), {}, 0), -1);
  // A placed NIC, however far, beats one the topology does not know.
  EXPECT_EQ(ChooseClosestNetworkDevice(BoundTo(TwoSockets(), {0}), {"veth0", "eth1"}, 0), 1);
  // RDMA devices are not interfaces.
  EXPECT_EQ(ChooseClosestNetworkDevice(TwoSockets(), {"mlx5_0", "veth0"}, 0), -1);
  // One package, one node, one NIC.
  EXPECT_EQ(ChooseClosestNetworkDevice(BoundTo(OneSocket(), {3}), {"wlan0", "eno1"}, 7), 1);
}

TEST(NumaGroupsTest, SplitsEachHostByNode) {
  EXPECT_EQ(GroupRanksByNuma({0, 0, 0, 0, 1, 1, 1, 1}, {0, 0, 1, 1, 0, 1, 0, 1}),
            (std::vector<int>{0, 0, 1, 1, 2, 3, 2, 3}));
  // Node numbers are per host: node 0 of host 1 is another group.
  EXPECT_EQ(GroupRanksByNuma({0, 1, 0, 1}, {0, 0, 1, 1}), (std::vector<int>{0, 1, 2, 3}));
  // One host, one node.
  EXPECT_EQ(GroupRanksByNuma({0, 0, 0}, {0, 0, 0}), (std::vector<int>{0, 0, 0}));
  EXPECT_TRUE(GroupRanksByNuma({}, {}).empty());
}

TEST(NumaGroupsTest, HostWithAnUnknownNodeStaysWhole) {
  EXPECT_EQ(GroupRanksByNuma({0, 0, 1, 1, 1}, {0, 1, -1, 0, 1}), (std::vector<int>{0, 1, 2, 2, 2}));
  // Missing entries count as unknown.
  EXPECT_EQ(GroupRanksByNuma({0, 0}, {0}), (std::vector<int>{0, 0}));
}

TEST(ThreadPlacementTest, BoundRanksHelpersUseTheirNumaDomains) {
  EXPECT_EQ(HelperThreadCpus(BoundTo(TwoSockets(), {3})), Cpus(0, 7));
  EXPECT_EQ(HelperThreadCpus(BoundTo(TwoSockets(), {7, 8})), Cpus(0, 15));
  EXPECT_EQ(HelperThreadCpus(BoundTo(TwoSockets(), {17, 30})), Cpus(16, 31));
  EXPECT_EQ(HelperThreadCpus(BoundTo(OneSocket(), {0})), Cpus(0, 7));
}

TEST(ThreadPlacementTest, UnboundRanksHelpersStayPut) {
  EXPECT_TRUE(HelperThreadCpus(TwoSockets()).empty());
  EXPECT_TRUE(HelperThreadCpus(OneSocket()).empty());
  EXPECT_TRUE(HelperThreadCpus(FlatTopology(2)).empty());
}

}  // namespace
}  // namespace chorus
