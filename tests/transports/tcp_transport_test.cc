// TcpTransport with ranks as threads over loopback.
#include "transports/tcp/tcp_transport.h"

#include <atomic>
#include <cstring>
#include <functional>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "tests/transports/intruders.h"
#include "tests/transports/transport_test_util.h"
#include "transports/socket/handshake.h"

namespace chorus {
namespace {

using transport_test::ForEachRank;
using transport_test::kTestTimeoutMs;
using transport_test::Pattern;
using transport_test::WaitAll;

TcpOptions Options(int rank, int nranks, int nsocks) {
  TcpOptions options;
  options.rank = rank;
  options.nranks = nranks;
  options.nsocks = nsocks;
  options.ifname = "lo";
  for (int i = 0; i < 16; ++i) options.secret[i] = static_cast<uint8_t>(3 * i + 1);
  return options;
}

// Creates and connects `nranks` transports, one thread per rank.
std::vector<std::unique_ptr<Transport>> ConnectedMesh(int nranks, int nsocks) {
  return transport_test::ConnectedMesh(nranks, [nranks, nsocks](int rank, std::unique_ptr<Transport>* transport) {
    return CreateTcpTransport(Options(rank, nranks, nsocks), transport);
  });
}

// Every rank sends every message size to every other rank, all in flight at
// once, and checks every byte it receives.
void ExchangeAllToAll(int nranks, int nsocks, const std::vector<size_t>& sizes) {
  auto transports = ConnectedMesh(nranks, nsocks);
  ASSERT_EQ(transports.size(), static_cast<size_t>(nranks));
  ForEachRank(nranks, [&](int rank) {
    std::vector<std::vector<uint8_t>> send_buffers, recv_buffers;
    std::vector<TransferRequest> requests;
    requests.reserve(2 * nranks * sizes.size());
    std::vector<TransferRequest*> pending;
    for (int peer = 0; peer < nranks; ++peer) {
      if (peer == rank) continue;
      for (size_t k = 0; k < sizes.size(); ++k) {
        std::vector<uint8_t> out(sizes[k]);
        for (size_t i = 0; i < out.size(); ++i) out[i] = Pattern(rank, peer, i + k);
        send_buffers.push_back(std::move(out));
        recv_buffers.emplace_back(sizes[k], 0xee);
        TransferRequest& send = requests.emplace_back();
        send.buffer = send_buffers.back().data();
        send.bytes = sizes[k];
        send.tag = 100 + k;
        TransferRequest& recv = requests.emplace_back();
        recv.buffer = recv_buffers.back().data();
        recv.bytes = sizes[k];
        recv.tag = 100 + k;
        ASSERT_TRUE(transports[rank]->endpoint(peer)->PostSend(&send).ok());
        ASSERT_TRUE(transports[rank]->endpoint(peer)->PostRecv(&recv).ok());
        pending.push_back(&send);
        pending.push_back(&recv);
      }
    }
    Status status = WaitAll(transports[rank].get(), pending);
    ASSERT_TRUE(status.ok()) << "rank " << rank << ": " << status.message();
    size_t index = 0;
    for (int peer = 0; peer < nranks; ++peer) {
      if (peer == rank) continue;
      for (size_t k = 0; k < sizes.size(); ++k, ++index) {
        const std::vector<uint8_t>& in = recv_buffers[index];
        size_t wrong = 0;
        for (size_t i = 0; i < in.size(); ++i) wrong += in[i] != Pattern(peer, rank, i + k);
        EXPECT_EQ(wrong, 0u) << "rank " << rank << " from " << peer << " size " << in.size();
      }
    }
  });
}

struct MeshShape {
  int nranks;
  int nsocks;
};

class TcpExchangeTest : public ::testing::TestWithParam<MeshShape> {};

TEST_P(TcpExchangeTest, SmallAndMediumMessagesArriveIntact) {
  ExchangeAllToAll(GetParam().nranks, GetParam().nsocks, {0, 1, 1 << 20, 0, 3, 4096});
}

INSTANTIATE_TEST_SUITE_P(Shapes, TcpExchangeTest,
                         ::testing::Values(MeshShape{2, 1}, MeshShape{2, 4}, MeshShape{3, 2}, MeshShape{4, 1},
                                           MeshShape{4, 4}),
                         [](const auto& info) {
                           return StrCat(info.param.nranks, "ranks_", info.param.nsocks, "socks");
                         });

TEST(TcpTransportTest, LargeMessagesArriveIntact) {
  ExchangeAllToAll(2, 1, {64 << 20});
  ExchangeAllToAll(2, 4, {64 << 20});
}

TEST(TcpTransportTest, ManySmallMessagesKeepTheirOrder) {
  constexpr int kMessages = 20000;
  auto transports = ConnectedMesh(2, 4);
  ASSERT_EQ(transports.size(), 2u);
  ForEachRank(2, [&](int rank) {
    std::vector<uint64_t> values(kMessages);
    std::vector<TransferRequest> requests(kMessages);
    std::vector<TransferRequest*> pending;
    Endpoint* peer = transports[rank]->endpoint(1 - rank);
    for (int i = 0; i < kMessages; ++i) {
      values[i] = rank == 0 ? 1000000 + i : 0;
      requests[i].buffer = &values[i];
      requests[i].bytes = sizeof(uint64_t);
      requests[i].tag = i;
      ASSERT_TRUE((rank == 0 ? peer->PostSend(&requests[i]) : peer->PostRecv(&requests[i])).ok());
      pending.push_back(&requests[i]);
    }
    Status status = WaitAll(transports[rank].get(), pending);
    ASSERT_TRUE(status.ok()) << status.message();
    if (rank == 1) {
      for (int i = 0; i < kMessages; ++i) ASSERT_EQ(values[i], 1000000u + i) << i;
    }
  });
}

// Rank 0 sends (tag 5, 8 bytes); rank 1 expects something else.
Status MismatchSeenByReceiver(uint64_t recv_tag, size_t recv_bytes) {
  auto transports = ConnectedMesh(2, 2);
  if (transports.size() != 2) return InternalError("mesh failed");
  uint64_t out = 42, in = 0;
  TransferRequest send;
  send.buffer = &out;
  send.bytes = 8;
  send.tag = 5;
  TransferRequest recv;
  recv.buffer = &in;
  recv.bytes = recv_bytes;
  recv.tag = recv_tag;
  EXPECT_TRUE(transports[0]->endpoint(1)->PostSend(&send).ok());
  EXPECT_TRUE(transports[1]->endpoint(0)->PostRecv(&recv).ok());
  EXPECT_TRUE(WaitAll(transports[0].get(), {&send}).ok());
  Status status = WaitAll(transports[1].get(), {&recv}, 5000);
  EXPECT_EQ(in, 0u);  // the payload is not read after a bad header
  // After an error the transport fails fast.
  EXPECT_EQ(transports[1]->Progress(0).code(), status.code());
  EXPECT_EQ(transports[1]->endpoint(0)->PostRecv(&recv).code(), status.code());
  return status;
}

TEST(TcpTransportTest, TagMismatchIsAnInternalErrorNamingThePeer) {
  Status status = MismatchSeenByReceiver(6, 8);
  EXPECT_EQ(status.code(), chorusInternalError);
  EXPECT_NE(status.message().find("message mismatch with peer 0 (127.0.0.1:"), std::string::npos) << status.message();
  EXPECT_NE(status.message().find("expected tag 6 with 8 bytes, received tag 5 with 8 bytes"), std::string::npos)
      << status.message();
}

TEST(TcpTransportTest, LengthMismatchIsAnInternalError) {
  Status status = MismatchSeenByReceiver(5, 16);
  EXPECT_EQ(status.code(), chorusInternalError);
  EXPECT_NE(status.message().find("expected tag 5 with 16 bytes, received tag 5 with 8 bytes"), std::string::npos)
      << status.message();
}

TEST(TcpTransportTest, PeerShutdownFailsAPendingRecvQuickly) {
  auto transports = ConnectedMesh(3, 2);
  ASSERT_EQ(transports.size(), 3u);
  uint64_t in = 0;
  TransferRequest recv;
  recv.buffer = &in;
  recv.bytes = sizeof(in);
  ASSERT_TRUE(transports[1]->endpoint(2)->PostRecv(&recv).ok());
  ASSERT_TRUE(transports[1]->Progress(0).ok());
  const auto start = std::chrono::steady_clock::now();
  transports[2]->Shutdown();
  Status status = WaitAll(transports[1].get(), {&recv}, 1000);
  const auto elapsed = std::chrono::steady_clock::now() - start;
  EXPECT_EQ(status.code(), chorusRemoteError);
  EXPECT_NE(status.message().find("peer 2 (127.0.0.1:"), std::string::npos) << status.message();
  EXPECT_NE(status.message().find("closed the connection"), std::string::npos) << status.message();
  EXPECT_LT(elapsed, std::chrono::seconds(1));
  EXPECT_EQ(transports[2]->Progress(0).code(), chorusInvalidUsage);  // shut down locally
}

TEST(TcpTransportTest, IdlePeerExitIsNotAnErrorUntilSomethingIsPosted) {
  auto transports = ConnectedMesh(2, 2);
  ASSERT_EQ(transports.size(), 2u);
  transports[0].reset();  // closes its sockets
  for (int i = 0; i < 5; ++i) ASSERT_TRUE(transports[1]->Progress(20).ok());
  uint64_t out = 1;
  TransferRequest send;
  send.buffer = &out;
  send.bytes = sizeof(out);
  ASSERT_TRUE(transports[1]->endpoint(0)->PostSend(&send).ok());
  Status status = WaitAll(transports[1].get(), {&send}, 1000);
  EXPECT_EQ(status.code(), chorusRemoteError) << status.message();
  EXPECT_NE(status.message().find("peer 0"), std::string::npos) << status.message();
}

// A close notice arrives where the waiting rank expected a message header;
// a rank that waits only for another peer learns it from the hang-up, and
// passes it on to a rank that was idle.
TEST(TcpTransportTest, CloseNoticeReachesWaitingAndIdlePeers) {
  auto transports = ConnectedMesh(3, 2);
  ASSERT_EQ(transports.size(), 3u);
  uint64_t in = 0;
  TransferRequest recv;
  recv.buffer = &in;
  recv.bytes = sizeof(in);
  ASSERT_TRUE(transports[0]->endpoint(2)->PostRecv(&recv).ok());  // waits for rank 2, not rank 1
  ASSERT_TRUE(transports[0]->Progress(0).ok());
  CloseNotice notice;
  notice.origin = 1;
  notice.reason = 7;
  transports[1]->ShutdownWithNotice(notice);
  Status status = WaitAll(transports[0].get(), {&recv}, 5000);
  EXPECT_EQ(status.code(), chorusRemoteError) << status.message();
  EXPECT_NE(status.message().find("rank 1"), std::string::npos) << status.message();
  CloseNotice received;
  ASSERT_TRUE(transports[0]->ReceivedNotice(&received));
  EXPECT_EQ(received.origin, 1);
  EXPECT_EQ(received.reason, 7u);
  // Rank 2 posted nothing; rank 0's failure passed the notice on to it.
  const Deadline deadline = Deadline::AfterMs(5000);
  while (transports[2]->Progress(10).ok() && !deadline.Expired()) {
  }
  ASSERT_TRUE(transports[2]->ReceivedNotice(&received));
  EXPECT_EQ(received.origin, 1);
  EXPECT_EQ(received.reason, 7u);
}

// A notice behind messages the waiting rank has not read yet (it waits for
// another peer) is found by looking past them (within the receive window),
// across more than one scratch slice, without consuming them.
TEST(TcpTransportTest, NoticeBehindUnreadMessagesIsFound) {
  auto transports = ConnectedMesh(3, 1);
  ASSERT_EQ(transports.size(), 3u);
  std::vector<std::vector<uint8_t>> payloads = {std::vector<uint8_t>(1000, 1), std::vector<uint8_t>(70000, 2),
                                                std::vector<uint8_t>(8, 3)};
  std::vector<TransferRequest> sends(payloads.size());
  std::vector<TransferRequest*> pointers;
  for (size_t i = 0; i < payloads.size(); ++i) {
    sends[i].buffer = payloads[i].data();
    sends[i].bytes = payloads[i].size();
    sends[i].tag = i;
    ASSERT_TRUE(transports[1]->endpoint(0)->PostSend(&sends[i]).ok());
    pointers.push_back(&sends[i]);
  }
  ASSERT_TRUE(WaitAll(transports[1].get(), pointers, 5000).ok());  // in rank 0's socket, unread
  uint64_t in = 0;
  TransferRequest recv;
  recv.buffer = &in;
  recv.bytes = sizeof(in);
  ASSERT_TRUE(transports[0]->endpoint(2)->PostRecv(&recv).ok());  // waits for rank 2 only
  CloseNotice notice;
  notice.origin = 1;
  notice.reason = 11;
  transports[1]->ShutdownWithNotice(notice);
  Status status = WaitAll(transports[0].get(), {&recv}, 5000);
  EXPECT_EQ(status.code(), chorusRemoteError) << status.message();
  CloseNotice received;
  ASSERT_TRUE(transports[0]->ReceivedNotice(&received));
  EXPECT_EQ(received.origin, 1);
  EXPECT_EQ(received.reason, 11u);
}

TEST(TcpTransportTest, NoticeIsReadInPlaceOfAHeader) {
  auto transports = ConnectedMesh(2, 1);
  ASSERT_EQ(transports.size(), 2u);
  CloseNotice notice;
  notice.origin = 0;
  notice.reason = 9;
  transports[0]->ShutdownWithNotice(notice);
  CloseNotice received;
  EXPECT_FALSE(transports[1]->ReceivedNotice(&received));  // nothing read yet
  uint64_t in = 0;
  TransferRequest recv;
  recv.buffer = &in;
  recv.bytes = sizeof(in);
  ASSERT_TRUE(transports[1]->endpoint(0)->PostRecv(&recv).ok());
  Status status = WaitAll(transports[1].get(), {&recv}, 5000);
  EXPECT_EQ(status.code(), chorusRemoteError) << status.message();
  ASSERT_TRUE(transports[1]->ReceivedNotice(&received));
  EXPECT_EQ(received.origin, 0);
  EXPECT_EQ(received.reason, 9u);
  EXPECT_FALSE(transports[0]->ReceivedNotice(&received));  // the sender's own is not "received"
}

TEST(TcpTransportTest, ConnectDeadlineGivesTimeout) {
  TcpOptions options = Options(0, 2, 2);
  std::unique_ptr<Transport> lonely;
  ASSERT_TRUE(CreateTcpTransport(options, &lonely).ok());
  std::unique_ptr<Transport> silent;  // rank 1 exists but never connects
  ASSERT_TRUE(CreateTcpTransport(Options(1, 2, 2), &silent).ok());
  const auto start = std::chrono::steady_clock::now();
  Status status = lonely->Connect({lonely->LocalAddress(), silent->LocalAddress()}, Deadline::AfterMs(200));
  EXPECT_EQ(status.code(), chorusTimeout);
  EXPECT_NE(status.message().find("rank 1 lane 0, rank 1 lane 1"), std::string::npos) << status.message();
  // Rank 1 connects down to rank 0, which never accepts; it times out too.
  status = silent->Connect({lonely->LocalAddress(), silent->LocalAddress()}, Deadline::AfterMs(200));
  EXPECT_EQ(status.code(), chorusTimeout) << status.message();
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(2));
}

// A peer's address comes from the rendezvous, so it listened before: once
// its listener refuses (its process died, or it gave up), the ranks waiting
// for it fail at once naming it, instead of waiting out a long deadline.
TEST(TcpTransportTest, ConnectingToAPeerThatIsGoneFailsAtOnce) {
  std::unique_ptr<Transport> gone, rank1;
  ASSERT_TRUE(CreateTcpTransport(Options(0, 2, 2), &gone).ok());
  ASSERT_TRUE(CreateTcpTransport(Options(1, 2, 2), &rank1).ok());
  const std::vector<std::string> addresses = {gone->LocalAddress(), rank1->LocalAddress()};
  gone.reset();
  const auto start = std::chrono::steady_clock::now();
  Status status = rank1->Connect(addresses, Deadline::AfterMs(60000));
  EXPECT_EQ(status.code(), chorusRemoteError) << status.message();
  EXPECT_NE(status.message().find("peer 0"), std::string::npos) << status.message();
  EXPECT_NE(status.message().find("its process is gone"), std::string::npos) << status.message();
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(10));
}

