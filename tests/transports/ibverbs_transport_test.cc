// IbTransport on a real RDMA device (InfiniBand, RoCE, or soft-RoCE such as
// rxe): ranks as threads of this process, then as forked processes (a killed
// peer). Every test skips with the reason where there is no device, or where
// Chorus was built without libibverbs.
#include <signal.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "chorus_build_config.h"
#include "tests/transports/transport_test_util.h"
#include "transports/transport_registry.h"
#if CHORUS_HAVE_IBVERBS
#include "tests/transports/ib_test_util.h"
#endif

namespace chorus {
namespace {

#if CHORUS_HAVE_IBVERBS

using ib_test::ConnectedMesh;
using ib_test::kTestTimeoutMs;
using ib_test::NoDeviceReason;
using ib_test::Options;
using ib_test::WaitAll;
using transport_test::DestroyTogether;
using transport_test::ForEachRank;
using transport_test::Pattern;

const std::vector<size_t> kSizes = {0, 1, 13, 4096, 65536 - 64, 65536 - 63, 65536 + 7, 1 << 20, 8 << 20};

// Every size to and from every other rank, all in flight at once; with
// `registered`, the send buffers are registered (written in place).
Status ExchangeAllSizes(Transport* transport, int rank, int nranks, bool registered) {
  return transport_test::ExchangeAllSizes(transport, rank, nranks, kSizes, registered, kTestTimeoutMs);
}

TEST(IbTransportTest, UnknownDeviceFailsNamingWhatItSaw) {
  SKIP_WITHOUT_DEVICE();
  IbOptions options = Options(0, 2);
  options.hca = "=no_such_device";
  std::unique_ptr<Transport> transport;
  const Status status = CreateIbTransport(options, &transport);
  ASSERT_FALSE(status.ok());
  EXPECT_NE(status.message().find("no active RDMA port allowed by CHORUS_IB_HCA"), std::string::npos)
      << status.message();
}

// `nranks` transports, created but not connected, and their addresses.
std::vector<std::unique_ptr<Transport>> Unconnected(int nranks, std::vector<std::string>* addresses) {
  std::vector<std::unique_ptr<Transport>> transports(nranks);
  for (int rank = 0; rank < nranks; ++rank) {
    const Status created = CreateIbTransport(Options(rank, nranks), &transports[rank]);
    EXPECT_TRUE(created.ok()) << created.message();
    if (!created.ok()) return {};
    addresses->push_back(transports[rank]->LocalAddress());
  }
  return transports;
}

TEST(IbTransportTest, APeerThatConnectsLateIsWaitedForUntilTheDeadline) {
  SKIP_WITHOUT_DEVICE();
  // Rank 1 connects 6 s after rank 0: many times as long as rank 0's RC
  // retries of its hello last (ack timeout 14: 67 ms, 7 tries; about 0.5 s
  // a round in the soft-RoCE guest, whose QP restarts CHORUS_DEBUG=INFO
  // shows), well within the 30 s deadline. Both connect, then exchange.
  std::vector<std::string> addresses;
  std::vector<std::unique_ptr<Transport>> transports = Unconnected(2, &addresses);
  ASSERT_EQ(transports.size(), 2u);
  std::vector<Status> results(2);
  ForEachRank(2, [&](int rank) {
    if (rank == 1) std::this_thread::sleep_for(std::chrono::milliseconds(6000));
    Status& status = results[rank];
    status = transports[rank]->Connect(addresses, Deadline::AfterMs(kTestTimeoutMs));
    if (status.ok()) status = ExchangeAllSizes(transports[rank].get(), rank, 2, false);
  });
  for (const Status& status : results) EXPECT_TRUE(status.ok()) << status.message();
  DestroyTogether(&transports);
}

TEST(IbTransportTest, APeerThatNeverConnectsFailsConnectAtTheDeadlineNamingIt) {
  SKIP_WITHOUT_DEVICE();
  std::vector<std::string> addresses;
  std::vector<std::unique_ptr<Transport>> transports = Unconnected(2, &addresses);
  ASSERT_EQ(transports.size(), 2u);
  const auto start = std::chrono::steady_clock::now();
  const Status status = transports[0]->Connect(addresses, Deadline::AfterMs(2000));
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_EQ(status.code(), chorusTimeout) << status.message();
  EXPECT_NE(status.message().find("no hello from rank 1 over"), std::string::npos) << status.message();
  EXPECT_GE(seconds, 1.9);
  EXPECT_LT(seconds, 5.0);
}

TEST(IbTransportTest, ThreadsExchangeEverySizeFromZeroTo8MiB) {
  SKIP_WITHOUT_DEVICE();
  auto transports = ConnectedMesh(3);
  ASSERT_EQ(transports.size(), 3u);
  std::vector<Status> results(3);
  ForEachRank(3, [&](int rank) { results[rank] = ExchangeAllSizes(transports[rank].get(), rank, 3, false); });
  for (const Status& status : results) EXPECT_TRUE(status.ok()) << status.message();
  DestroyTogether(&transports);
}

TEST(IbTransportTest, ThreadsExchangeFromRegisteredBuffersInPlace) {
  SKIP_WITHOUT_DEVICE();
  auto transports = ConnectedMesh(2);
  ASSERT_EQ(transports.size(), 2u);
  std::vector<Status> results(2);
  ForEachRank(2, [&](int rank) { results[rank] = ExchangeAllSizes(transports[rank].get(), rank, 2, true); });
  for (const Status& status : results) EXPECT_TRUE(status.ok()) << status.message();
  DestroyTogether(&transports);
}

TEST(IbTransportTest, RingsAreMadeOnlyBetweenRanksThatUseThem) {
  SKIP_WITHOUT_DEVICE();
  // 4 ranks; each sends only to the next, twice (the ring is made once).
  constexpr int kRanks = 4;
  auto transports = ConnectedMesh(kRanks);
  ASSERT_EQ(transports.size(), static_cast<size_t>(kRanks));
  for (auto& transport : transports) {
    const IbTransport::RingCounts none = static_cast<IbTransport*>(transport.get())->ring_counts();
    EXPECT_EQ(none.rings, 0u);
    EXPECT_EQ(none.staging, 0u);
  }
  std::vector<Status> results(kRanks);
  ForEachRank(kRanks, [&](int rank) {
    Transport* transport = transports[rank].get();
    for (int round = 0; round < 2 && results[rank].ok(); ++round) {
      std::vector<uint8_t> out(100000), in(100000, 0xEE);
      for (size_t i = 0; i < out.size(); ++i) out[i] = Pattern(rank, round, i);
      TransferRequest send, recv;
      send.buffer = out.data();
      send.bytes = out.size();
      recv.buffer = in.data();
      recv.bytes = in.size();
      const int from = (rank + kRanks - 1) % kRanks;
      Status& status = results[rank];
      status = transport->endpoint((rank + 1) % kRanks)->PostSend(&send);
      if (status.ok()) status = transport->endpoint(from)->PostRecv(&recv);
      if (status.ok()) status = WaitAll(transport, {&send, &recv});
      for (size_t i = 0; i < in.size() && status.ok(); ++i) {
        if (in[i] != Pattern(from, round, i)) status = InternalError("byte ", i, " of round ", round, " is wrong");
      }
    }
  });
  for (int rank = 0; rank < kRanks; ++rank) {
    EXPECT_TRUE(results[rank].ok()) << results[rank].message();
    const IbTransport::RingCounts used = static_cast<IbTransport*>(transports[rank].get())->ring_counts();
    EXPECT_EQ(used.rings, 1u) << "rank " << rank;
    EXPECT_EQ(used.staging, 1u) << "rank " << rank;
  }
  DestroyTogether(&transports);
}

TEST(IbTransportTest, ThreadsKeepPerPeerOrderWithManyInFlight) {
  SKIP_WITHOUT_DEVICE();
  auto transports = ConnectedMesh(2);
  ASSERT_EQ(transports.size(), 2u);
  constexpr int kMessages = 1000;  // far more than the ring's 8 slots
  std::vector<Status> results(2);
  ForEachRank(2, [&](int rank) {
    std::vector<std::vector<uint32_t>> buffers(kMessages);
    std::vector<TransferRequest> requests(kMessages);
    std::vector<TransferRequest*> pending;
    for (int k = 0; k < kMessages; ++k) {
      const size_t words = (k % 7 == 0) ? 40000 : 1 + k % 5;
      buffers[k].assign(words, rank == 0 ? static_cast<uint32_t>(k) : 0xFFFFFFFFu);
      requests[k].buffer = buffers[k].data();
      requests[k].bytes = words * sizeof(uint32_t);
      requests[k].tag = 7;
      Endpoint* endpoint = transports[rank]->endpoint(1 - rank);
      const Status posted = rank == 0 ? endpoint->PostSend(&requests[k]) : endpoint->PostRecv(&requests[k]);
      if (!posted.ok()) {
        results[rank] = posted;
        return;
      }
      pending.push_back(&requests[k]);
    }
    results[rank] = WaitAll(transports[rank].get(), pending);
    if (rank == 1 && results[rank].ok()) {
      for (int k = 0; k < kMessages && results[rank].ok(); ++k) {
        for (uint32_t word : buffers[k]) {
          if (word != static_cast<uint32_t>(k)) {
            results[rank] = InternalError("message ", k, " arrived out of order");
            break;
          }
        }
      }
    }
  });
  for (const Status& status : results) EXPECT_TRUE(status.ok()) << status.message();
  DestroyTogether(&transports);
}

TEST(IbTransportTest, CombiningReceiveGetsAlignedPiecesInOrder) {
  SKIP_WITHOUT_DEVICE();
  auto transports = ConnectedMesh(2);
  ASSERT_EQ(transports.size(), 2u);
  ASSERT_TRUE(transports[1]->endpoint(0)->combine_on_receive());
  const size_t bytes = (1 << 20) + 100;
  std::vector<uint8_t> out(bytes), folded(bytes, 0);
  for (size_t i = 0; i < bytes; ++i) out[i] = Pattern(0, 1, i);
  struct Fold {
    std::vector<uint8_t>* into;
    size_t next = 0;
    bool ordered = true, aligned = true;
  } fold{&folded};
  ReceiveCombiner combiner;
  combiner.context = &fold;
  combiner.fn = [](void* context, size_t offset, const void* incoming, size_t piece) {
    auto* f = static_cast<Fold*>(context);
    f->ordered = f->ordered && offset == f->next;
    f->aligned = f->aligned && (offset + piece == f->into->size() || piece % kCombinePieceAlign == 0);
    std::memcpy(f->into->data() + offset, incoming, piece);
    f->next = offset + piece;
  };
  TransferRequest send, recv;
  send.buffer = out.data();
  send.bytes = bytes;
  recv.bytes = bytes;
  recv.combine = &combiner;
  ASSERT_TRUE(transports[0]->endpoint(1)->PostSend(&send).ok());
  ASSERT_TRUE(transports[1]->endpoint(0)->PostRecv(&recv).ok());
  std::vector<Status> results(2);
  ForEachRank(2, [&](int rank) { results[rank] = WaitAll(transports[rank].get(), {rank == 0 ? &send : &recv}); });
  for (const Status& status : results) EXPECT_TRUE(status.ok()) << status.message();
  EXPECT_TRUE(fold.ordered);
  EXPECT_TRUE(fold.aligned);
  EXPECT_EQ(fold.next, bytes);
  EXPECT_EQ(folded, out);
  DestroyTogether(&transports);
}

Status Mismatch(uint64_t send_tag, size_t send_bytes, uint64_t recv_tag, size_t recv_bytes) {
  auto transports = ConnectedMesh(2);
  if (transports.size() != 2) return InternalError("no mesh");
  std::vector<uint8_t> out(send_bytes, 1), in(recv_bytes);
  TransferRequest send, recv;
  send.buffer = out.data();
  send.bytes = send_bytes;
  send.tag = send_tag;
  recv.buffer = in.data();
  recv.bytes = recv_bytes;
  recv.tag = recv_tag;
  Status sent, received;
  std::thread sender([&] {
    sent = transports[0]->endpoint(1)->PostSend(&send);
    if (sent.ok()) sent = WaitAll(transports[0].get(), {&send});
  });
  received = transports[1]->endpoint(0)->PostRecv(&recv);
  if (received.ok()) received = WaitAll(transports[1].get(), {&recv});
  sender.join();
  DestroyTogether(&transports);
  return received;
}

TEST(IbTransportTest, TagMismatchFailsNamingThePeer) {
  SKIP_WITHOUT_DEVICE();
  const Status status = Mismatch(5, 64, 6, 64);
  EXPECT_EQ(status.code(), chorusInternalError) << status.message();
  EXPECT_NE(status.message().find("mismatch with rank 0"), std::string::npos) << status.message();
  EXPECT_NE(status.message().find("expected tag 6"), std::string::npos) << status.message();
}

TEST(IbTransportTest, LengthMismatchFailsNamingThePeer) {
  SKIP_WITHOUT_DEVICE();
  const Status status = Mismatch(5, 1 << 20, 5, 1000);
  EXPECT_EQ(status.code(), chorusInternalError) << status.message();
  EXPECT_NE(status.message().find("got tag 5 with 1048576 bytes"), std::string::npos) << status.message();
}

TEST(IbTransportTest, ShutdownWakesASleepingProgressAndStaysFailed) {
  SKIP_WITHOUT_DEVICE();
  auto transports = ConnectedMesh(2);
  ASSERT_EQ(transports.size(), 2u);
  std::vector<uint8_t> in(100);
  TransferRequest recv;
  recv.buffer = in.data();
  recv.bytes = in.size();
  ASSERT_TRUE(transports[1]->endpoint(0)->PostRecv(&recv).ok());
  std::thread stopper([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    transports[1]->Shutdown();
  });
  const auto start = std::chrono::steady_clock::now();
  Status status;
  const Deadline deadline = Deadline::AfterMs(kTestTimeoutMs);
  while (status.ok() && !deadline.Expired()) status = transports[1]->Progress(kTestTimeoutMs);
  stopper.join();
  EXPECT_FALSE(status.ok());
  EXPECT_FALSE(recv.done);
  EXPECT_FALSE(transports[1]->Progress(0).ok());
  // Woken, not timed out (the deadline is 30 s).
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(10));
  DestroyTogether(&transports);
}

TEST(IbTransportTest, PeerClosingFailsOnlyWhatAwaitsItAndPassesItsNotice) {
  SKIP_WITHOUT_DEVICE();
  auto transports = ConnectedMesh(3);
  ASSERT_EQ(transports.size(), 3u);
  std::vector<uint8_t> in(100);
  TransferRequest recv;
  recv.buffer = in.data();
  recv.bytes = in.size();
  ASSERT_TRUE(transports[0]->endpoint(2)->PostRecv(&recv).ok());
  // Rank 1 shuts down: rank 0 awaits nothing from it, so it goes on.
  std::thread closer([&] { transports[1]->Shutdown(); });
  const Deadline settle = Deadline::AfterMs(300);
  while (!settle.Expired()) ASSERT_TRUE(transports[0]->Progress(10).ok());
  closer.join();
  // Rank 2 closes with a notice while rank 0 awaits its message.
  CloseNotice notice;
  notice.origin = 2;
  notice.reason = 77;
  transports[2]->ShutdownWithNotice(notice);
  const Status status = WaitAll(transports[0].get(), {&recv});
  EXPECT_EQ(status.code(), chorusRemoteError) << status.message();
  EXPECT_NE(status.message().find("rank 2 (over "), std::string::npos) << status.message();
  EXPECT_NE(status.message().find("closed the connection"), std::string::npos) << status.message();
  EXPECT_FALSE(recv.done);
  CloseNotice received;
  ASSERT_TRUE(transports[0]->ReceivedNotice(&received));
  EXPECT_EQ(received.origin, 2);
  EXPECT_EQ(received.reason, 77u);
  DestroyTogether(&transports);
}

// ---- Ranks as processes ---------------------------------------------------
//
// Two forked ranks swap addresses through shared memory mapped before the
// fork; rank 1 kills itself while rank 0 waits for its message.
struct SharedBoard {
  char address[2][16384];
  std::atomic<int> published[2];
  std::atomic<int> receive_posted;
};

int RunKilledPeerRank(SharedBoard* board, int rank) {
  std::unique_ptr<Transport> transport;
  Status status = CreateIbTransport(Options(rank, 2), &transport);
  if (!status.ok()) {
    std::fprintf(stderr, "rank %d: %s\n", rank, status.message().c_str());
    return 2;
  }
  const std::string mine = transport->LocalAddress();
  if (mine.size() >= sizeof(board->address[rank])) return 3;
  std::memcpy(board->address[rank], mine.c_str(), mine.size() + 1);
  board->published[rank].store(1);
  const Deadline deadline = Deadline::AfterMs(kTestTimeoutMs);
  while (board->published[1 - rank].load() == 0) {
    if (deadline.Expired()) return 4;
    usleep(1000);
  }
  status = transport->Connect({board->address[0], board->address[1]}, deadline);
  if (!status.ok()) {
    std::fprintf(stderr, "rank %d: %s\n", rank, status.message().c_str());
    return 5;
  }
  if (rank == 1) {
    while (board->receive_posted.load() == 0 && !deadline.Expired()) usleep(1000);
    ::raise(SIGKILL);  // no closing notice: only RC retries can tell
  }
  std::vector<uint8_t> in(1000);
  TransferRequest recv;
  recv.buffer = in.data();
  recv.bytes = in.size();
  status = transport->endpoint(1)->PostRecv(&recv);
  board->receive_posted.store(1);
  if (status.ok()) status = WaitAll(transport.get(), {&recv}, kTestTimeoutMs);
  std::fprintf(stderr, "rank 0: %s\n", status.message().c_str());
  if (status.ok() || status.code() == chorusTimeout) return 6;
  return status.message().find("rank 1 (over ") != std::string::npos ? 0 : 7;
}

TEST(IbProcessTest, KilledPeerFailsAPendingReceiveNamingIt) {
  SKIP_WITHOUT_DEVICE();
  auto* board = static_cast<SharedBoard*>(
      mmap(nullptr, sizeof(SharedBoard), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0));
  ASSERT_NE(board, MAP_FAILED);
  new (board) SharedBoard();
  pid_t pids[2];
  for (int rank = 0; rank < 2; ++rank) {
    pids[rank] = fork();
    ASSERT_GE(pids[rank], 0);
    if (pids[rank] == 0) _exit(RunKilledPeerRank(board, rank));
  }
  const auto start = std::chrono::steady_clock::now();
  int status0 = 0, status1 = 0;
  ASSERT_EQ(waitpid(pids[0], &status0, 0), pids[0]);
  ASSERT_EQ(waitpid(pids[1], &status1, 0), pids[1]);
  EXPECT_TRUE(WIFSIGNALED(status1) && WTERMSIG(status1) == SIGKILL) << status1;
  ASSERT_TRUE(WIFEXITED(status0)) << status0;
  EXPECT_EQ(WEXITSTATUS(status0), 0) << "rank 0's exit code (see its stderr)";
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::milliseconds(kTestTimeoutMs));
  munmap(board, sizeof(SharedBoard));
}

