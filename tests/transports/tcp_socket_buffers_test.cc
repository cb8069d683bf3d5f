// CHORUS_SOCKET_RCVBUF/SNDBUF: fixed socket buffers on every TCP lane (set
// before connect/listen, inherited by accepted sockets), the lane's receive
// watermark kept within them, a 64 MiB allreduce through a communicator with
// them, the default left to autotuning, and bad values refused.
#include <dirent.h>
#include <poll.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/stat.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <functional>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "base/config.h"
#include "chorus/chorus.h"
#include "tests/transports/transport_test_util.h"
#include "transports/tcp/tcp_lane.h"
#include "transports/tcp/tcp_transport.h"
#include "transports/transport_registry.h"

namespace chorus {
namespace {

constexpr int kTimeoutMs = 30000;
constexpr int kFixed = 256 * 1024;  // the size every test sets; getsockopt reports twice it

// Sets an environment variable for one scope (set before threads start).
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const char* value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old;
    if (value != nullptr) {
      setenv(name, value, 1);
    } else {
      unsetenv(name);
    }
  }
  ~ScopedEnv() {
    if (old_) {
      setenv(name_, old_->c_str(), 1);
    } else {
      unsetenv(name_);
    }
  }
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;

 private:
  const char* name_;
  std::optional<std::string> old_;
};

using transport_test::ForEachRank;

// net.ipv4.tcp_rmem's default: what an autotuned socket starts with.
int DefaultReceiveBuffer() {
  std::ifstream file("/proc/sys/net/ipv4/tcp_rmem");
  int low = 0, initial = 0;
  file >> low >> initial;
  return initial;
}

int GetIntOption(int fd, int level, int name) {
  int value = -1;
  socklen_t length = sizeof(value);
  EXPECT_EQ(::getsockopt(fd, level, name, &value, &length), 0);
  return value;
}

// SO_RCVBUF of every connected TCP socket of this process.
std::vector<int> ConnectedTcpReceiveBuffers() {
  std::vector<int> sizes;
  DIR* dir = ::opendir("/proc/self/fd");
  if (dir == nullptr) return sizes;
  while (const dirent* entry = ::readdir(dir)) {
    const int fd = std::atoi(entry->d_name);
    struct stat info;
    if (entry->d_name[0] == '.' || ::fstat(fd, &info) != 0 || !S_ISSOCK(info.st_mode)) continue;
    int domain = 0, type = 0, listening = 1;
    socklen_t length = sizeof(int);
    if (::getsockopt(fd, SOL_SOCKET, SO_DOMAIN, &domain, &length) != 0) continue;
    if (domain != AF_INET && domain != AF_INET6) continue;
    length = sizeof(int);
    if (::getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &length) != 0 || type != SOCK_STREAM) continue;
    length = sizeof(int);
    if (::getsockopt(fd, SOL_SOCKET, SO_ACCEPTCONN, &listening, &length) != 0 || listening) continue;
    sockaddr_storage peer;
    socklen_t peer_length = sizeof(peer);
    if (::getpeername(fd, reinterpret_cast<sockaddr*>(&peer), &peer_length) != 0) continue;
    sizes.push_back(GetIntOption(fd, SOL_SOCKET, SO_RCVBUF));
  }
  ::closedir(dir);
  return sizes;
}

// ---- Parsing ----

TEST(SocketBufferSettingsTest, AcceptsSizesUpToHalfIntMax) {
  ScopedEnv send("CHORUS_SOCKET_SNDBUF", nullptr);
  for (const auto& [text, bytes] : std::vector<std::pair<const char*, int>>{
           {"0", 0}, {"1M", 1 << 20}, {"256k", 256 << 10}, {"65536", 65536}, {"1073741823", 1073741823}}) {
    ScopedEnv receive("CHORUS_SOCKET_RCVBUF", text);
    TcpOptions options;
    ASSERT_TRUE(ReadTcpOptions(TransportVars(), &options).ok()) << text;
    EXPECT_EQ(options.socket_rcvbuf, bytes) << text;
    EXPECT_EQ(options.socket_sndbuf, 0) << text;
  }
  ScopedEnv unset("CHORUS_SOCKET_RCVBUF", nullptr);
  TcpOptions options;
  ASSERT_TRUE(ReadTcpOptions(TransportVars(), &options).ok());
  EXPECT_EQ(options.socket_rcvbuf, 0);
}