TEST(TcpTransportTest, WaitingForAPeerThatIsGoneFailsSoon) {
  std::unique_ptr<Transport> rank0, gone;
  ASSERT_TRUE(CreateTcpTransport(Options(0, 2, 2), &rank0).ok());
  ASSERT_TRUE(CreateTcpTransport(Options(1, 2, 2), &gone).ok());
  const std::vector<std::string> addresses = {rank0->LocalAddress(), gone->LocalAddress()};
  gone.reset();
  const auto start = std::chrono::steady_clock::now();
  Status status = rank0->Connect(addresses, Deadline::AfterMs(60000));
  EXPECT_EQ(status.code(), chorusRemoteError) << status.message();
  EXPECT_NE(status.message().find("waited for peer 1"), std::string::npos) << status.message();
  EXPECT_NE(status.message().find("which is gone"), std::string::npos) << status.message();
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(10));
}

// A peer that is merely late is probed (it listens) and still connects.
TEST(TcpTransportTest, ALatePeerIsProbedAndStillConnects) {
  std::vector<std::unique_ptr<Transport>> transports(3);
  std::vector<std::string> addresses;
  for (int rank = 0; rank < 3; ++rank) {
    ASSERT_TRUE(CreateTcpTransport(Options(rank, 3, 2), &transports[rank]).ok());
    addresses.push_back(transports[rank]->LocalAddress());
  }
  std::vector<Status> results(3);
  ForEachRank(3, [&](int rank) {
    if (rank == 2) std::this_thread::sleep_for(std::chrono::milliseconds(1500));
    results[rank] = transports[rank]->Connect(addresses, Deadline::AfterMs(kTestTimeoutMs));
  });
  for (int rank = 0; rank < 3; ++rank) EXPECT_TRUE(results[rank].ok()) << rank << ": " << results[rank].message();
}