#endif  // CHORUS_HAVE_IBVERBS

TEST(IbRegistryTest, IsExplicitOnlyAndAnswersToBothNames) {
  const TransportRegistry& registry = BuiltinTransports();
#if CHORUS_HAVE_IBVERBS
  const TransportDescriptor* by_name = registry.Find("ibverbs");
  ASSERT_NE(by_name, nullptr);
  EXPECT_EQ(registry.Find("ib"), by_name);
  EXPECT_TRUE(by_name->explicit_only);
  std::vector<const TransportDescriptor*> order;
  ASSERT_TRUE(registry.ParseSelection("auto", &order).ok());
  for (const TransportDescriptor* descriptor : order) EXPECT_STRNE(descriptor->name, "ibverbs");
  ASSERT_TRUE(registry.ParseSelection("shm,ib,tcp", &order).ok());
  ASSERT_EQ(order.size(), 3u);
  EXPECT_EQ(order[1], by_name);
  EXPECT_FALSE(registry.ParseSelection("ib,ibverbs", &order).ok());  // the same transport twice
#else
  EXPECT_EQ(registry.Find("ibverbs"), nullptr);
  GTEST_SKIP() << "Chorus was built without libibverbs (libibverbs-dev)";
#endif
}

#if CHORUS_HAVE_IBVERBS
TEST(IbRegistryTest, CreationWithoutADeviceSaysSo) {
  if (NoDeviceReason().empty()) GTEST_SKIP() << "an RDMA device exists here";
  const TransportDescriptor* descriptor = BuiltinTransports().Find("ibverbs");
  ASSERT_NE(descriptor, nullptr);
  TransportVars vars;
  TransportOptions options;
  options.nranks = 2;
  std::unique_ptr<Transport> transport;
  const Status status = descriptor->create(*descriptor, options, vars, &transport);
  ASSERT_FALSE(status.ok());
  EXPECT_NE(status.message().find("no RDMA device"), std::string::npos) << status.message();
  EXPECT_EQ(transport, nullptr);
}

