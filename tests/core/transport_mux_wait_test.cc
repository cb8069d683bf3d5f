// TransportMux's wait over shared memory and a network transport together:
// ranks 0 and 1 share a "host" (shm between them), rank 2 reaches both over
// TCP, UCX over its tcp (when built with UCX) or ibverbs (with an RDMA
// device: the soft-RoCE stage of ./test.sh), ranks as threads. A wait
// ends as soon as either transport has something, and a request the last
// look before sleeping completes is not slept on.
#include "core/transport_mux.h"

#include <atomic>
#include <chrono>
#include <cstring>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "chorus_build_config.h"
#include "tests/core/inproc_transport.h"
#include "transports/shm/shm_transport.h"
#include "transports/tcp/tcp_transport.h"
#if CHORUS_HAVE_UCX
#include "transports/ucx/ucx_transport.h"
#endif
#if CHORUS_HAVE_IBVERBS
#include "tests/transports/ib_test_util.h"
#endif

namespace chorus {
namespace {

using Clock = std::chrono::steady_clock;
constexpr int kRanks = 3;
constexpr int kConnectMs = 20000;
// Long enough that a wait which slept to its end fails the checks below by
// seconds, whatever the machine's load.
constexpr int kLongWaitMs = 8000;

bool SameHost(int a, int b) { return a < 2 && b < 2; }

// The transport between the "hosts": "tcp", "ucx" or "ibverbs".
class MuxWaitTest : public ::testing::TestWithParam<std::string> {
 protected:
  Status CreateNetwork(const TransportOptions& options, std::unique_ptr<Transport>* transport) {
#if CHORUS_HAVE_UCX
    if (GetParam() == "ucx") {
      UcxOptions ucx;
      static_cast<TransportOptions&>(ucx) = options;
      ucx.tls = "tcp";
      return CreateUcxTransport(ucx, transport);
    }
#endif
#if CHORUS_HAVE_IBVERBS
    if (GetParam() == "ibverbs") {
      IbOptions ib = ib_test::Options(options.rank, options.nranks);
      static_cast<TransportOptions&>(ib) = options;
      return CreateIbTransport(ib, transport);
    }
#endif
    TcpOptions tcp;
    static_cast<TransportOptions&>(tcp) = options;
    tcp.ifname = "lo";
    return CreateTcpTransport(tcp, transport);
  }

  void SetUp() override {
#if !CHORUS_HAVE_UCX
    if (GetParam() == "ucx") GTEST_SKIP() << "Chorus was built without UCX (libucx-dev)";
#endif
#if CHORUS_HAVE_IBVERBS
    if (GetParam() == "ibverbs" && !ib_test::NoDeviceReason().empty()) GTEST_SKIP() << ib_test::NoDeviceReason();
#else
    if (GetParam() == "ibverbs") GTEST_SKIP() << "Chorus was built without libibverbs (libibverbs-dev)";
#endif
    std::vector<std::string> shm_addresses(kRanks), tcp_addresses(kRanks);
    for (int r = 0; r < kRanks; ++r) {
      TransportOptions options;
      options.rank = r;
      options.nranks = kRanks;
      for (int i = 0; i < 16; ++i) options.secret[i] = static_cast<uint8_t>(7 * i + 3);
      if (r < 2) {
        ASSERT_TRUE(CreateShmTransport(options, &shm_[r]).ok());
        shm_addresses[r] = shm_[r]->LocalAddress();
      }
      ASSERT_TRUE(CreateNetwork(options, &tcp_[r]).ok());
      tcp_addresses[r] = tcp_[r]->LocalAddress();
    }
    std::vector<Status> results(kRanks);
    std::vector<std::thread> threads;
    for (int r = 0; r < kRanks; ++r) {
      threads.emplace_back([&, r] {
        std::vector<std::string> shm_reach(kRanks), tcp_reach(kRanks);
        for (int peer = 0; peer < kRanks; ++peer) {
          if (peer == r) continue;
          (SameHost(r, peer) ? shm_reach : tcp_reach)[peer] = (SameHost(r, peer) ? shm_addresses : tcp_addresses)[peer];
        }
        if (shm_[r] != nullptr) results[r] = shm_[r]->Connect(shm_reach, Deadline::AfterMs(kConnectMs));
        if (results[r].ok()) results[r] = tcp_[r]->Connect(tcp_reach, Deadline::AfterMs(kConnectMs));
        if (!results[r].ok()) return;
        std::vector<std::unique_ptr<Transport>> routes;
        if (shm_[r] != nullptr) routes.push_back(std::make_unique<testing::BorrowedTransport>(shm_[r].get()));
        routes.push_back(std::make_unique<testing::BorrowedTransport>(tcp_[r].get()));
        results[r] = TransportMux::Create(std::move(routes), r, kRanks, &mux_[r]);
      });
    }
    for (std::thread& thread : threads) thread.join();
    for (int r = 0; r < kRanks; ++r) ASSERT_TRUE(results[r].ok()) << "rank " << r << ": " << results[r].message();
  }

  void TearDown() override {
    std::vector<std::thread> threads;
    for (int r = 0; r < kRanks; ++r) {
      threads.emplace_back([this, r] {
        mux_[r].reset();
        tcp_[r].reset();
        shm_[r].reset();
      });
    }
    for (std::thread& thread : threads) thread.join();
  }