TEST(TcpTransportTest, UnauthenticatedConnectionIsDroppedWithoutBlockingOthers) {
  std::vector<std::unique_ptr<Transport>> transports(2);
  ASSERT_TRUE(CreateTcpTransport(Options(0, 2, 1), &transports[0]).ok());
  ASSERT_TRUE(CreateTcpTransport(Options(1, 2, 1), &transports[1]).ok());
  const std::vector<std::string> addresses = {transports[0]->LocalAddress(), transports[1]->LocalAddress()};
  // The intruder's connection is queued at rank 0 before rank 1's.
  Status intruder_status;
  std::atomic<bool> intruder_connected{false};
  std::thread intruder([&] {
    SocketAddress target;
    ASSERT_TRUE(ParseSocketAddress(addresses[0], &target).ok());
    Socket socket;
    ASSERT_TRUE(Socket::Connect(target, Deadline::AfterMs(5000), &socket).ok());
    intruder_connected = true;
    uint8_t wrong[16] = {};
    Hello hello;
    hello.purpose = ConnectionPurpose::kTcpLane;
    hello.rank = 1;
    intruder_status = ConnectHandshake(socket, wrong, hello, Deadline::AfterMs(5000));
  });
  while (!intruder_connected) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  Status status1;
  std::thread rank1([&] { status1 = transports[1]->Connect(addresses, Deadline::AfterMs(5000)); });
  const auto start = std::chrono::steady_clock::now();
  Status status0 = transports[0]->Connect(addresses, Deadline::AfterMs(5000));
  rank1.join();
  intruder.join();
  EXPECT_EQ(intruder_status.code(), chorusRemoteError) << intruder_status.message();
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(2));
  ASSERT_TRUE(status0.ok()) << status0.message();
  ASSERT_TRUE(status1.ok()) << status1.message();
}

