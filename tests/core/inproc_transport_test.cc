// The in-process test transport must honour transports/transport.h exactly,
// or the executor tests built on it prove nothing.
#include <gtest/gtest.h>

#include <chrono>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "inproc_transport.h"

namespace chorus::testing {
namespace {

using Clock = std::chrono::steady_clock;

int64_t MillisecondsSince(Clock::time_point start) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - start).count();
}

TransferRequest Request(void* buffer, size_t bytes, uint64_t tag) {
  TransferRequest request;
  request.buffer = buffer;
  request.bytes = bytes;
  request.tag = tag;
  return request;
}

// Drives both ranks from this thread until `done` holds (bounded).
template <typename Done>
Status ProgressUntil(InprocFabric& fabric, Done done) {
  for (int round = 0; round < 1000 && !done(); ++round) {
    for (int rank = 0; rank < fabric.nranks(); ++rank) CHORUS_RETURN_IF_ERROR(fabric.transport(rank)->Progress(0));
  }
  return done() ? Status::Ok() : TimeoutError("no progress");
}

TEST(InprocTransportTest, MessagesMatchInPostingOrder) {
  InprocFabric fabric(2);
  std::vector<std::string> payloads = {"first", "second", "third"};
  std::vector<std::string> received(3, std::string(6, '.'));
  std::vector<TransferRequest> sends, recvs;
  for (int i = 0; i < 3; ++i) {
    sends.push_back(Request(payloads[i].data(), 5, 9));
    recvs.push_back(Request(received[i].data(), 5, 9));
  }
  // Receives first on one side, sends first on the other: order is per
  // direction, not by time of posting across ranks.
  for (TransferRequest& recv : recvs) ASSERT_TRUE(fabric.transport(1)->endpoint(0)->PostRecv(&recv).ok());
  for (TransferRequest& send : sends) ASSERT_TRUE(fabric.transport(0)->endpoint(1)->PostSend(&send).ok());
  ASSERT_TRUE(ProgressUntil(fabric, [&] {
                for (int i = 0; i < 3; ++i) {
                  if (!sends[i].done || !recvs[i].done) return false;
                }
                return true;
              }).ok());
  EXPECT_EQ(received[0], "first.");
  EXPECT_EQ(received[1], "secon.");
  EXPECT_EQ(received[2], "third.");
}

TEST(InprocTransportTest, SendIsDoneOnlyOnceReceived) {
  InprocFabric fabric(2);
  char data[4] = {1, 2, 3, 4}, sink[4] = {};
  TransferRequest send = Request(data, 4, 1), recv = Request(sink, 4, 1);
  ASSERT_TRUE(fabric.transport(0)->endpoint(1)->PostSend(&send).ok());
  ASSERT_TRUE(fabric.transport(0)->Progress(0).ok());
  ASSERT_TRUE(fabric.transport(1)->Progress(0).ok());
  EXPECT_FALSE(send.done);
  ASSERT_TRUE(fabric.transport(1)->endpoint(0)->PostRecv(&recv).ok());
  ASSERT_TRUE(ProgressUntil(fabric, [&] { return send.done && recv.done; }).ok());
  EXPECT_EQ(std::memcmp(data, sink, 4), 0);
}

TEST(InprocTransportTest, ZeroByteMessagesMatch) {
  InprocFabric fabric(2);
  TransferRequest send = Request(nullptr, 0, 3), recv = Request(nullptr, 0, 3);
  ASSERT_TRUE(fabric.transport(1)->endpoint(0)->PostSend(&send).ok());
  ASSERT_TRUE(fabric.transport(0)->endpoint(1)->PostRecv(&recv).ok());
  EXPECT_TRUE(ProgressUntil(fabric, [&] { return send.done && recv.done; }).ok());
}

TEST(InprocTransportTest, HeaderMismatchFailsTheReceiverNamingThePeer) {
  for (bool tag_differs : {true, false}) {
    InprocFabric fabric(3);
    char data[16] = {}, sink[16] = {};
    TransferRequest send = Request(data, tag_differs ? 16 : 8, 5);
    TransferRequest recv = Request(sink, 16, tag_differs ? 6 : 5);
    ASSERT_TRUE(fabric.transport(2)->endpoint(1)->PostSend(&send).ok());
    ASSERT_TRUE(fabric.transport(1)->endpoint(2)->PostRecv(&recv).ok());
    Status status = fabric.transport(1)->Progress(0);
    EXPECT_EQ(status.code(), chorusInternalError) << status.message();
    EXPECT_NE(status.message().find("peer 2"), std::string::npos) << status.message();
    EXPECT_FALSE(recv.done);
    // The transport stays failed.
    EXPECT_EQ(fabric.transport(1)->Progress(0).code(), chorusInternalError);
  }
}

