// Reachability probes (bootstrap/reachability.h) on loopback: a listening
// rank answers, a closed port is a rank gone, and a listener whose accept
// queue is full (the kernel drops the SYN, as a cut-off host's network
// does) is unreachable once the window has passed; the description names
// every rank as "rank N". A connection completed into the queue of a
// listener that then closes is a rank gone.
#include "bootstrap/reachability.h"

#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <string>
#include <thread>
#include <vector>

namespace chorus {
namespace {

constexpr int kWindowMs = 300;

// A loopback listener with the given backlog, closed with the object.
class RawListener {
 public:
  explicit RawListener(int backlog) {
    fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in address = {};
    address.sin_family = AF_INET;
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    EXPECT_EQ(::bind(fd_, reinterpret_cast<sockaddr*>(&address), sizeof(address)), 0);
    EXPECT_EQ(::listen(fd_, backlog), 0);
    socklen_t length = sizeof(address);
    EXPECT_EQ(::getsockname(fd_, reinterpret_cast<sockaddr*>(&address), &length), 0);
    address_ = "127.0.0.1:" + std::to_string(ntohs(address.sin_port));
  }
  ~RawListener() { Close(); }
  void Close() {
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
  }
  const std::string& address() const { return address_; }
  int fd() const { return fd_; }

 private:
  int fd_ = -1;
  std::string address_;
};

// A connection left in `listener`'s accept queue (never accepted).
int ConnectTo(const std::string& address) {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  sockaddr_in target = {};
  target.sin_family = AF_INET;
  target.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  target.sin_port = htons(static_cast<uint16_t>(std::stoi(address.substr(address.rfind(':') + 1))));
  (void)::connect(fd, reinterpret_cast<sockaddr*>(&target), sizeof(target));
  return fd;
}

TEST(ReachabilityTest, ListeningRanksAnswer) {
  RawListener a(16), b(16);
  Reachability reachability;
  ASSERT_TRUE(ProbeRanks({a.address(), "", b.address()}, {0, 2}, kWindowMs, &reachability).ok());
  EXPECT_EQ(reachability.probed, 2);
  EXPECT_TRUE(reachability.gone.empty());
  EXPECT_TRUE(reachability.unreachable.empty());
  EXPECT_EQ(DescribeReachability(reachability, kWindowMs), "");
}

TEST(ReachabilityTest, AClosedListenerIsARankGone) {
  RawListener live(16), closed(16);
  closed.Close();
  Reachability reachability;
  ASSERT_TRUE(ProbeRanks({live.address(), closed.address()}, {0, 1}, kWindowMs, &reachability).ok());
  EXPECT_EQ(reachability.gone, std::vector<int>{1});
  EXPECT_TRUE(reachability.unreachable.empty());
  EXPECT_EQ(DescribeReachability(reachability, kWindowMs),
            "; rank 1 refuses connections: its process exited or released the communicator");
}

// An exiting process's listener completes a probe's connection into its
// queue, then closes (resetting it): the rank is gone, not alive.
TEST(ReachabilityTest, AListenerThatClosesAfterTheConnectionCompletedIsARankGone) {
  RawListener live(16), exiting(16);
  std::thread exit_after_connect([&] {
    pollfd queued = {exiting.fd(), POLLIN, 0};
    EXPECT_EQ(::poll(&queued, 1, 5000), 1);  // the probe's connection is in the queue
    exiting.Close();
  });
  Reachability reachability;
  const auto start = std::chrono::steady_clock::now();
  ASSERT_TRUE(ProbeRanks({live.address(), exiting.address()}, {0, 1}, kWindowMs, &reachability).ok());
  const auto elapsed_ms =
      std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - start).count();
  exit_after_connect.join();
  EXPECT_EQ(reachability.gone, std::vector<int>{1});
  EXPECT_TRUE(reachability.unreachable.empty());
  EXPECT_LT(elapsed_ms, kWindowMs);  // the reset ends the watch; the live rank's grace ends the batch
}

// A connection that stays quiet in a live listener's queue is watched for
// the grace, not for the whole window.
TEST(ReachabilityTest, QuietConnectionsAnswerAfterTheGrace) {
  RawListener live(16);
  Reachability reachability;
  const auto start = std::chrono::steady_clock::now();
  ASSERT_TRUE(ProbeRanks({live.address()}, {0}, 2000, &reachability).ok());
  const auto elapsed_ms =
      std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - start).count();
  EXPECT_TRUE(reachability.gone.empty());
  EXPECT_TRUE(reachability.unreachable.empty());
  EXPECT_GE(elapsed_ms, kResetGraceMs - 5);
  EXPECT_LT(elapsed_ms, 1000);
}

