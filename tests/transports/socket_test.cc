// Socket utilities: SipHash, addresses, interface choice, handshake, and
// the deadline-bounded socket helpers.
#include <arpa/inet.h>
#include <netinet/in.h>

#include <cstring>
#include <thread>

#include <gtest/gtest.h>

#include "base/siphash.h"
#include "transports/socket/handshake.h"
#include "transports/socket/interface.h"
#include "transports/socket/socket.h"

namespace chorus {
namespace {

// Reference vectors of github.com/veorq/SipHash: key 00..0f, message 00..(n-1).
TEST(SipHashTest, Matches64BitReferenceVectors) {
  uint8_t key[16], message[64];
  for (int i = 0; i < 16; ++i) key[i] = static_cast<uint8_t>(i);
  for (int i = 0; i < 64; ++i) message[i] = static_cast<uint8_t>(i);
  EXPECT_EQ(SipHash64(key, message, 0), 0x726fdb47dd0e0e31ULL);
  EXPECT_EQ(SipHash64(key, message, 1), 0x74f839c593dc67fdULL);
  EXPECT_EQ(SipHash64(key, message, 7), 0xab0200f58b01d137ULL);
  EXPECT_EQ(SipHash64(key, message, 8), 0x93f5f5799a932462ULL);
  EXPECT_EQ(SipHash64(key, message, 15), 0xa129ca6149be45e5ULL);
  EXPECT_EQ(SipHash64(key, message, 63), 0x958a324ceb064572ULL);
}

TEST(SipHashTest, Matches128BitReferenceVectors) {
  static const uint8_t kExpected[9][16] = {
      {0xa3, 0x81, 0x7f, 0x04, 0xba, 0x25, 0xa8, 0xe6, 0x6d, 0xf6, 0x72, 0x14, 0xc7, 0x55, 0x02, 0x93},
      {0xda, 0x87, 0xc1, 0xd8, 0x6b, 0x99, 0xaf, 0x44, 0x34, 0x76, 0x59, 0x11, 0x9b, 0x22, 0xfc, 0x45},
      {0x81, 0x77, 0x22, 0x8d, 0xa4, 0xa4, 0x5d, 0xc7, 0xfc, 0xa3, 0x8b, 0xde, 0xf6, 0x0a, 0xff, 0xe4},
      {0x9c, 0x70, 0xb6, 0x0c, 0x52, 0x67, 0xa9, 0x4e, 0x5f, 0x33, 0xb6, 0xb0, 0x29, 0x85, 0xed, 0x51},
      {0xf8, 0x81, 0x64, 0xc1, 0x2d, 0x9c, 0x8f, 0xaf, 0x7d, 0x0f, 0x6e, 0x7c, 0x7b, 0xcd, 0x55, 0x79},
      {0x13, 0x68, 0x87, 0x59, 0x80, 0x77, 0x6f, 0x88, 0x54, 0x52, 0x7a, 0x07, 0x69, 0x0e, 0x96, 0x27},
      {0x14, 0xee, 0xca, 0x33, 0x8b, 0x20, 0x86, 0x13, 0x48, 0x5e, 0xa0, 0x30, 0x8f, 0xd7, 0xa1, 0x5e},
      {0xa1, 0xf1, 0xeb, 0xbe, 0xd8, 0xdb, 0xc1, 0x53, 0xc0, 0xb8, 0x4a, 0xa6, 0x1f, 0xf0, 0x82, 0x39},
      {0x3b, 0x62, 0xa9, 0xba, 0x62, 0x58, 0xf5, 0x61, 0x0f, 0x83, 0xe2, 0x64, 0xf3, 0x14, 0x97, 0xb4},
  };
  uint8_t key[16], message[16];
  for (int i = 0; i < 16; ++i) key[i] = message[i] = static_cast<uint8_t>(i);
  for (int length = 0; length < 9; ++length) {
    uint8_t out[16];
    SipHash128(key, message, length, out);
    EXPECT_EQ(0, std::memcmp(out, kExpected[length], 16)) << "length " << length;
  }
}

TEST(SocketAddressTest, SplitsHostAndPort) {
  std::string host;
  uint16_t port = 0;
  ASSERT_TRUE(SplitHostPort("10.1.2.3:8080", &host, &port).ok());
  EXPECT_EQ(host, "10.1.2.3");
  EXPECT_EQ(port, 8080);
  ASSERT_TRUE(SplitHostPort("[fe80::1:2]:65535", &host, &port).ok());
  EXPECT_EQ(host, "fe80::1:2");
  EXPECT_EQ(port, 65535);
  ASSERT_TRUE(SplitHostPort("node-7.cluster:0", &host, &port).ok());
  EXPECT_EQ(host, "node-7.cluster");
  EXPECT_EQ(port, 0);
}

TEST(SocketAddressTest, RejectsMalformedAddresses) {
  std::string host;
  uint16_t port = 0;
  for (const char* bad :
       {"", "host", ":80", "host:", "host:65536", "host:8x", "::1:80", "[::1]80", "[::1", "[]:80", "host:-1"}) {
    Status status = SplitHostPort(bad, &host, &port);
    EXPECT_EQ(status.code(), chorusInvalidArgument) << "'" << bad << "'";
  }
}

TEST(SocketAddressTest, ParsesAndFormatsRoundTrip) {
  SocketAddress address;
  ASSERT_TRUE(ParseSocketAddress("127.0.0.1:1234", &address).ok());
  EXPECT_EQ(address.family(), AF_INET);
  EXPECT_EQ(address.port(), 1234);
  EXPECT_EQ(address.ToString(), "127.0.0.1:1234");
  EXPECT_EQ(address.HostString(), "127.0.0.1");
  ASSERT_TRUE(ParseSocketAddress("[::1]:99", &address).ok());
  EXPECT_EQ(address.family(), AF_INET6);
  EXPECT_EQ(address.ToString(), "[::1]:99");
  ASSERT_TRUE(ParseSocketAddress("localhost:5", &address).ok());
  EXPECT_EQ(address.port(), 5);
  EXPECT_EQ(ParseSocketAddress("no.such.host.invalid:5", &address).code(), chorusInvalidArgument);
}

NetworkInterface FakeInterface(const char* name, const char* ip, bool up, bool loopback) {
  NetworkInterface item;
  item.name = name;
  item.up = up;
  item.loopback = loopback;
  if (std::strchr(ip, ':') != nullptr) {
    auto* v6 = reinterpret_cast<sockaddr_in6*>(&item.address.storage);
    v6->sin6_family = AF_INET6;
    inet_pton(AF_INET6, ip, &v6->sin6_addr);
    item.address.length = sizeof(sockaddr_in6);
  } else {
    auto* v4 = reinterpret_cast<sockaddr_in*>(&item.address.storage);
    v4->sin_family = AF_INET;
    inet_pton(AF_INET, ip, &v4->sin_addr);
    item.address.length = sizeof(sockaddr_in);
  }
  return item;
}

std::vector<NetworkInterface> FakeHost() {
  return {FakeInterface("lo", "127.0.0.1", true, true),    FakeInterface("docker0", "172.17.0.1", true, false),
          FakeInterface("eth1", "10.0.1.2", false, false), FakeInterface("eth0", "fe80::1", true, false),
          FakeInterface("eth0", "10.0.0.2", true, false),  FakeInterface("eth2", "2001:db8::2", true, false),
          FakeInterface("ib0", "192.168.1.2", true, false)};
}

std::string Choose(const std::string& spec, const std::vector<NetworkInterface>& host) {
  NetworkInterface chosen;
  Status status = ChooseInterface(spec, host, &chosen);
  if (!status.ok()) return "error: " + status.message();
  return chosen.name + " " + chosen.address.HostString();
}

TEST(InterfaceTest, ParsesFilterSyntax) {
  InterfaceFilter filter = InterfaceFilter::Parse("^=eth0,,ib");
  EXPECT_TRUE(filter.exclude);
  EXPECT_TRUE(filter.exact);
  EXPECT_EQ(filter.names, (std::vector<std::string>{"eth0", "ib"}));
  filter = InterfaceFilter::Parse("eth");
  EXPECT_FALSE(filter.exclude);
  EXPECT_FALSE(filter.exact);
  EXPECT_TRUE(filter.Matches("eth12"));
  EXPECT_FALSE(filter.Matches("et"));
  EXPECT_TRUE(InterfaceFilter::Parse("").names.empty());
}

TEST(InterfaceTest, ChoosesLikeNccl) {
  const auto host = FakeHost();
  EXPECT_EQ(Choose("", host), "eth0 10.0.0.2");        // up, IPv4, not loopback or docker
  EXPECT_EQ(Choose("eth", host), "eth0 10.0.0.2");     // eth1 is down
  EXPECT_EQ(Choose("ib,eth", host), "eth0 10.0.0.2");  // first match in host order
  EXPECT_EQ(Choose("=eth0", host), "eth0 10.0.0.2");
  EXPECT_EQ(Choose("^lo,docker,eth", host), "ib0 192.168.1.2");
  EXPECT_EQ(Choose("^=lo", host), "docker0 172.17.0.1");
  EXPECT_EQ(Choose("eth2", host), "eth2 2001:db8::2");  // IPv6 when it is the only match
  EXPECT_EQ(Choose("lo", host), "lo 127.0.0.1");
  EXPECT_EQ(Choose("=eth", host).rfind("error: no network interface matches", 0), 0u);
  EXPECT_EQ(Choose("^eth,docker,lo,ib", host).rfind("error: no network interface matches", 0), 0u);
}

TEST(InterfaceTest, NamedInterfaceThatIsDownIsANetworkFailure) {
  // Its link went down (or lost its carrier): not a bad setting, the host is cut off.
  const auto host = FakeHost();
  NetworkInterface chosen;
  Status status = ChooseInterface("eth1", host, &chosen);
  EXPECT_EQ(status.code(), chorusRemoteError);
  EXPECT_EQ(status.message(),
            "network interface eth1 (10.0.1.2) that CHORUS_SOCKET_IFNAME='eth1' names is down: this host is cut off "
            "(available: lo=127.0.0.1, docker0=172.17.0.1, eth1=10.0.1.2 (down), eth0=fe80::1, eth0=10.0.0.2, "
            "eth2=2001:db8::2, ib0=192.168.1.2)");
  EXPECT_EQ(ChooseInterface("=eth1", host, &chosen).code(), chorusRemoteError);
  // A name no interface has stays a bad setting.
  EXPECT_EQ(ChooseInterface("=eth9", host, &chosen).code(), chorusInvalidArgument);
}

TEST(InterfaceTest, DefaultFallsBackToDockerThenLoopback) {
  auto host = FakeHost();
  EXPECT_EQ(Choose("", {host[0], host[1]}), "docker0 172.17.0.1");
  EXPECT_EQ(Choose("", {host[0], host[2], host[3]}), "lo 127.0.0.1");
  EXPECT_EQ(Choose("", {}).rfind("error:", 0), 0u);
}

TEST(InterfaceTest, RealHostHasLoopback) {
  NetworkInterface chosen;
  ASSERT_TRUE(FindInterface("lo", &chosen).ok());
  EXPECT_EQ(chosen.address.HostString(), "127.0.0.1");
  EXPECT_TRUE(FindInterface("", &chosen).ok());
}

Socket LoopbackListener() {
  SocketAddress address;
  EXPECT_TRUE(ParseSocketAddress("127.0.0.1:0", &address).ok());
  Socket listener;
  EXPECT_TRUE(Socket::Listen(address, &listener).ok());
  return listener;
}

SocketAddress AddressOf(const Socket& listener) {
  SocketAddress address;
  EXPECT_TRUE(listener.LocalAddress(&address).ok());
  return address;
}

struct HandshakeOutcome {
  Status acceptor;
  Status connector;
  Hello hello;
};

HandshakeOutcome RunHandshake(uint8_t acceptor_key_byte, uint8_t connector_key_byte,
                              ConnectionPurpose connector_purpose) {
  Socket listener = LoopbackListener();
  uint8_t acceptor_secret[16], connector_secret[16];
  std::memset(acceptor_secret, acceptor_key_byte, 16);
  std::memset(connector_secret, connector_key_byte, 16);
  HandshakeOutcome outcome;
  std::thread connector([&] {
    Socket socket;
    outcome.connector = Socket::Connect(AddressOf(listener), Deadline::AfterMs(5000), &socket);
    if (!outcome.connector.ok()) return;
    Hello hello;
    hello.purpose = connector_purpose;
    hello.rank = 7;
    hello.lane = 3;
    outcome.connector = ConnectHandshake(socket, connector_secret, hello, Deadline::AfterMs(5000));
  });
  {
    Socket accepted;
    outcome.acceptor = listener.Accept(Deadline::AfterMs(5000), &accepted);
    if (outcome.acceptor.ok()) {
      outcome.acceptor = AcceptHandshake(accepted, acceptor_secret, ConnectionPurpose::kTcpLane,
                                         Deadline::AfterMs(5000), &outcome.hello);
    }
  }  // a rejected connection is closed here, which the connector sees
  connector.join();
  return outcome;
}

TEST(HandshakeTest, AcceptsTheRightSecret) {
  HandshakeOutcome outcome = RunHandshake(0x5a, 0x5a, ConnectionPurpose::kTcpLane);
  ASSERT_TRUE(outcome.acceptor.ok()) << outcome.acceptor.message();
  ASSERT_TRUE(outcome.connector.ok()) << outcome.connector.message();
  EXPECT_EQ(outcome.hello.purpose, ConnectionPurpose::kTcpLane);
  EXPECT_EQ(outcome.hello.rank, 7);
  EXPECT_EQ(outcome.hello.lane, 3);
}

TEST(HandshakeTest, RejectsAWrongSecret) {
  HandshakeOutcome outcome = RunHandshake(0x5a, 0x5b, ConnectionPurpose::kTcpLane);
  EXPECT_EQ(outcome.acceptor.code(), chorusInvalidUsage);
  EXPECT_NE(outcome.acceptor.message().find("failed authentication"), std::string::npos);
  EXPECT_EQ(outcome.connector.code(), chorusRemoteError);
  EXPECT_NE(outcome.connector.message().find("wrong secret"), std::string::npos);
}

TEST(HandshakeTest, RejectsAnotherPurpose) {
  HandshakeOutcome outcome = RunHandshake(1, 1, ConnectionPurpose::kRendezvous);
  EXPECT_EQ(outcome.acceptor.code(), chorusInvalidUsage);
  EXPECT_EQ(outcome.connector.code(), chorusRemoteError);
}

TEST(SocketTest, ConnectRetriesUntilThePeerListens) {
  SocketAddress address;
  {
    Socket probe = LoopbackListener();
    address = AddressOf(probe);
  }  // the port is free again, nobody listens on it for a while
  std::thread late_listener([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(150));
    Socket listener;
    ASSERT_TRUE(Socket::Listen(address, &listener).ok());
    Socket accepted;
    EXPECT_TRUE(listener.Accept(Deadline::AfterMs(5000), &accepted).ok());
  });
  Socket socket;
  Status status = Socket::Connect(address, Deadline::AfterMs(5000), &socket);
  EXPECT_TRUE(status.ok()) << status.message();
  late_listener.join();
}

TEST(SocketTest, ConnectTimesOutWhenNobodyListens) {
  SocketAddress address;
  {
    Socket probe = LoopbackListener();
    address = AddressOf(probe);
  }
  Socket socket;
  Status status = Socket::Connect(address, Deadline::AfterMs(100), &socket);
  EXPECT_EQ(status.code(), chorusTimeout) << status.message();
}

// A peer known to have listened (a shrink's rendezvous root) that refuses
// is gone: one attempt, a remote error at once, no waiting for the deadline.
TEST(SocketTest, ConnectToListenerFailsAtOnceWhenNobodyListens) {
  SocketAddress address;
  {
    Socket probe = LoopbackListener();
    address = AddressOf(probe);
  }
  Socket socket;
  const auto start = std::chrono::steady_clock::now();
  Status status = Socket::ConnectToListener(address, Deadline::AfterMs(5000), &socket);
  EXPECT_EQ(status.code(), chorusRemoteError) << status.message();
  EXPECT_NE(status.message().find("its process is gone"), std::string::npos) << status.message();
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::milliseconds(1000));
  EXPECT_FALSE(socket.valid());
}