TEST(InprocTransportTest, ProgressBlocksAtMostItsTimeout) {
  InprocFabric fabric(2);
  char sink[4];
  TransferRequest recv = Request(sink, 4, 1);
  ASSERT_TRUE(fabric.transport(0)->endpoint(1)->PostRecv(&recv).ok());
  const Clock::time_point start = Clock::now();
  ASSERT_TRUE(fabric.transport(0)->Progress(100).ok());
  const int64_t elapsed = MillisecondsSince(start);
  EXPECT_GE(elapsed, 90);
  EXPECT_LT(elapsed, 1000);
  EXPECT_FALSE(recv.done);
}

TEST(InprocTransportTest, IncomingSendWakesABlockedReceiver) {
  InprocFabric fabric(2);
  char data[4] = {7, 7, 7, 7}, sink[4] = {};
  TransferRequest send = Request(data, 4, 1), recv = Request(sink, 4, 1);
  ASSERT_TRUE(fabric.transport(0)->endpoint(1)->PostRecv(&recv).ok());
  std::thread sender([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(30));
    fabric.transport(1)->endpoint(0)->PostSend(&send).IgnoreError();
  });
  const Clock::time_point start = Clock::now();
  Status status = fabric.transport(0)->Progress(10000);
  const int64_t elapsed = MillisecondsSince(start);
  sender.join();
  ASSERT_TRUE(status.ok()) << status.message();
  EXPECT_TRUE(recv.done);
  EXPECT_LT(elapsed, 2000);
  EXPECT_EQ(sink[0], 7);
}

TEST(InprocTransportTest, WakeupReturnsABlockedProgress) {
  InprocFabric fabric(2);
  std::thread waker([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(30));
    fabric.transport(0)->Wakeup();
  });
  const Clock::time_point start = Clock::now();
  Status status = fabric.transport(0)->Progress(10000);
  const int64_t elapsed = MillisecondsSince(start);
  waker.join();
  EXPECT_TRUE(status.ok()) << status.message();
  EXPECT_LT(elapsed, 2000);
}

TEST(InprocTransportTest, ShutdownFailsPeersPendingRequestsNamingTheRank) {
  InprocFabric fabric(3);
  char sink[4];
  TransferRequest recv = Request(sink, 4, 1);
  ASSERT_TRUE(fabric.transport(0)->endpoint(2)->PostRecv(&recv).ok());
  std::thread killer([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(30));
    fabric.transport(2)->Shutdown();
  });
  const Clock::time_point start = Clock::now();
  Status status = fabric.transport(0)->Progress(10000);
  const int64_t elapsed = MillisecondsSince(start);
  killer.join();
  EXPECT_EQ(status.code(), chorusRemoteError) << status.message();
  EXPECT_NE(status.message().find("peer 2"), std::string::npos) << status.message();
  EXPECT_LT(elapsed, 2000);
}

TEST(InprocTransportTest, ShutdownSparesPeersWithNothingPending) {
  InprocFabric fabric(3);
  fabric.transport(2)->Shutdown();
  fabric.transport(2)->Shutdown();  // idempotent
  EXPECT_TRUE(fabric.transport(0)->Progress(0).ok());
  // New requests to the dead rank fail at once; the rank itself is unusable.
  char data[4] = {};
  TransferRequest send = Request(data, 4, 1);
  Status status = fabric.transport(0)->endpoint(2)->PostSend(&send);
  EXPECT_EQ(status.code(), chorusRemoteError);
  EXPECT_NE(status.message().find("peer 2"), std::string::npos) << status.message();
  EXPECT_EQ(fabric.transport(2)->Progress(0).code(), chorusRemoteError);
}

TEST(InprocTransportTest, EndpointsAndConnect) {
  InprocFabric fabric(3);
  Transport* transport = fabric.transport(1);
  EXPECT_EQ(transport->endpoint(1), nullptr);
  EXPECT_EQ(transport->endpoint(3), nullptr);
  ASSERT_NE(transport->endpoint(2), nullptr);
  EXPECT_EQ(transport->endpoint(2)->peer(), 2);
  EXPECT_TRUE(transport->Connect({"a", "b", "c"}, Deadline::AfterMs(10)).ok());
  EXPECT_EQ(transport->Connect({"a"}, Deadline::AfterMs(10)).code(), chorusInvalidArgument);
}

}  // namespace
}  // namespace chorus::testing