TEST(SocketBufferSettingsTest, BadValuesFailCommunicatorCreationNamingTheKey) {
  ScopedEnv ifname("CHORUS_SOCKET_IFNAME", "lo");
  chorusUniqueId id;
  ASSERT_EQ(chorusGetUniqueId(&id), chorusSuccess);
  for (const char* key : {"CHORUS_SOCKET_RCVBUF", "CHORUS_SOCKET_SNDBUF"}) {
    for (const char* bad : {"-1", "abc", "1G", "2147483647", "12Q", ""}) {
      ScopedEnv value(key, bad);
      chorusComm_t comm = reinterpret_cast<chorusComm_t>(0x1234);
      EXPECT_EQ(chorusCommInitRank(&comm, 1, id, 0), chorusInvalidArgument) << key << "=" << bad;
      EXPECT_EQ(comm, nullptr) << key << "=" << bad;  // the API's "no communicator"
      const std::string message = chorusGetLastError(nullptr);
      EXPECT_NE(message.find(key), std::string::npos) << message;
    }
  }
}

// ---- TcpLane ----

TEST(TcpLaneBatchTest, IsAtMostHalfThePayloadAFixedBufferHolds) {
  EXPECT_EQ(MaxReceiveBatch(0), kMaxReceiveBatch);  // autotuned
  EXPECT_EQ(MaxReceiveBatch(2 * (1 << 20)), kMaxReceiveBatch);
  EXPECT_EQ(MaxReceiveBatch(2 * kFixed), static_cast<size_t>(kFixed / 2));
  EXPECT_EQ(MaxReceiveBatch(2 * 64 * 1024), 32u * 1024);
  EXPECT_EQ(MaxReceiveBatch(2), 1u);
}