// Strangers queued on every listener before the mesh forms (silent ones,
// ones that trickle junk, ones that send a junk handshake) delay no lane.
TEST(TcpTransportTest, SilentAndJunkConnectionsDelayNoLane) {
  constexpr int kRanks = 4;
  std::vector<std::unique_ptr<Transport>> transports(kRanks);
  std::vector<std::string> addresses;
  for (int rank = 0; rank < kRanks; ++rank) {
    ASSERT_TRUE(CreateTcpTransport(Options(rank, kRanks, 2), &transports[rank]).ok());
    addresses.push_back(transports[rank]->LocalAddress());
  }
  chorus_test::Intruders intruders;
  for (int rank = 0; rank < kRanks - 1; ++rank) ASSERT_EQ(intruders.Attack(addresses[rank], 6, 3, 3), 12);
  std::vector<Status> results(kRanks);
  const auto start = std::chrono::steady_clock::now();
  ForEachRank(kRanks, [&](int rank) { results[rank] = transports[rank]->Connect(addresses, Deadline::AfterMs(20000)); });
  const auto elapsed = std::chrono::steady_clock::now() - start;
  for (const Status& status : results) ASSERT_TRUE(status.ok()) << status.message();
  // One silent stranger used to cost 5 s per listener.
  EXPECT_LT(elapsed, std::chrono::milliseconds(2000));
}