  // Rank `from` sends `bytes` to `to`, after `delay_ms`, and drives its mux
  // until the send is done.
  std::thread SendLater(int from, int to, std::vector<uint8_t>* data, int delay_ms) {
    return std::thread([this, from, to, data, delay_ms] {
      std::this_thread::sleep_for(std::chrono::milliseconds(delay_ms));
      TransferRequest send;
      send.buffer = data->data();
      send.bytes = data->size();
      send.tag = 7;
      ASSERT_TRUE(mux_[from]->endpoint(to)->PostSend(&send).ok());
      const Deadline deadline = Deadline::AfterMs(kConnectMs);
      while (!send.done && !deadline.Expired()) ASSERT_TRUE(mux_[from]->Progress(10).ok());
      EXPECT_TRUE(send.done);
    });
  }

  std::unique_ptr<Transport> shm_[kRanks], tcp_[kRanks];  // tcp_: the network transport, TCP or UCX
  std::unique_ptr<TransportMux> mux_[kRanks];
};

std::vector<uint8_t> Payload(size_t bytes, uint8_t seed) {
  std::vector<uint8_t> data(bytes);
  for (size_t i = 0; i < bytes; ++i) data[i] = static_cast<uint8_t>(seed + 13 * i);
  return data;
}

// Rank 0 waits with both transports armed; the message comes from `from`.
void ExpectWaitEndsOnMessage(MuxWaitTest* test, TransportMux* mux, int from, std::thread sender,
                             const std::vector<uint8_t>& sent) {
  std::vector<uint8_t> received(sent.size(), 0);
  TransferRequest recv;
  recv.buffer = received.data();
  recv.bytes = received.size();
  recv.tag = 7;
  ASSERT_TRUE(mux->endpoint(from)->PostRecv(&recv).ok());
  const Clock::time_point start = Clock::now();
  int waits = 0;
  while (!recv.done && Clock::now() - start < std::chrono::milliseconds(3 * kLongWaitMs)) {
    ASSERT_TRUE(mux->Progress(kLongWaitMs).ok());
    ++waits;
  }
  const auto elapsed = std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - start).count();
  sender.join();
  ASSERT_TRUE(recv.done);
  EXPECT_EQ(received, sent);
  // The sender starts after 200 ms; a wait that slept to its end would take
  // kLongWaitMs.
  EXPECT_LT(elapsed, kLongWaitMs / 2) << waits << " waits";
  (void)test;
}

TEST_P(MuxWaitTest, ANetworkMessageEndsAWaitArmedOnSharedMemoryToo) {
  std::vector<uint8_t> data = Payload(100000, 1);
  ExpectWaitEndsOnMessage(this, mux_[0].get(), 2, SendLater(2, 0, &data, 200), data);
}

TEST_P(MuxWaitTest, ASharedMemoryMessageEndsAWaitArmedOnTheNetworkToo) {
  std::vector<uint8_t> data = Payload(100000, 2);
  ExpectWaitEndsOnMessage(this, mux_[0].get(), 1, SendLater(1, 0, &data, 200), data);
}

TEST_P(MuxWaitTest, WakeupEndsAWait) {
  std::atomic<bool> returned{false};
  const Clock::time_point start = Clock::now();
  std::thread waiter([&] {
    // Nothing posted: only the Wakeup can end it before kLongWaitMs.
    EXPECT_TRUE(mux_[0]->Progress(kLongWaitMs).ok());
    returned = true;
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  mux_[0]->Wakeup();
  waiter.join();
  EXPECT_TRUE(returned.load());
  EXPECT_LT(Clock::now() - start, std::chrono::milliseconds(kLongWaitMs / 2));
}

TEST_P(MuxWaitTest, ARequestTheLastLookCompletesIsNotSleptOn) {
  // The message reaches rank 0 before it waits (over TCP and UCX whole;
  // verbs needs rank 0 to answer for it first): a wait whose last look
  // completes the receive must return, not sleep for the next event.
  std::vector<uint8_t> data = Payload(64, 3);
  std::thread sender = SendLater(2, 0, &data, 0);
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  std::vector<uint8_t> received(data.size(), 0);
  TransferRequest recv;
  recv.buffer = received.data();
  recv.bytes = received.size();
  recv.tag = 7;
  ASSERT_TRUE(mux_[0]->endpoint(2)->PostRecv(&recv).ok());
  const Clock::time_point start = Clock::now();
  for (int waits = 0; waits < 3 && !recv.done; ++waits) ASSERT_TRUE(mux_[0]->Progress(kLongWaitMs).ok());
  const Clock::duration elapsed = Clock::now() - start;
  sender.join();
  EXPECT_TRUE(recv.done);
  EXPECT_EQ(received, data);
  EXPECT_LT(elapsed, std::chrono::milliseconds(kLongWaitMs / 2));
}

INSTANTIATE_TEST_SUITE_P(Network, MuxWaitTest, ::testing::Values("tcp", "ucx", "ibverbs"),
                         [](const ::testing::TestParamInfo<std::string>& info) { return info.param; });

}  // namespace
}  // namespace chorus