// A 4 MiB message into a lane whose socket holds 128 KiB of payload: the
// watermark never asks for more than half of that, and every byte arrives.
TEST(TcpLaneBatchTest, ALargeReceiveThroughAFixedBufferWaitsForAtMostHalfOfIt) {
  const SocketBuffers buffers{128 * 1024, 0};
  SocketAddress address;
  ASSERT_TRUE(ParseSocketAddress("127.0.0.1:0", &address).ok());
  Socket listener;
  ASSERT_TRUE(Socket::Listen(address, buffers, &listener).ok());
  SocketAddress bound;
  ASSERT_TRUE(listener.LocalAddress(&bound).ok());
  Socket sender;
  ASSERT_TRUE(Socket::Connect(bound, Deadline::AfterMs(kTimeoutMs), buffers, &sender).ok());
  Socket accepted;
  ASSERT_TRUE(listener.Accept(Deadline::AfterMs(kTimeoutMs), &accepted).ok());
  // Set before connect / inherited from the listener, doubled by the kernel.
  EXPECT_EQ(GetIntOption(sender.fd(), SOL_SOCKET, SO_RCVBUF), 2 * buffers.receive_bytes);
  const int applied = GetIntOption(accepted.fd(), SOL_SOCKET, SO_RCVBUF);
  ASSERT_EQ(applied, 2 * buffers.receive_bytes);
  TcpLane lane(std::move(accepted), "peer 1 (test)", applied);
  ASSERT_EQ(lane.max_receive_batch(), 64u * 1024);

  const size_t bytes = 4 << 20;
  std::vector<uint8_t> payload(bytes), received(bytes, 0);
  for (size_t i = 0; i < bytes; ++i) payload[i] = static_cast<uint8_t>(i * 7 + (i >> 12));
  TransferRequest request = {};
  request.buffer = received.data();
  request.bytes = bytes;
  request.tag = 5;
  lane.PushRecv(&request);
  // The header and a little payload: the rest is awaited in batches of at
  // most half the payload the buffer holds.
  const WireHeader header = {kWireMagic, 0, 5, bytes};
  const size_t first = 10000;
  ASSERT_TRUE(sender.SendAll(&header, sizeof(header), Deadline::AfterMs(kTimeoutMs)).ok());
  ASSERT_TRUE(sender.SendAll(payload.data(), first, Deadline::AfterMs(kTimeoutMs)).ok());
  const Deadline deadline = Deadline::AfterMs(kTimeoutMs);
  while (request.progress < first && !deadline.Expired()) {
    pollfd entry = {lane.fd(), POLLIN, 0};
    if (::poll(&entry, 1, 100) != 1) continue;
    lane.OnEvents(EPOLLIN);
    bool progressed = false;
    ASSERT_TRUE(lane.Progress(&progressed).ok());
  }
  ASSERT_EQ(request.progress, first);
  EXPECT_EQ(GetIntOption(lane.fd(), SOL_SOCKET, SO_RCVLOWAT), 64 * 1024);

  // The rest from another thread, much more than the buffer holds: it all
  // arrives (no wake-up waits for more than can come) and the watermark
  // never exceeds the batch.
  std::thread writer([&] {
    EXPECT_TRUE(sender.SendAll(payload.data() + first, bytes - first, Deadline::AfterMs(kTimeoutMs)).ok());
  });
  int highest_watermark = 0;
  while (!request.done && !deadline.Expired()) {
    pollfd entry = {lane.fd(), POLLIN, 0};
    if (::poll(&entry, 1, 100) != 1) continue;
    lane.OnEvents(EPOLLIN);
    bool progressed = false;
    ASSERT_TRUE(lane.Progress(&progressed).ok());
    highest_watermark = std::max(highest_watermark, GetIntOption(lane.fd(), SOL_SOCKET, SO_RCVLOWAT));
  }
  writer.join();
  ASSERT_TRUE(request.done) << "timed out with " << request.progress << " of " << bytes << " bytes";
  EXPECT_EQ(std::memcmp(received.data(), payload.data(), bytes), 0);
  EXPECT_LE(highest_watermark, 64 * 1024);
  EXPECT_LE(highest_watermark, applied / 2);  // the kernel's own cap (tcp_set_rcvlowat)
}

// ---- TcpTransport ----

std::vector<std::unique_ptr<Transport>> ConnectedPair(int rcvbuf, int sndbuf) {
  std::vector<std::unique_ptr<Transport>> transports(2);
  std::vector<std::string> addresses;
  for (int rank = 0; rank < 2; ++rank) {
    TcpOptions options;
    options.rank = rank;
    options.nranks = 2;
    options.nsocks = 2;
    options.ifname = "lo";
    options.socket_rcvbuf = rcvbuf;
    options.socket_sndbuf = sndbuf;
    for (int i = 0; i < 16; ++i) options.secret[i] = static_cast<uint8_t>(5 * i + 2);
    Status created = CreateTcpTransport(options, &transports[rank]);
    EXPECT_TRUE(created.ok()) << created.message();
    if (!created.ok()) return {};
    addresses.push_back(transports[rank]->LocalAddress());
  }
  std::vector<Status> results(2);
  ForEachRank(2, [&](int rank) { results[rank] = transports[rank]->Connect(addresses, Deadline::AfterMs(kTimeoutMs)); });
  for (const Status& status : results) {
    EXPECT_TRUE(status.ok()) << status.message();
    if (!status.ok()) return {};
  }
  return transports;
}

std::vector<SocketBuffers> LaneBuffers(Transport* transport) {
  return static_cast<TcpTransport*>(transport)->LaneBufferSizes();
}