TEST(TcpTransportTest, WakeupInterruptsABlockedProgress) {
  auto transports = ConnectedMesh(2, 1);
  ASSERT_EQ(transports.size(), 2u);
  const auto start = std::chrono::steady_clock::now();
  std::thread waker([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    transports[0]->Wakeup();
  });
  EXPECT_TRUE(transports[0]->Progress(5000).ok());
  waker.join();
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(2));
}

TEST(TcpTransportTest, RejectsBadArguments) {
  std::unique_ptr<Transport> transport;
  EXPECT_EQ(CreateTcpTransport(Options(2, 2, 1), &transport).code(), chorusInvalidArgument);
  EXPECT_EQ(CreateTcpTransport(Options(0, 2, 0), &transport).code(), chorusInvalidArgument);
  TcpOptions bad_interface = Options(0, 1, 1);
  bad_interface.ifname = "=no-such-interface";
  EXPECT_EQ(CreateTcpTransport(bad_interface, &transport).code(), chorusInvalidArgument);
  ASSERT_TRUE(CreateTcpTransport(Options(0, 2, 1), &transport).ok());
  EXPECT_EQ(transport->endpoint(1), nullptr);  // not connected yet
  EXPECT_EQ(transport->Connect({"127.0.0.1:1"}, Deadline::AfterMs(10)).code(), chorusInvalidArgument);
  EXPECT_STREQ(transport->name(), "tcp");
}

