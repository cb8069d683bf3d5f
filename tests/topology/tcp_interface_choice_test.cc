// Which interface the TCP transport listens on when CHORUS_SOCKET_IFNAME is
// unset: the NIC nearest to the rank when there are several, today's rule
// otherwise.
#include <arpa/inet.h>
#include <gtest/gtest.h>

#include <cstring>

#include "synthetic_topologies.h"
#include "transports/tcp/tcp_interface_choice.h"

namespace chorus {
namespace {

NetworkInterface Interface(const char* name, const char* ipv4, bool up = true, bool loopback = false) {
  NetworkInterface item;
  item.name = name;
  item.up = up;
  item.loopback = loopback;
  auto* v4 = reinterpret_cast<sockaddr_in*>(&item.address.storage);
  v4->sin_family = AF_INET;
  inet_pton(AF_INET, ipv4, &v4->sin_addr);
  item.address.length = sizeof(sockaddr_in);
  return item;
}

const std::vector<NetworkInterface> kTwoNics = {Interface("lo", "127.0.0.1", true, true),
                                                Interface("eth0", "10.0.0.2"), Interface("eth1", "10.0.1.2")};

HostTopology BoundTo(CpuList binding) {
  HostTopology t = testing::TwoSockets();
  t.binding = std::move(binding);
  return t;
}

TEST(TcpInterfaceChoiceTest, DefaultCandidates) {
  const std::vector<NetworkInterface> host = {
      Interface("lo", "127.0.0.1", true, true), Interface("docker0", "172.17.0.1"), Interface("eth0", "10.0.0.2"),
      Interface("eth2", "10.0.2.2", false), Interface("eth1", "10.0.1.2"), Interface("eth0", "10.0.0.3")};
  EXPECT_EQ(DefaultInterfaceCandidates(host), (std::vector<std::string>{"eth0", "eth1"}));
}

TEST(TcpInterfaceChoiceTest, NearestNicWhenSeveral) {
  const HostTopology node0 = BoundTo(testing::Cpus(0, 7)), node2 = BoundTo({20});
  EXPECT_EQ(TcpInterfaceSpec("", &node0, 1, kTwoNics), "=eth0");
  EXPECT_EQ(TcpInterfaceSpec("", &node2, 0, kTwoNics), "=eth1");
  const HostTopology unbound = testing::TwoSockets();
  EXPECT_EQ(TcpInterfaceSpec("", &unbound, 0, kTwoNics), "=eth0");
  EXPECT_EQ(TcpInterfaceSpec("", &unbound, 1, kTwoNics), "=eth1");
}

TEST(TcpInterfaceChoiceTest, TodaysRuleOtherwise) {
  const HostTopology node2 = BoundTo({20});
  // Set by the user: untouched.
  EXPECT_EQ(TcpInterfaceSpec("eth0", &node2, 0, kTwoNics), "eth0");
  EXPECT_EQ(TcpInterfaceSpec("^lo", &node2, 0, kTwoNics), "^lo");
  // No topology.
  EXPECT_EQ(TcpInterfaceSpec("", nullptr, 0, kTwoNics), "");
  // One candidate (loopback and a down NIC do not count).
  const std::vector<NetworkInterface> one = {Interface("lo", "127.0.0.1", true, true), Interface("eth0", "10.0.0.2"),
                                             Interface("eth1", "10.0.1.2", false)};
  EXPECT_EQ(TcpInterfaceSpec("", &node2, 0, one), "");
  // Several, none placed by the topology.
  const std::vector<NetworkInterface> virtual_nics = {Interface("veth0", "10.0.0.2"), Interface("veth1", "10.0.1.2")};
  EXPECT_EQ(TcpInterfaceSpec("", &node2, 0, virtual_nics), "");
}

}  // namespace
}  // namespace chorus