TEST(TcpTransportBuffersTest, EveryLaneOnBothSidesHasTheSetSizes) {
  auto transports = ConnectedPair(kFixed, kFixed);
  ASSERT_EQ(transports.size(), 2u);
  for (int rank = 0; rank < 2; ++rank) {  // rank 0's lanes were accepted, rank 1's connected
    const std::vector<SocketBuffers> lanes = LaneBuffers(transports[rank].get());
    ASSERT_EQ(lanes.size(), 2u);
    for (const SocketBuffers& lane : lanes) {
      EXPECT_EQ(lane.receive_bytes, 2 * kFixed) << "rank " << rank;
      EXPECT_EQ(lane.send_bytes, 2 * kFixed) << "rank " << rank;
    }
  }

  // 2 x 16 MiB each way (one message per lane) through the bounded buffers.
  const size_t bytes = 16 << 20;
  ForEachRank(2, [&](int rank) {
    const int peer = 1 - rank;
    std::vector<std::vector<uint8_t>> out(2, std::vector<uint8_t>(bytes)), in(2, std::vector<uint8_t>(bytes, 0));
    std::vector<TransferRequest> requests(4);
    for (int k = 0; k < 2; ++k) {
      for (size_t i = 0; i < bytes; ++i) out[k][i] = static_cast<uint8_t>(rank * 101 + k * 7 + i * 13 + (i >> 10));
      requests[2 * k] = {};
      requests[2 * k].buffer = out[k].data();
      requests[2 * k].bytes = bytes;
      requests[2 * k].tag = 10 + k;
      requests[2 * k + 1] = {};
      requests[2 * k + 1].buffer = in[k].data();
      requests[2 * k + 1].bytes = bytes;
      requests[2 * k + 1].tag = 10 + k;
      ASSERT_TRUE(transports[rank]->endpoint(peer)->PostSend(&requests[2 * k]).ok());
      ASSERT_TRUE(transports[rank]->endpoint(peer)->PostRecv(&requests[2 * k + 1]).ok());
    }
    const Deadline deadline = Deadline::AfterMs(kTimeoutMs);
    auto all_done = [&] {
      return std::all_of(requests.begin(), requests.end(), [](const TransferRequest& r) { return r.done; });
    };
    while (!all_done() && !deadline.Expired()) ASSERT_TRUE(transports[rank]->Progress(10).ok());
    ASSERT_TRUE(all_done()) << "rank " << rank << " timed out";
    for (int k = 0; k < 2; ++k) {
      size_t wrong = 0;
      for (size_t i = 0; i < bytes; ++i) {
        wrong += in[k][i] != static_cast<uint8_t>(peer * 101 + k * 7 + i * 13 + (i >> 10));
      }
      EXPECT_EQ(wrong, 0u) << "rank " << rank << " message " << k;
    }
  });
}

TEST(TcpTransportBuffersTest, RejectsSizesOutOfRange) {
  for (const auto& [rcvbuf, sndbuf] : std::vector<std::pair<int, int>>{{-1, 0}, {0, -5}, {kMaxSocketBufferBytes + 1, 0}}) {
    TcpOptions options;
    options.ifname = "lo";
    options.socket_rcvbuf = rcvbuf;
    options.socket_sndbuf = sndbuf;
    std::unique_ptr<Transport> transport;
    const Status status = CreateTcpTransport(options, &transport);
    EXPECT_EQ(status.code(), chorusInvalidArgument) << rcvbuf << " " << sndbuf;
    EXPECT_NE(status.message().find(rcvbuf != 0 ? "CHORUS_SOCKET_RCVBUF" : "CHORUS_SOCKET_SNDBUF"), std::string::npos)
        << status.message();
    EXPECT_EQ(transport, nullptr);
  }
}