TEST(SocketTest, ConnectToListenerConnectsToAListener) {
  Socket listener = LoopbackListener();
  Socket socket, accepted;
  Status status = Socket::ConnectToListener(AddressOf(listener), Deadline::AfterMs(5000), &socket);
  ASSERT_TRUE(status.ok()) << status.message();
  EXPECT_TRUE(listener.Accept(Deadline::AfterMs(5000), &accepted).ok());
}

TEST(SocketTest, RecvReportsEofAndDeadline) {
  Socket listener = LoopbackListener();
  Socket client, server;
  ASSERT_TRUE(Socket::Connect(AddressOf(listener), Deadline::AfterMs(5000), &client).ok());
  ASSERT_TRUE(listener.Accept(Deadline::AfterMs(5000), &server).ok());
  server.set_peer_name("peer 9 (test)");
  char byte = 0;
  EXPECT_EQ(server.RecvAll(&byte, 1, Deadline::AfterMs(50)).code(), chorusTimeout);
  const char payload[3] = {'a', 'b', 'c'};
  ASSERT_TRUE(client.SendAll(payload, 3, Deadline::AfterMs(1000)).ok());
  client.Close();
  char received[3] = {};
  ASSERT_TRUE(server.RecvAll(received, 3, Deadline::AfterMs(1000)).ok());
  EXPECT_EQ(std::string(received, 3), "abc");
  Status eof = server.RecvAll(&byte, 1, Deadline::AfterMs(1000));
  EXPECT_EQ(eof.code(), chorusRemoteError);
  EXPECT_EQ(eof.message(), "peer 9 (test) closed the connection");
}

TEST(SocketTest, FillRandomFillsDistinctBytes) {
  uint8_t a[16] = {}, b[16] = {};
  ASSERT_TRUE(FillRandom(a, sizeof(a)).ok());
  ASSERT_TRUE(FillRandom(b, sizeof(b)).ok());
  EXPECT_NE(0, std::memcmp(a, b, sizeof(a)));
}

}  // namespace
}  // namespace chorus
