// The core's uses of the topology: host stream workers placed near their
// rank, the NUMA node in the peer information, the layout log line.
#include <gtest/gtest.h>

#include <future>

#include "core/host_stream.h"
#include "core/peer_info.h"
#include "core/rank_layout.h"
#include "topology/discovery.h"

namespace chorus {
namespace {

CpuList WorkerCpus(HostStream& stream) {
  CpuList cpus;
  stream.Enqueue([&cpus] { return CurrentThreadCpus(&cpus); });
  EXPECT_TRUE(stream.Synchronize().ok());
  return cpus;
}

TEST(HostStreamPlacementTest, FirstListWins) {
  CpuList affinity;
  ASSERT_TRUE(CurrentThreadCpus(&affinity).ok());
  HostStream stream;
  const CpuList before = WorkerCpus(stream);
  stream.PlaceWorker({});  // nothing to place: no change
  EXPECT_EQ(WorkerCpus(stream), before);
  stream.PlaceWorker({affinity.front()});
  EXPECT_EQ(WorkerCpus(stream), (CpuList{affinity.front()}));
  stream.PlaceWorker({affinity.back()});
  EXPECT_EQ(WorkerCpus(stream), (CpuList{affinity.front()}));
}

TEST(PeerInfoTest, CarriesTheNumaNode) {
  for (int numa : {-1, 0, 3}) {
    PeerInfo info;
    info.host = "h/b/net:[1]";
    info.addresses = {{"tcp", "10.0.0.1:5"}};
    info.numa_node = numa;
    PeerInfo decoded;
    ASSERT_TRUE(PeerInfo::Decode(info.Encode(), &decoded).ok());
    EXPECT_EQ(decoded.numa_node, numa);
    EXPECT_EQ(decoded.host, info.host);
    EXPECT_EQ(*decoded.AddressFor("tcp"), "10.0.0.1:5");
  }
  // A node below -1 or above 2^20 is malformed (tests/core/peer_info_test.cc
  // covers the other malformed blobs).
  for (int numa : {-2, (1 << 20) + 1}) {
    PeerInfo info;
    info.numa_node = numa;
    PeerInfo out;
    EXPECT_FALSE(PeerInfo::Decode(info.Encode(), &out).ok()) << numa;
  }
}

TEST(RankLayoutTest, DescribesHostsAndNodes) {
  EXPECT_EQ(DescribeRankLayout({"a/1/net:[1]", "a/1/net:[1]", "b/2/net:[1]", "a/1/net:[1]", "b/2/net:[1]"},
                               {0, 1, -1, 1, -1}),
            "host a: NUMA 0: 0; NUMA 1: 1,3 | host b: NUMA ?: 2,4");
  EXPECT_EQ(DescribeRankLayout({"solo"}, {0}), "host solo: NUMA 0: 0");
}

TEST(RankLayoutTest, BindingNumaNodeIsTheKernelsNumber) {
  HostTopology t = FlatTopology(4);
  t.numa[0].os_index = 5;
  t.binding = {1};
  EXPECT_EQ(BindingNumaNode(t), 5);
}

}  // namespace
}  // namespace chorus