TEST(IbRegistryTest, BadVariablesFailWithTheirName) {
  const TransportDescriptor* descriptor = BuiltinTransports().Find("ibverbs");
  ASSERT_NE(descriptor, nullptr);
  const std::vector<std::pair<const char*, const char*>> bad = {
      {"CHORUS_IB_HCA", "mlx5_0:x"},       {"CHORUS_IB_GID_INDEX", "-2"},  {"CHORUS_IB_GID_INDEX", "256"},
      {"CHORUS_IB_SLOT_BYTES", "1000"},    {"CHORUS_IB_SLOT_BYTES", "128M"}, {"CHORUS_IB_SLOTS", "1"},
      {"CHORUS_IB_SLOTS", "2000"},         {"CHORUS_IB_TIMEOUT", "0"},     {"CHORUS_IB_TIMEOUT", "32"},
      {"CHORUS_IB_RETRY_CNT", "8"},        {"CHORUS_IB_SLOTS", "x"}};
  for (const auto& [name, value] : bad) {
    TransportVars vars;
    vars.Set(name, value);
    const Status status = descriptor->check(vars);
    ASSERT_FALSE(status.ok()) << name << "=" << value;
    EXPECT_NE(status.message().find(name), std::string::npos) << status.message();
  }
  TransportVars good;
  good.Set("CHORUS_IB_HCA", "^=mlx5_2");
  good.Set("CHORUS_IB_SLOT_BYTES", "1M");
  good.Set("CHORUS_IB_SLOTS", "4");
  IbOptions options;
  ASSERT_TRUE(ReadIbOptions(good, &options).ok());
  EXPECT_EQ(options.slot_bytes, 1u << 20);
  EXPECT_EQ(options.slots, 4u);
  EXPECT_EQ(options.gid_index, -1);
  EXPECT_EQ(options.ack_timeout, 18);
  EXPECT_EQ(options.retry_count, 6);
}
#endif

}  // namespace
}  // namespace chorus
