// TcpLane's receive low watermark: a large receive waits for its bytes in
// one wake-up once its header is checked; small ones and headers do not.
#include "transports/tcp/tcp_lane.h"

#include <poll.h>
#include <sys/epoll.h>
#include <sys/socket.h>

#include <cstring>
#include <vector>

#include <gtest/gtest.h>

namespace chorus {
namespace {

constexpr int kTimeoutMs = 10000;

struct LanePair {
  Socket sender;
  std::unique_ptr<TcpLane> receiver;
};

LanePair ConnectedLane() {
  LanePair pair;
  SocketAddress address;
  EXPECT_TRUE(ParseSocketAddress("127.0.0.1:0", &address).ok());
  Socket listener;
  EXPECT_TRUE(Socket::Listen(address, &listener).ok());
  SocketAddress bound;
  EXPECT_TRUE(listener.LocalAddress(&bound).ok());
  EXPECT_TRUE(Socket::Connect(bound, Deadline::AfterMs(kTimeoutMs), &pair.sender).ok());
  Socket accepted;
  EXPECT_TRUE(listener.Accept(Deadline::AfterMs(kTimeoutMs), &accepted).ok());
  pair.receiver = std::make_unique<TcpLane>(std::move(accepted), "peer 1 (test)");
  return pair;
}

int LowWatermark(int fd) {
  int value = -1;
  socklen_t length = sizeof(value);
  EXPECT_EQ(::getsockopt(fd, SOL_SOCKET, SO_RCVLOWAT, &value, &length), 0);
  return value;
}

bool PollsReadable(int fd) {
  pollfd entry = {fd, POLLIN, 0};
  return ::poll(&entry, 1, 0) == 1 && (entry.revents & POLLIN);
}

void Send(const Socket& socket, const void* data, size_t bytes) {
  ASSERT_TRUE(socket.SendAll(data, bytes, Deadline::AfterMs(kTimeoutMs)).ok());
}

// Progress until the request is done or the kernel has nothing more.
Status Drain(TcpLane& lane) {
  bool progressed = false;
  return lane.Progress(&progressed);
}

// Waits until the lane's socket reports readable (or kTimeoutMs passes).
bool WaitReadable(int fd) {
  pollfd entry = {fd, POLLIN, 0};
  return ::poll(&entry, 1, kTimeoutMs) == 1;
}

TEST(TcpLaneTest, LargeReceiveWaitsForItsRemainingBytesInOneWakeup) {
  LanePair pair = ConnectedLane();
  TcpLane& lane = *pair.receiver;
  const size_t bytes = 200 * 1024;  // above kMinReceiveBatch, below kMaxReceiveBatch
  std::vector<uint8_t> payload(bytes), received(bytes, 0);
  for (size_t i = 0; i < bytes; ++i) payload[i] = static_cast<uint8_t>(i * 7 + (i >> 8));
  TransferRequest request = {};
  request.buffer = received.data();
  request.bytes = bytes;
  request.tag = 42;
  lane.PushRecv(&request);
  EXPECT_EQ(LowWatermark(lane.fd()), 1);

  // Nothing yet: waiting for the header keeps the default watermark.
  ASSERT_TRUE(Drain(lane).ok());
  EXPECT_EQ(LowWatermark(lane.fd()), 1);

  // The header and the first 10,000 bytes: the rest is awaited at once.
  const WireHeader header = {kWireMagic, 0, 42, bytes};
  Send(pair.sender, &header, sizeof(header));
  Send(pair.sender, payload.data(), 10000);
  ASSERT_TRUE(WaitReadable(lane.fd()));
  lane.OnEvents(EPOLLIN);
  ASSERT_TRUE(Drain(lane).ok());
  EXPECT_FALSE(request.done);
  EXPECT_EQ(LowWatermark(lane.fd()), static_cast<int>(bytes - request.progress));

  // Most of the rest: the socket is not readable until all of it is there.
  const size_t sent = 10000 + 100 * 1024;
  Send(pair.sender, payload.data() + 10000, sent - 10000);
  EXPECT_FALSE(PollsReadable(lane.fd()));
  Send(pair.sender, payload.data() + sent, bytes - sent);
  ASSERT_TRUE(WaitReadable(lane.fd()));
  lane.OnEvents(EPOLLIN);
  ASSERT_TRUE(Drain(lane).ok());
  ASSERT_TRUE(request.done);
  EXPECT_EQ(std::memcmp(received.data(), payload.data(), bytes), 0);

  // The next receive is small: its wait goes back to the default.
  uint32_t small = 0;
  TransferRequest next = {};
  next.buffer = &small;
  next.bytes = sizeof(small);
  next.tag = 43;
  lane.PushRecv(&next);
  ASSERT_TRUE(Drain(lane).ok());
  EXPECT_FALSE(next.done);
  EXPECT_EQ(LowWatermark(lane.fd()), 1);
  const WireHeader small_header = {kWireMagic, 0, 43, sizeof(small)};
  const uint32_t value = 0xfeedbeef;
  Send(pair.sender, &small_header, sizeof(small_header));
  Send(pair.sender, &value, sizeof(value));
  ASSERT_TRUE(WaitReadable(lane.fd()));
  lane.OnEvents(EPOLLIN);
  ASSERT_TRUE(Drain(lane).ok());
  ASSERT_TRUE(next.done);
  EXPECT_EQ(small, value);
}

TEST(TcpLaneTest, WatermarkIsCappedForVeryLargeReceives) {
  LanePair pair = ConnectedLane();
  TcpLane& lane = *pair.receiver;
  const size_t bytes = 4 * 1024 * 1024;
  std::vector<uint8_t> received(bytes);
  TransferRequest request = {};
  request.buffer = received.data();
  request.bytes = bytes;
  request.tag = 7;
  lane.PushRecv(&request);
  const WireHeader header = {kWireMagic, 0, 7, bytes};
  Send(pair.sender, &header, sizeof(header));
  ASSERT_TRUE(WaitReadable(lane.fd()));
  lane.OnEvents(EPOLLIN);
  ASSERT_TRUE(Drain(lane).ok());
  EXPECT_EQ(LowWatermark(lane.fd()), static_cast<int>(kMaxReceiveBatch));
}

TEST(TcpLaneTest, AMismatchedHeaderFailsWithoutWaitingForThePostedSize) {
  LanePair pair = ConnectedLane();
  TcpLane& lane = *pair.receiver;
  std::vector<uint8_t> received(1 << 20);
  TransferRequest request = {};
  request.buffer = received.data();
  request.bytes = received.size();
  request.tag = 9;
  lane.PushRecv(&request);
  const WireHeader header = {kWireMagic, 0, 9, 100};  // the sender meant 100 bytes
  Send(pair.sender, &header, sizeof(header));
  ASSERT_TRUE(WaitReadable(lane.fd()));
  lane.OnEvents(EPOLLIN);
  const Status status = Drain(lane);
  EXPECT_EQ(status.code(), chorusInternalError);
  EXPECT_NE(status.message().find("message mismatch with peer 1 (test)"), std::string::npos) << status.message();
  EXPECT_EQ(LowWatermark(lane.fd()), 1);
}

}  // namespace
}  // namespace chorus
