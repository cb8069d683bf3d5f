// hwloc discovery of this machine (checked for consistency: its shape is not
// known in advance), the XML files of tests/topology (checked exactly), and
// CHORUS_TOPO_DUMP_FILE round trips.
#include <gtest/gtest.h>
#include <pthread.h>
#include <sched.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <string>
#include <thread>

#include "synthetic_topologies.h"
#include "topology/discovery.h"
#include "topology/nic_choice.h"
#include "topology/thread_placement.h"

namespace chorus {
namespace {

using testing::Cpus;

const std::string kDir = CHORUS_TOPOLOGY_TEST_DIR;

#define SKIP_WITHOUT_HWLOC() \
  if (!TopologyDiscoveryAvailable()) GTEST_SKIP() << "built without hwloc"

std::string TempPath(const char* name) { return StrCat("/tmp/chorus_topology_test_", getpid(), "_", name); }

bool Exists(const std::string& path) { return access(path.c_str(), F_OK) == 0; }

// Everything but `source` matches.
void ExpectSameMachine(const HostTopology& a, const HostTopology& b) {
  EXPECT_EQ(a.packages, b.packages);
  EXPECT_EQ(a.l3_caches, b.l3_caches);
  ASSERT_EQ(a.numa.size(), b.numa.size());
  for (size_t d = 0; d < a.numa.size(); ++d) {
    EXPECT_EQ(a.numa[d].os_index, b.numa[d].os_index);
    EXPECT_EQ(a.numa[d].package, b.numa[d].package);
    EXPECT_EQ(a.numa[d].cpus, b.numa[d].cpus);
  }
  EXPECT_EQ(a.cores, b.cores);
  EXPECT_EQ(a.pus, b.pus);
  ASSERT_EQ(a.devices.size(), b.devices.size());
  for (size_t i = 0; i < a.devices.size(); ++i) {
    SCOPED_TRACE(a.devices[i].name);
    EXPECT_EQ(a.devices[i].kind, b.devices[i].kind);
    EXPECT_EQ(a.devices[i].name, b.devices[i].name);
    EXPECT_EQ(a.devices[i].numa, b.devices[i].numa);
    EXPECT_EQ(a.devices[i].package, b.devices[i].package);
    EXPECT_EQ(a.devices[i].pci_bus_id, b.devices[i].pci_bus_id);
  }
  EXPECT_EQ(a.binding, b.binding);
}

TEST(TopologyXmlTest, TwoSockets) {
  SKIP_WITHOUT_HWLOC();
  HostTopology loaded;
  ASSERT_TRUE(LoadTopologyXml(kDir + "/two_sockets.xml", &loaded).ok());
  EXPECT_EQ(loaded.source, "xml " + kDir + "/two_sockets.xml");
  ExpectSameMachine(loaded, testing::TwoSockets());
  EXPECT_FALSE(loaded.bound());
}

TEST(TopologyXmlTest, OneSocket) {
  SKIP_WITHOUT_HWLOC();
  HostTopology loaded;
  ASSERT_TRUE(LoadTopologyXml(kDir + "/one_socket.xml", &loaded).ok());
  ExpectSameMachine(loaded, testing::OneSocket());
}

TEST(TopologyXmlTest, NicChoiceOnTheLoadedMachine) {
  SKIP_WITHOUT_HWLOC();
  HostTopology t;
  ASSERT_TRUE(LoadTopologyXml(kDir + "/two_sockets.xml", &t).ok());
  const std::vector<std::string> nics = {"eth0", "eth1"};
  const std::pair<CpuList, int> cases[] = {{Cpus(0, 7), 0}, {{12}, 0}, {{16}, 1}, {Cpus(24, 31), 1}};
  for (const auto& [binding, expected] : cases) {
    t.binding = binding;
    EXPECT_EQ(ChooseClosestNetworkDevice(t, nics, 3), expected) << FormatCpuList(binding);
  }
  t.binding = t.pus;
  EXPECT_EQ(ChooseClosestNetworkDevice(t, nics, 0), 0);
  EXPECT_EQ(ChooseClosestNetworkDevice(t, nics, 1), 1);
}

TEST(TopologyXmlTest, DiscoverLoadsTheFileAndDumpsIt) {
  SKIP_WITHOUT_HWLOC();
  const std::string dump = TempPath("dump.xml");
  TopologyOptions options;
  options.xml_file = kDir + "/two_sockets.xml";
  options.dump_file = dump;
  HostTopology loaded;
  ASSERT_TRUE(DiscoverHostTopology(options, &loaded).ok());
  // The binding is this thread's affinity within the file's PUs (or all).
  EXPECT_TRUE(IsSubsetOf(loaded.binding, loaded.pus));
  EXPECT_FALSE(loaded.binding.empty());
  HostTopology reloaded;
  ASSERT_TRUE(LoadTopologyXml(dump, &reloaded).ok());
  reloaded.binding = loaded.binding;
  ExpectSameMachine(reloaded, loaded);
  std::remove(dump.c_str());
}

TEST(TopologyXmlTest, BadFilesFailClearlyAndWriteNothing) {
  SKIP_WITHOUT_HWLOC();
  const std::string garbage = TempPath("garbage.xml");
  const std::string dump = TempPath("never.xml");
  std::ofstream(garbage) << "<topology> not quite";
  for (const std::string& file : {garbage, TempPath("missing.xml")}) {
    SCOPED_TRACE(file);
    TopologyOptions options;
    options.xml_file = file;
    options.dump_file = dump;
    HostTopology out;
    const Status status = DiscoverHostTopology(options, &out);
    EXPECT_EQ(status.code(), chorusInvalidArgument);
    EXPECT_NE(status.message().find("CHORUS_TOPO_FILE='" + file + "'"), std::string::npos) << status.message();
    EXPECT_FALSE(Exists(dump));
  }
  std::remove(garbage.c_str());
}

TEST(TopologyXmlTest, UnwritableDumpFails) {
  SKIP_WITHOUT_HWLOC();
  TopologyOptions options;
  options.dump_file = "/nonexistent-dir/topology.xml";
  HostTopology out;
  const Status status = DiscoverHostTopology(options, &out);
  EXPECT_EQ(status.code(), chorusInvalidArgument);
  EXPECT_NE(status.message().find("CHORUS_TOPO_DUMP_FILE"), std::string::npos) << status.message();
}

TEST(TopologyDiscoveryTest, ThisMachineIsConsistent) {
  HostTopology t;
  ASSERT_TRUE(DiscoverHostTopology(TopologyOptions{}, &t).ok());
  EXPECT_GT(t.packages, 0);
  EXPECT_GT(t.numa.size(), 0u);
  EXPECT_GT(t.cores.size(), 0u);
  EXPECT_GT(t.pus.size(), 0u);
  EXPECT_GE(t.pus.size(), t.cores.size());
  for (const CpuList& core : t.cores) EXPECT_TRUE(IsSubsetOf(core, t.pus)) << FormatCpuList(core);
  for (const NumaDomain& domain : t.numa) EXPECT_TRUE(IsSubsetOf(domain.cpus, t.pus)) << FormatCpuList(domain.cpus);
  for (const TopologyDevice& device : t.devices) {
    EXPECT_FALSE(device.name.empty());
    EXPECT_LT(device.numa, static_cast<int>(t.numa.size()));
  }
  EXPECT_FALSE(t.binding.empty());
  EXPECT_TRUE(IsSubsetOf(t.binding, t.pus));
  CpuList affinity;
  ASSERT_TRUE(CurrentThreadCpus(&affinity).ok());
  EXPECT_TRUE(IsSubsetOf(t.binding, affinity));
  EXPECT_EQ(t.source, TopologyDiscoveryAvailable() ? "hwloc" : "flat");
}

TEST(TopologyDiscoveryTest, WithoutIoDevices) {
  SKIP_WITHOUT_HWLOC();
  TopologyOptions options;
  options.io_devices = false;
  HostTopology cpus_only, full;
  ASSERT_TRUE(DiscoverHostTopology(options, &cpus_only).ok());
  ASSERT_TRUE(DiscoverHostTopology(TopologyOptions{}, &full).ok());
  EXPECT_TRUE(cpus_only.devices.empty());
  full.devices.clear();
  ExpectSameMachine(cpus_only, full);
  // A file keeps its devices.
  options.xml_file = kDir + "/one_socket.xml";
  ASSERT_TRUE(DiscoverHostTopology(options, &cpus_only).ok());
  EXPECT_EQ(cpus_only.devices.size(), 1u);
}

TEST(TopologyDiscoveryTest, SeesTheCallingThreadsBinding) {
  CpuList affinity;
  ASSERT_TRUE(CurrentThreadCpus(&affinity).ok());
  if (affinity.size() < 2) GTEST_SKIP() << "this process may run on one CPU only";
  HostTopology t;
  Status status;
  std::thread bound([&] {
    status = BindThread(static_cast<unsigned long>(pthread_self()), {affinity.back()});
    if (status.ok()) status = DiscoverHostTopology(TopologyOptions{}, &t);
  });
  bound.join();
  ASSERT_TRUE(status.ok()) << status.message();
  EXPECT_EQ(t.binding, (CpuList{affinity.back()}));
  EXPECT_TRUE(t.bound());
  // Its helpers may use its NUMA domain, which holds its CPU.
  const CpuList helpers = HelperThreadCpus(t);
  EXPECT_TRUE(IsSubsetOf(t.binding, helpers));
  EXPECT_TRUE(IsSubsetOf(helpers, t.pus));
}

}  // namespace
}  // namespace chorus