TEST(TcpTransportTest, SingleRankConnectsToNobody) {
  std::unique_ptr<Transport> transport;
  ASSERT_TRUE(CreateTcpTransport(Options(0, 1, 2), &transport).ok());
  ASSERT_TRUE(transport->Connect({transport->LocalAddress()}, Deadline::AfterMs(1000)).ok());
  EXPECT_TRUE(transport->Progress(0).ok());
}

// Peers served by another transport get an empty address: no lanes to
// them, no endpoint, and the rest of the mesh works (ranks 1 and 2 here).
TEST(TcpTransportTest, PeersWithoutAnAddressGetNoLanes) {
  constexpr int kRanks = 3;
  std::vector<std::unique_ptr<Transport>> transports(kRanks);
  std::vector<std::string> all;
  for (int rank = 0; rank < kRanks; ++rank) {
    ASSERT_TRUE(CreateTcpTransport(Options(rank, kRanks, 2), &transports[rank]).ok());
    all.push_back(transports[rank]->LocalAddress());
  }
  std::vector<Status> results(kRanks);
  ForEachRank(kRanks, [&](int rank) {
    std::vector<std::string> addresses = all;
    if (rank == 1) addresses[2].clear();
    if (rank == 2) addresses[1].clear();
    results[rank] = transports[rank]->Connect(addresses, Deadline::AfterMs(kTestTimeoutMs));
  });
  for (const Status& status : results) ASSERT_TRUE(status.ok()) << status.message();
  EXPECT_EQ(transports[1]->endpoint(2), nullptr);
  EXPECT_EQ(transports[2]->endpoint(1), nullptr);
  ASSERT_NE(transports[0]->endpoint(2), nullptr);
  ASSERT_NE(transports[2]->endpoint(0), nullptr);
  std::vector<uint8_t> sent(1000), received(1000, 0);
  for (size_t i = 0; i < sent.size(); ++i) sent[i] = Pattern(0, 2, i);
  TransferRequest send, receive;
  send.buffer = sent.data();
  send.bytes = receive.bytes = sent.size();
  send.tag = receive.tag = 5;
  receive.buffer = received.data();
  ASSERT_TRUE(transports[0]->endpoint(2)->PostSend(&send).ok());
  ASSERT_TRUE(transports[2]->endpoint(0)->PostRecv(&receive).ok());
  ForEachRank(kRanks, [&](int rank) {
    if (rank == 0) results[0] = WaitAll(transports[0].get(), {&send});
    if (rank == 2) results[2] = WaitAll(transports[2].get(), {&receive});
  });
  ASSERT_TRUE(results[0].ok()) << results[0].message();
  ASSERT_TRUE(results[2].ok()) << results[2].message();
  EXPECT_EQ(received, sent);
}

}  // namespace
}  // namespace chorus