TEST(ReachabilityTest, AListenerThatDropsConnectionsIsUnreachableAfterTheWindow) {
  RawListener live(16), full(0);
  // Backlog 0 holds one connection; then the kernel drops new SYNs.
  const int queued = ConnectTo(full.address());
  const int dropped = ConnectTo(full.address());
  Reachability reachability;
  const auto start = std::chrono::steady_clock::now();
  ASSERT_TRUE(ProbeRanks({live.address(), "", full.address()}, {0, 2}, kWindowMs, &reachability).ok());
  const auto elapsed_ms =
      std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - start).count();
  EXPECT_EQ(reachability.unreachable, std::vector<int>{2});
  EXPECT_TRUE(reachability.gone.empty());
  EXPECT_GE(elapsed_ms, kWindowMs - 5);
  EXPECT_LT(elapsed_ms, kWindowMs + 2000);
  EXPECT_EQ(DescribeReachability(reachability, kWindowMs),
            "; rank 2 does not answer a connection within 300 ms: its host is down or cut off from this one");
  ::close(queued);
  ::close(dropped);
}

TEST(ReachabilityTest, DescriptionsNameEveryRank) {
  Reachability some;
  some.probed = 4;
  some.unreachable = {3, 1};
  some.gone = {0, 2};
  EXPECT_EQ(DescribeReachability(some, 500),
            "; rank 1 and rank 3 do not answer a connection within 500 ms: their hosts are down or cut off from "
            "this one; rank 0 and rank 2 refuse connections: their processes exited or released the communicator");
  Reachability none_answered;
  none_answered.probed = 3;
  none_answered.unreachable = {0, 1, 3};
  EXPECT_EQ(DescribeReachability(none_answered, 500),
            "; no other rank answered a connection within 500 ms (rank 0, rank 1 and rank 3): this host may be cut off");
  Reachability lone;
  lone.probed = 1;
  lone.unreachable = {1};
  EXPECT_EQ(DescribeReachability(lone, 500),
            "; rank 1 does not answer a connection within 500 ms: its host is down or cut off from this one");
}

TEST(ReachabilityTest, ManyRanksAreProbedInBatches) {
  RawListener live(4096);
  const int nranks = kMaxProbesAtOnce + 44;
  std::vector<std::string> addresses(nranks, live.address());
  std::vector<int> ranks;
  for (int r = 0; r < nranks; ++r) ranks.push_back(r);
  Reachability reachability;
  ASSERT_TRUE(ProbeRanks(addresses, ranks, kWindowMs, &reachability).ok());
  EXPECT_EQ(reachability.probed, nranks);
  EXPECT_TRUE(reachability.gone.empty());
  EXPECT_TRUE(reachability.unreachable.empty());
}

TEST(ReachabilityTest, ARankOutOfRangeIsRefused) {
  Reachability reachability;
  const Status status = ProbeRanks({"127.0.0.1:1"}, {1}, kWindowMs, &reachability);
  EXPECT_EQ(status.code(), chorusInvalidArgument);
  EXPECT_EQ(reachability.probed, 0);
}

}  // namespace
}  // namespace chorus