TEST(TcpTransportBuffersTest, ByDefaultTheKernelAutotunesEveryLane) {
  auto transports = ConnectedPair(0, 0);
  ASSERT_EQ(transports.size(), 2u);
  for (int rank = 0; rank < 2; ++rank) {
    for (const SocketBuffers& lane : LaneBuffers(transports[rank].get())) {
      // Never set: the socket keeps tcp_rmem's initial size (a set one is
      // reported doubled) and autotuning may grow it from there.
      EXPECT_EQ(lane.receive_bytes, DefaultReceiveBuffer()) << "rank " << rank;
    }
  }
}

// ---- Through a communicator ----

struct CommEnv {
  ScopedEnv transport{"CHORUS_TRANSPORT", "tcp"};
  ScopedEnv ifname{"CHORUS_SOCKET_IFNAME", "lo"};
  ScopedEnv tuner{"CHORUS_TUNER", "static"};
  ScopedEnv timeout{"CHORUS_TIMEOUT_MS", "30000"};
  ScopedEnv nsocks{"CHORUS_NSOCKS", "2"};
};

// Two ranks as threads: init, then body(rank, comm); every wait in the
// library is bounded by CHORUS_TIMEOUT_MS.
void WithTwoRanks(const std::function<void(int, chorusComm_t)>& body) {
  chorusUniqueId id;
  ASSERT_EQ(chorusGetUniqueId(&id), chorusSuccess);
  std::vector<chorusComm_t> comms(2, nullptr);
  std::vector<chorusResult_t> results(2, chorusInternalError);
  ForEachRank(2, [&](int rank) { results[rank] = chorusCommInitRank(&comms[rank], 2, id, rank); });
  for (int rank = 0; rank < 2; ++rank) ASSERT_EQ(results[rank], chorusSuccess) << chorusGetLastError(nullptr);
  ForEachRank(2, [&](int rank) { body(rank, comms[rank]); });
  ForEachRank(2, [&](int rank) { EXPECT_EQ(chorusCommDestroy(comms[rank]), chorusSuccess); });
}

TEST(CommSocketBuffersTest, A64MiBAllReduceIsExactWithFixedReceiveBuffers) {
  CommEnv env;
  ScopedEnv receive("CHORUS_SOCKET_RCVBUF", "256K");
  const size_t count = (64 << 20) / sizeof(float);
  WithTwoRanks([&](int rank, chorusComm_t comm) {
    if (rank == 0) {
      // Both ends of both lanes live in this process: 4 sockets, all fixed.
      const std::vector<int> sizes = ConnectedTcpReceiveBuffers();
      EXPECT_EQ(std::count(sizes.begin(), sizes.end(), 2 * kFixed), 4);
    }
    std::vector<float> send(count), recv(count, -1.0f);
    for (size_t i = 0; i < count; ++i) send[i] = static_cast<float>(i % 4093) + 8192.0f * static_cast<float>(rank);
    ASSERT_EQ(chorusAllReduce(send.data(), recv.data(), count, chorusFloat32, chorusSum, comm, nullptr), chorusSuccess)
        << chorusGetLastError(comm);
    size_t wrong = 0;
    for (size_t i = 0; i < count; ++i) wrong += recv[i] != 2.0f * static_cast<float>(i % 4093) + 8192.0f;
    EXPECT_EQ(wrong, 0u) << "rank " << rank;
  });
}

TEST(CommSocketBuffersTest, DefaultLeavesEveryDataSocketAutotuned) {
  CommEnv env;
  ScopedEnv receive("CHORUS_SOCKET_RCVBUF", nullptr);
  WithTwoRanks([&](int rank, chorusComm_t) {
    if (rank != 0) return;
    const std::vector<int> sizes = ConnectedTcpReceiveBuffers();
    EXPECT_GE(sizes.size(), 4u);
    EXPECT_EQ(std::count(sizes.begin(), sizes.end(), 2 * kFixed), 0);
  });
}

}  // namespace
}  // namespace chorus
