// The transport registry: lookup, CHORUS_TRANSPORT lists, the choice per
// peer from published addresses and host identities, the check that every
// pair of ranks is reachable, and the transports' own variables.
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>
#include <vector>

#include "base/config.h"
#include "chorus_build_config.h"
#include "transports/tcp/tcp_transport.h"
#include "transports/transport_registry.h"

namespace chorus {
namespace {

// The built-in transports, as CHORUS_TRANSPORT's errors name them.
const std::string kKnownNames = std::string("shm, tcp, cuda_ipc") + (CHORUS_HAVE_UCX ? ", ucx" : "") +
                                (CHORUS_HAVE_IBVERBS ? ", ibverbs (or ib)" : "");

// A rank on `host` publishing an address for each of `transports`.
PeerPublication Rank(const std::string& host, const std::vector<std::string>& transports) {
  PeerPublication peer;
  peer.host = host;
  for (const std::string& name : transports) peer.addresses.push_back({name, name + "@" + host});
  return peer;
}

std::vector<const TransportDescriptor*> Parse(const std::string& text) {
  std::vector<const TransportDescriptor*> order;
  Status status = BuiltinTransports().ParseSelection(text, &order);
  EXPECT_TRUE(status.ok()) << text << ": " << status.message();
  return order;
}

std::vector<std::string> Names(const std::vector<const TransportDescriptor*>& order) {
  std::vector<std::string> names;
  for (const TransportDescriptor* descriptor : order) names.push_back(descriptor->name);
  return names;
}

TEST(TransportRegistryTest, FindsTheBuiltInTransports) {
  const TransportRegistry& registry = BuiltinTransports();
  ASSERT_NE(registry.Find("tcp"), nullptr);
  ASSERT_NE(registry.Find("shm"), nullptr);
  EXPECT_STREQ(registry.Find("tcp")->name, "tcp");
  EXPECT_TRUE(registry.Find("shm")->capabilities.same_host_only);
  EXPECT_FALSE(registry.Find("tcp")->capabilities.same_host_only);
  EXPECT_EQ(registry.Find("ucx") != nullptr, CHORUS_HAVE_UCX != 0);  // built when libucx is found
  EXPECT_EQ(registry.Find("verbs"), nullptr);
  EXPECT_EQ(registry.Find(""), nullptr);
  EXPECT_EQ(registry.KnownNames(), kKnownNames);
}

TEST(TransportRegistryTest, OnlyTcpWithoutAnInterfaceAsksForIoDevices) {
  const TransportRegistry& registry = BuiltinTransports();
  EXPECT_EQ(registry.Find("shm")->uses_io_devices, nullptr);
  ASSERT_NE(registry.Find("tcp")->uses_io_devices, nullptr);
  TransportOptions options;
  options.ifname = "lo";  // a named interface: nothing to choose
  EXPECT_FALSE(registry.Find("tcp")->uses_io_devices(options));
}

TEST(TransportRegistryTest, AutoOrdersByPreference) {
  // ucx (when built) is explicit_only: named, never part of auto. cuda_ipc
  // is an overlay: in auto, created only where a GPU is present.
  EXPECT_EQ(Names(Parse("auto")), (std::vector<std::string>{"cuda_ipc", "shm", "tcp"}));
  EXPECT_TRUE(BuiltinTransports().Find("cuda_ipc")->overlay);
}

TEST(TransportRegistryTest, AutoLeavesExplicitOnlyTransportsOut) {
  TransportDescriptor named_only = *BuiltinTransports().Find("tcp");
  named_only.name = "named";
  named_only.preference = 1;  // would come first in auto
  named_only.explicit_only = true;
  const TransportRegistry registry({*BuiltinTransports().Find("shm"), named_only});
  std::vector<const TransportDescriptor*> order;
  ASSERT_TRUE(registry.ParseSelection("auto", &order).ok());
  EXPECT_EQ(Names(order), (std::vector<std::string>{"shm"}));
  ASSERT_TRUE(registry.ParseSelection("named", &order).ok());
  EXPECT_EQ(Names(order), (std::vector<std::string>{"named"}));
  ASSERT_TRUE(registry.ParseSelection("shm,named", &order).ok());
  EXPECT_EQ(Names(order), (std::vector<std::string>{"shm", "named"}));
}

TEST(TransportRegistryTest, ListsKeepTheirOrder) {
  EXPECT_EQ(Names(Parse("shm,tcp")), (std::vector<std::string>{"shm", "tcp"}));
  EXPECT_EQ(Names(Parse("tcp,shm")), (std::vector<std::string>{"tcp", "shm"}));
  EXPECT_EQ(Names(Parse("tcp")), (std::vector<std::string>{"tcp"}));
  EXPECT_EQ(Names(Parse("shm")), (std::vector<std::string>{"shm"}));
}

TEST(TransportRegistryTest, BadSelectionsNameTheKnownTransports) {
  for (const char* text : {"verbs", "tcp,verbs", "", "tcp,", ",tcp", "tcp,tcp", "auto,tcp", "TCP", "tcp shm"}) {
    std::vector<const TransportDescriptor*> order = {nullptr};
    Status status = BuiltinTransports().ParseSelection(text, &order);
    EXPECT_EQ(status.code(), chorusInvalidArgument) << text;
    EXPECT_NE(status.message().find("CHORUS_TRANSPORT"), std::string::npos) << status.message();
    EXPECT_NE(status.message().find(StrCat("known transports: ", kKnownNames, " (")), std::string::npos)
        << status.message();
    EXPECT_EQ(order.size(), 1u) << text;  // untouched on failure
  }
  std::vector<const TransportDescriptor*> order;
  Status status = BuiltinTransports().ParseSelection("tcp,verbs", &order);
  EXPECT_NE(status.message().find("unknown transport 'verbs'"), std::string::npos) << status.message();
}

TEST(TransportRegistryTest, AutoPicksSharedMemoryOnTheSameHostAndTcpElsewhere) {
  // Ranks 0 and 1 on host A, rank 2 on host B, rank 3 on A without shm
  // (its segment did not fit).
  // Ranks 0 and 1 also have a GPU (cuda_ipc): an overlay is never a route.
  const std::vector<PeerPublication> peers = {Rank("A", {"cuda_ipc", "shm", "tcp"}),
                                              Rank("A", {"cuda_ipc", "shm", "tcp"}), Rank("B", {"shm", "tcp"}),
                                              Rank("A", {"tcp"})};
  const std::vector<const TransportDescriptor*> order = Parse("auto");
  // Index into order: 0 = cuda_ipc, 1 = shm, 2 = tcp, -1 = self.
  EXPECT_EQ(ChooseTransports(order, peers, 0), (std::vector<int>{-1, 1, 2, 2}));
  EXPECT_EQ(ChooseTransports(order, peers, 1), (std::vector<int>{1, -1, 2, 2}));
  EXPECT_EQ(ChooseTransports(order, peers, 2), (std::vector<int>{2, 2, -1, 2}));
  EXPECT_EQ(ChooseTransports(order, peers, 3), (std::vector<int>{2, 2, 2, -1}));
  EXPECT_TRUE(CheckEveryPairReachable(order, peers, "auto").ok());
  // Only an overlay published between two ranks reaches neither.
  const std::vector<PeerPublication> overlaid = {Rank("A", {"cuda_ipc"}), Rank("A", {"cuda_ipc"})};
  EXPECT_FALSE(CheckEveryPairReachable(Parse("auto"), overlaid, "auto").ok());
}

TEST(TransportRegistryTest, AListTakesTheFirstThatReachesEachPeer) {
  const std::vector<PeerPublication> peers = {Rank("A", {"tcp", "shm"}), Rank("A", {"tcp", "shm"}),
                                              Rank("B", {"tcp", "shm"})};
  // tcp first reaches everyone, so shm is never chosen.
  EXPECT_EQ(ChooseTransports(Parse("tcp,shm"), peers, 0), (std::vector<int>{-1, 0, 0}));
  EXPECT_EQ(ChooseTransports(Parse("shm,tcp"), peers, 0), (std::vector<int>{-1, 0, 1}));
}

TEST(TransportRegistryTest, OnlySharedMemoryFailsNamingTheUnreachablePair) {
  const std::vector<PeerPublication> peers = {Rank("A", {"shm"}), Rank("A", {"shm"}), Rank("B", {"shm"}),
                                              Rank("B", {"shm"})};
  const std::vector<const TransportDescriptor*> order = Parse("shm");
  EXPECT_EQ(ChooseTransports(order, peers, 0), (std::vector<int>{-1, 0, -1, -1}));
  Status status = CheckEveryPairReachable(order, peers, "shm");
  EXPECT_EQ(status.code(), chorusInvalidUsage);
  EXPECT_NE(status.message().find("CHORUS_TRANSPORT=shm: no transport reaches rank 2 from rank 0"),
            std::string::npos)
      << status.message();
  EXPECT_NE(status.message().find("host 'B'"), std::string::npos) << status.message();
  EXPECT_NE(status.message().find("shm reaches only ranks on the same host"), std::string::npos)
      << status.message();
  // All on one host: fine.
  const std::vector<PeerPublication> local = {Rank("A", {"shm"}), Rank("A", {"shm"}), Rank("A", {"shm"})};
  EXPECT_TRUE(CheckEveryPairReachable(order, local, "shm").ok());
}

TEST(TransportRegistryTest, ARankWithoutAnyCommonTransportIsNamed) {
  // Rank 1 could not create shm, and shm is all that was asked for.
  const std::vector<PeerPublication> peers = {Rank("A", {"shm"}), Rank("A", {}), Rank("A", {"shm"})};
  Status status = CheckEveryPairReachable(Parse("shm"), peers, "shm");
  EXPECT_EQ(status.code(), chorusInvalidUsage);
  EXPECT_NE(status.message().find("no transport reaches rank 1 from rank 0"), std::string::npos) << status.message();
  EXPECT_NE(status.message().find("offering none"), std::string::npos) << status.message();
}

TEST(TransportRegistryTest, ReachabilityIsSymmetricForTheBuiltIns) {
  const std::vector<PeerPublication> peers = {Rank("A", {"shm", "tcp"}), Rank("B", {"shm", "tcp"}),
                                              Rank("A", {"tcp"}), Rank("A", {"shm"})};
  for (const TransportDescriptor& descriptor : BuiltinTransports().descriptors()) {
    for (const PeerPublication& a : peers) {
      for (const PeerPublication& b : peers) EXPECT_EQ(Reaches(descriptor, a, b), Reaches(descriptor, b, a));
    }
  }
}

TEST(TransportRegistryTest, VariablesAreCapturedAndOverridable) {
  ::setenv("CHORUS_NSOCKS", "3", 1);
  TransportVars vars;
  ASSERT_TRUE(BuiltinTransports().CaptureVars(&vars).ok());
  ::setenv("CHORUS_NSOCKS", "5", 1);  // later changes do not reach a captured set
  TcpOptions options;
  ASSERT_TRUE(ReadTcpOptions(vars, &options).ok());
  EXPECT_EQ(options.nsocks, 3);
  vars.Set("CHORUS_NSOCKS", "7");  // chorusConfig_t.nSocks
  ASSERT_TRUE(ReadTcpOptions(vars, &options).ok());
  EXPECT_EQ(options.nsocks, 7);
  ::setenv("CHORUS_NSOCKS", "0", 1);
  TransportVars bad;
  Status status = BuiltinTransports().CaptureVars(&bad);
  EXPECT_EQ(status.code(), chorusInvalidArgument);
  EXPECT_NE(status.message().find("CHORUS_NSOCKS"), std::string::npos) << status.message();
  ::unsetenv("CHORUS_NSOCKS");
}

}  // namespace
}  // namespace chorus
