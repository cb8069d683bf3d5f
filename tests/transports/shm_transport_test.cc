// ShmTransport with ranks as threads of one process.
#include "transports/shm/shm_transport.h"

#include <atomic>
#include <chrono>
#include <functional>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "tests/transports/shm_test_util.h"
#include "transports/host_identity.h"

namespace chorus {
namespace {

using namespace shm_test;
using Clock = std::chrono::steady_clock;

std::vector<std::unique_ptr<Transport>> CreateAll(int nranks, const ShmTuning& tuning = ShmTuning(),
                                                  std::vector<std::string>* addresses = nullptr) {
  std::vector<std::unique_ptr<Transport>> transports(nranks);
  std::vector<std::string> local;
  for (int rank = 0; rank < nranks; ++rank) {
    Status created = CreateShmTransport(Options(rank, nranks), &transports[rank], tuning);
    EXPECT_TRUE(created.ok()) << created.message();
    if (!created.ok()) return {};
    local.push_back(transports[rank]->LocalAddress());
  }
  if (addresses != nullptr) *addresses = local;
  return transports;
}

// Creates and connects `nranks` transports; each unlinks its segment once
// every peer has mapped it.
std::vector<std::unique_ptr<Transport>> ConnectedMesh(int nranks, const ShmTuning& tuning = ShmTuning()) {
  auto transports =
      transport_test::ConnectedMesh(nranks, [nranks, &tuning](int rank, std::unique_ptr<Transport>* transport) {
        return CreateShmTransport(Options(rank, nranks), transport, tuning);
      });
  for (const auto& transport : transports) {
    EXPECT_FALSE(SegmentExists(SegmentName(transport->LocalAddress()))) << transport->LocalAddress();
  }
  return transports;
}

ShmTransport* AsShm(const std::unique_ptr<Transport>& transport) { return static_cast<ShmTransport*>(transport.get()); }

enum class Path { kMemcpy, kCma, kRing };

const char* PathName(Path path) {
  switch (path) {
    case Path::kMemcpy:
      return "memcpy";
    case Path::kCma:
      return "cma";
    default:
      return "ring";
  }
}

ShmTuning TuningFor(Path path) {
  ShmTuning tuning;
  tuning.single_copy = path != Path::kRing;
  tuning.cma_within_process = path == Path::kCma;
  return tuning;
}

// Every rank sends every size to every other rank, all in flight at once,
// and checks every byte it receives and which path carried it.
void ExchangeAllToAll(int nranks, Path path, const std::vector<size_t>& sizes) {
  auto transports = ConnectedMesh(nranks, TuningFor(path));
  ASSERT_EQ(transports.size(), static_cast<size_t>(nranks));
  ForEachRank(nranks, [&](int rank) {
    ExchangeCounts counts;
    ASSERT_EQ(ExchangeWithEveryPeer(transports[rank].get(), rank, nranks, sizes, /*first_tag=*/100, &counts), "")
        << "rank " << rank;
    const shm::ShmStats stats = AsShm(transports[rank])->stats();
    EXPECT_EQ(stats.memcpy_pulls, path == Path::kMemcpy ? counts.large : 0u);
    EXPECT_EQ(stats.cma_pulls, path == Path::kCma ? counts.large : 0u);
    EXPECT_EQ(stats.eager_messages, path == Path::kRing ? counts.messages : counts.messages - counts.large);
  });
}

struct MeshShape {
  int nranks;
  Path path;
};

class ShmExchangeTest : public ::testing::TestWithParam<MeshShape> {};

TEST_P(ShmExchangeTest, MessagesOfEverySizeArriveIntact) {
  ExchangeAllToAll(GetParam().nranks, GetParam().path, {0, 1, 4096, 1 << 20, 0, 3, 100000, 65536, 65535});
}

INSTANTIATE_TEST_SUITE_P(Shapes, ShmExchangeTest,
                         ::testing::Values(MeshShape{2, Path::kMemcpy}, MeshShape{2, Path::kCma},
                                           MeshShape{2, Path::kRing}, MeshShape{3, Path::kMemcpy},
                                           MeshShape{3, Path::kRing}, MeshShape{4, Path::kMemcpy},
                                           MeshShape{4, Path::kCma}, MeshShape{4, Path::kRing}),
                         [](const auto& info) {
                           return StrCat(info.param.nranks, "ranks_", PathName(info.param.path));
                         });

class ShmLargeMessageTest : public ::testing::TestWithParam<Path> {};

TEST_P(ShmLargeMessageTest, SixtyFourMiBArrivesIntact) { ExchangeAllToAll(2, GetParam(), {64 << 20}); }

INSTANTIATE_TEST_SUITE_P(Paths, ShmLargeMessageTest, ::testing::Values(Path::kMemcpy, Path::kRing),
                         [](const auto& info) { return PathName(info.param); });

TEST(ShmTransportTest, ManySmallMessagesKeepTheirOrder) {
  constexpr int kMessages = 20000;  // far more than the ring holds at once
  auto transports = ConnectedMesh(2);
  ASSERT_EQ(transports.size(), 2u);
  ForEachRank(2, [&](int rank) {
    std::vector<uint64_t> values(kMessages);
    std::vector<TransferRequest> requests(kMessages);
    std::vector<TransferRequest*> pending;
    for (int i = 0; i < kMessages; ++i) {
      values[i] = rank == 0 ? 1000003ULL * i : 0;
      requests[i] = Request(&values[i], sizeof(uint64_t), i % 7);
      Endpoint* endpoint = transports[rank]->endpoint(1 - rank);
      ASSERT_TRUE((rank == 0 ? endpoint->PostSend(&requests[i]) : endpoint->PostRecv(&requests[i])).ok());
      pending.push_back(&requests[i]);
    }
    Status status = WaitAll(transports[rank].get(), pending);
    ASSERT_TRUE(status.ok()) << status.message();
    if (rank == 1) {
      int wrong = 0;
      for (int i = 0; i < kMessages; ++i) wrong += values[i] != 1000003ULL * i;
      EXPECT_EQ(wrong, 0);
    }
  });
}

// Ranks 0 and 1 send every size to each other; receives alternate between
// combining and plain, so both kinds keep their order in one stream.
void ExchangeCombining(Path path, const std::vector<size_t>& sizes, size_t piece_bytes) {
  ShmTuning tuning = TuningFor(path);
  tuning.combine_piece_bytes = piece_bytes;
  auto transports = ConnectedMesh(2, tuning);
  ASSERT_EQ(transports.size(), 2u);
  ForEachRank(2, [&](int rank) {
    const int peer = 1 - rank;
    Endpoint* endpoint = transports[rank]->endpoint(peer);
    ASSERT_TRUE(endpoint->combine_on_receive());
    std::vector<std::vector<uint8_t>> sends, plain;
    std::vector<std::unique_ptr<AddingCombiner>> combiners(sizes.size());
    std::vector<TransferRequest> requests;
    requests.reserve(2 * sizes.size());
    std::vector<TransferRequest*> pending;
    for (size_t k = 0; k < sizes.size(); ++k) {
      sends.emplace_back(sizes[k]);
      FillPattern(&sends.back(), rank, peer, k);
      plain.emplace_back(sizes[k], 0xee);
      requests.push_back(Request(sends.back().data(), sizes[k], 100 + k));
      ASSERT_TRUE(endpoint->PostSend(&requests.back()).ok());
      pending.push_back(&requests.back());
      if (k % 2 == 0) {
        combiners[k] = std::make_unique<AddingCombiner>(sizes[k], static_cast<uint8_t>(k));
        requests.push_back(combiners[k]->Receive(100 + k));
      } else {
        requests.push_back(Request(plain.back().data(), sizes[k], 100 + k));
      }
      ASSERT_TRUE(endpoint->PostRecv(&requests.back()).ok());
      pending.push_back(&requests.back());
    }
    Status status = WaitAll(transports[rank].get(), pending);
    ASSERT_TRUE(status.ok()) << "rank " << rank << ": " << status.message();
    const shm::PullMethod method = AsShm(transports[rank])->pull_method(peer);
    uint64_t combined = 0;
    for (size_t k = 0; k < sizes.size(); ++k) {
      if (combiners[k] == nullptr) {
        EXPECT_EQ(CountWrong(plain[k], peer, rank, k), 0u) << "rank " << rank << " size " << sizes[k];
        continue;
      }
      ++combined;
      const size_t max_piece = MaxCombinePiece(sizes[k], method, path != Path::kRing, piece_bytes);
      EXPECT_EQ(combiners[k]->Check(peer, rank, k, max_piece), "") << "rank " << rank << " size " << sizes[k];
      if (path == Path::kMemcpy && sizes[k] >= shm::kSingleCopyThreshold) {
        EXPECT_EQ(combiners[k]->pieces(), 1u) << "threads combine straight from the sender's buffer";
      }
    }
    EXPECT_EQ(AsShm(transports[rank])->stats().combined_messages, combined) << "rank " << rank;
  });
}

const std::vector<size_t> kCombineSizes = {0,          1,       63,          4096,    65535, 65536,
                                           65536 + 64, 1 << 20, (1 << 20) + 3, 200000, 64 * 1000 * 3 + 8};

class ShmCombineTest : public ::testing::TestWithParam<Path> {};

TEST_P(ShmCombineTest, CombinesEverySizeInAlignedPieces) {
  // 64000: piece boundaries fall off every power of two.
  ExchangeCombining(GetParam(), kCombineSizes, 64 * 1000);
}

TEST_P(ShmCombineTest, CombinesWithTinyPieces) { ExchangeCombining(GetParam(), {4096, 65536 + 200, 1 << 20}, 64); }

INSTANTIATE_TEST_SUITE_P(Paths, ShmCombineTest, ::testing::Values(Path::kMemcpy, Path::kCma, Path::kRing),
                         [](const auto& info) { return PathName(info.param); });

TEST(ShmTransportTest, CapabilitiesAdvertiseCombining) {
  auto transports = ConnectedMesh(2);
  ASSERT_EQ(transports.size(), 2u);
  EXPECT_TRUE(transports[0]->capabilities().combine_on_receive);
}

TEST(ShmTransportTest, RejectsUnalignedCombinePieces) {
  std::unique_ptr<Transport> transport;
  ShmTuning tuning;
  tuning.combine_piece_bytes = 1000;
  Status status = CreateShmTransport(Options(0, 1), &transport, tuning);
  EXPECT_EQ(status.code(), chorusInvalidArgument) << status.message();
  EXPECT_NE(status.message().find("combine_piece_bytes"), std::string::npos) << status.message();
}

// Rank 0 sends (tag 7, 16 bytes); rank 1 expects `recv_tag` / `recv_bytes`.
Status MismatchedReceive(uint64_t recv_tag, size_t recv_bytes) {
  auto transports = ConnectedMesh(2);
  if (transports.size() != 2) return InternalError("no mesh");
  std::vector<uint8_t> out(16, 1), in(64, 0);
  TransferRequest send = Request(out.data(), out.size(), 7);
  TransferRequest recv = Request(in.data(), recv_bytes, recv_tag);
  CHORUS_RETURN_IF_ERROR(transports[0]->endpoint(1)->PostSend(&send));
  CHORUS_RETURN_IF_ERROR(transports[1]->endpoint(0)->PostRecv(&recv));
  CHORUS_RETURN_IF_ERROR(transports[0]->Progress(0));
  return WaitAll(transports[1].get(), {&recv}, 2000);
}

TEST(ShmTransportTest, TagMismatchNamesThePeer) {
  Status status = MismatchedReceive(8, 16);
  EXPECT_EQ(status.code(), chorusInternalError) << status.message();
  EXPECT_NE(status.message().find("peer 0 (pid"), std::string::npos) << status.message();
  EXPECT_NE(status.message().find("tag 7"), std::string::npos) << status.message();
}

TEST(ShmTransportTest, LengthMismatchNamesThePeer) {
  Status status = MismatchedReceive(7, 32);
  EXPECT_EQ(status.code(), chorusInternalError) << status.message();
  EXPECT_NE(status.message().find("peer 0 (pid"), std::string::npos) << status.message();
  EXPECT_NE(status.message().find("32 bytes"), std::string::npos) << status.message();
}

// A combining receive that does not match is reported like a plain one and
// combines nothing.
class ShmCombineMismatchTest : public ::testing::TestWithParam<Path> {};

TEST_P(ShmCombineMismatchTest, MismatchIsReportedAndNothingIsCombined) {
  for (size_t sent : {size_t{16}, size_t{1} << 20}) {
    auto transports = ConnectedMesh(2, TuningFor(GetParam()));
    ASSERT_EQ(transports.size(), 2u);
    std::vector<uint8_t> out(sent, 1);
    AddingCombiner combiner(sent + 64, 3);
    TransferRequest send = Request(out.data(), out.size(), 7);
    TransferRequest recv = combiner.Receive(7);
    ASSERT_TRUE(transports[0]->endpoint(1)->PostSend(&send).ok());
    ASSERT_TRUE(transports[1]->endpoint(0)->PostRecv(&recv).ok());
    ASSERT_TRUE(transports[0]->Progress(0).ok());
    Status status = WaitAll(transports[1].get(), {&recv}, 2000);
    EXPECT_EQ(status.code(), chorusInternalError) << status.message();
    EXPECT_NE(status.message().find("peer 0 (pid"), std::string::npos) << status.message();
    EXPECT_NE(status.message().find(StrCat(sent + 64, " bytes")), std::string::npos) << status.message();
    EXPECT_TRUE(combiner.untouched());
  }
}

INSTANTIATE_TEST_SUITE_P(Paths, ShmCombineMismatchTest, ::testing::Values(Path::kMemcpy, Path::kCma, Path::kRing),
                         [](const auto& info) { return PathName(info.param); });

TEST(ShmTransportTest, PeerShutdownFailsPendingReceiveWithinOneSecond) {
  auto transports = ConnectedMesh(2);
  ASSERT_EQ(transports.size(), 2u);
  uint8_t byte = 0;
  TransferRequest recv = Request(&byte, 1, 1);
  ASSERT_TRUE(transports[1]->endpoint(0)->PostRecv(&recv).ok());
  Status status;
  Clock::time_point failed_at;
  std::thread waiter([&] {
    status = WaitAll(transports[1].get(), {&recv}, 5000);
    failed_at = Clock::now();
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  const Clock::time_point shut_at = Clock::now();
  transports[0]->Shutdown();
  waiter.join();
  EXPECT_EQ(status.code(), chorusRemoteError) << status.message();
  EXPECT_NE(status.message().find("peer 0 (pid"), std::string::npos) << status.message();
  EXPECT_LT(failed_at - shut_at, std::chrono::seconds(1));
  // The failed transport is unusable and says why.
  EXPECT_EQ(transports[1]->Progress(0).code(), chorusRemoteError);
}

// The notice lands in every peer's segment: an idle peer finds it without
// any call, and a peer waiting for another rank fails at once.
TEST(ShmTransportTest, CloseNoticeReachesWaitingAndIdlePeers) {
  auto transports = ConnectedMesh(3);
  ASSERT_EQ(transports.size(), 3u);
  uint8_t byte = 0;
  TransferRequest recv = Request(&byte, 1, 1);
  ASSERT_TRUE(transports[0]->endpoint(2)->PostRecv(&recv).ok());  // waits for rank 2, not rank 1
  Status status;
  std::thread waiter([&] { status = WaitAll(transports[0].get(), {&recv}, 5000); });
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  CloseNotice notice;
  notice.origin = 1;
  notice.reason = 7;
  transports[1]->ShutdownWithNotice(notice);
  CloseNotice received;
  ASSERT_TRUE(transports[2]->ReceivedNotice(&received));  // idle: written into its segment
  EXPECT_EQ(received.origin, 1);
  EXPECT_EQ(received.reason, 7u);
  waiter.join();
  EXPECT_EQ(status.code(), chorusRemoteError) << status.message();
  EXPECT_NE(status.message().find("rank 1"), std::string::npos) << status.message();
  ASSERT_TRUE(transports[0]->ReceivedNotice(&received));
  EXPECT_EQ(received.origin, 1);
}

TEST(ShmTransportTest, MessagesSentBeforeShutdownCanStillBeReceived) {
  auto transports = ConnectedMesh(2);
  ASSERT_EQ(transports.size(), 2u);
  uint32_t out = 0xabcd1234, in = 0;
  TransferRequest send = Request(&out, sizeof(out), 3);
  ASSERT_TRUE(transports[0]->endpoint(1)->PostSend(&send).ok());
  ASSERT_TRUE(WaitAll(transports[0].get(), {&send}).ok());
  transports[0]->Shutdown();
  TransferRequest recv = Request(&in, sizeof(in), 3);
  ASSERT_TRUE(transports[1]->endpoint(0)->PostRecv(&recv).ok());
  Status status = WaitAll(transports[1].get(), {&recv}, 2000);
  EXPECT_TRUE(status.ok()) << status.message();
  EXPECT_EQ(in, 0xabcd1234u);
}

TEST(ShmTransportTest, ProgressTimeoutIsBounded) {
  auto transports = ConnectedMesh(2);
  ASSERT_EQ(transports.size(), 2u);
  // Nothing pending, then a receive that never arrives.
  for (int pending = 0; pending < 2; ++pending) {
    uint8_t byte = 0;
    TransferRequest recv = Request(&byte, 1, 1);
    if (pending == 1) {
      ASSERT_TRUE(transports[1]->endpoint(0)->PostRecv(&recv).ok());
    }
    const Clock::time_point start = Clock::now();
    ASSERT_TRUE(transports[1]->Progress(100).ok());
    const auto waited = Clock::now() - start;
    EXPECT_GE(waited, std::chrono::milliseconds(95)) << "pending " << pending;
    EXPECT_LT(waited, std::chrono::milliseconds(1000)) << "pending " << pending;
    EXPECT_FALSE(recv.done);
    const Clock::time_point poll_start = Clock::now();
    ASSERT_TRUE(transports[1]->Progress(0).ok());
    EXPECT_LT(Clock::now() - poll_start, std::chrono::milliseconds(200));
  }
}

TEST(ShmTransportTest, WakeupEndsABlockedProgress) {
  auto transports = ConnectedMesh(2);
  ASSERT_EQ(transports.size(), 2u);
  Clock::time_point returned_at;
  std::thread waiter([&] {
    Status status = transports[0]->Progress(10000);
    EXPECT_TRUE(status.ok()) << status.message();
    returned_at = Clock::now();
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  const Clock::time_point woken_at = Clock::now();
  transports[0]->Wakeup();
  waiter.join();
  EXPECT_LT(returned_at - woken_at, std::chrono::milliseconds(500));
}

TEST(ShmTransportTest, SleepingReceiverWakesForData) {
  auto transports = ConnectedMesh(2);
  ASSERT_EQ(transports.size(), 2u);
  uint64_t out = 42, in = 0;
  TransferRequest recv = Request(&in, sizeof(in), 9);
  ASSERT_TRUE(transports[1]->endpoint(0)->PostRecv(&recv).ok());
  Clock::time_point received_at;
  std::thread receiver([&] {
    const Deadline deadline = Deadline::AfterMs(5000);
    while (!recv.done && !deadline.Expired()) ASSERT_TRUE(transports[1]->Progress(3000).ok());
    received_at = Clock::now();
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(100));  // the receiver is asleep on its futex
  const Clock::time_point sent_at = Clock::now();
  TransferRequest send = Request(&out, sizeof(out), 9);
  ASSERT_TRUE(transports[0]->endpoint(1)->PostSend(&send).ok());
  ASSERT_TRUE(WaitAll(transports[0].get(), {&send}).ok());
  receiver.join();
  EXPECT_EQ(in, 42u);
  EXPECT_LT(received_at - sent_at, std::chrono::milliseconds(500));
}

// A message that lands while the receiver announces that it sleeps is
// found by its last look before the futex wait; that completes the receive,
// and Progress must return with it instead of sleeping out its timeout
// (it did: with nothing left pending it slept the whole 100 ms slice the
// executor asks for, stalling one in ~20 DDP steps by ~100 ms).
TEST(ShmTransportTest, ReceiveCompletedByTheLastLookBeforeSleepingEndsProgress) {
  std::vector<std::unique_ptr<Transport>>* mesh = nullptr;
  bool armed = false;
  uint64_t out = 7, in = 0;
  TransferRequest send = Request(&out, sizeof(out), 5);
  ShmTuning tuning;
  tuning.before_last_look = [&] {
    if (!armed) return;
    armed = false;
    // Rank 0 sends now: its record is published after rank 1 looked for
    // work in its wait loop and before the look that precedes the sleep.
    ASSERT_TRUE((*mesh)[0]->endpoint(1)->PostSend(&send).ok());
    ASSERT_TRUE((*mesh)[0]->Progress(0).ok());
  };
  auto transports = ConnectedMesh(2, tuning);
  ASSERT_EQ(transports.size(), 2u);
  mesh = &transports;
  TransferRequest recv = Request(&in, sizeof(in), 5);
  ASSERT_TRUE(transports[1]->endpoint(0)->PostRecv(&recv).ok());
  armed = true;
  const Clock::time_point start = Clock::now();
  ASSERT_TRUE(transports[1]->Progress(3000).ok());
  const auto waited = Clock::now() - start;
  EXPECT_FALSE(armed) << "the receiver never went to sleep";
  EXPECT_TRUE(recv.done);
  EXPECT_EQ(in, 7u);
  EXPECT_LT(waited, std::chrono::milliseconds(1000));
  ASSERT_TRUE(WaitAll(transports[0].get(), {&send}).ok());
}

TEST(ShmTransportTest, PeersOnOtherHostsAreSkipped) {
  // Rank 2 lives "elsewhere": ranks 0 and 1 get an empty address for it.
  std::vector<std::string> addresses;
  auto transports = CreateAll(3, ShmTuning(), &addresses);
  ASSERT_EQ(transports.size(), 3u);
  addresses[2].clear();
  std::vector<Status> results(2);
  ForEachRank(2, [&](int rank) { results[rank] = transports[rank]->Connect(addresses, Deadline::AfterMs(5000)); });
  ASSERT_TRUE(results[0].ok()) << results[0].message();
  ASSERT_TRUE(results[1].ok()) << results[1].message();
  EXPECT_EQ(transports[0]->endpoint(2), nullptr);
  EXPECT_EQ(transports[0]->endpoint(0), nullptr);
  ASSERT_NE(transports[0]->endpoint(1), nullptr);
  EXPECT_TRUE(transports[0]->capabilities().same_host_only);
  uint16_t out = 77, in = 0;
  TransferRequest send = Request(&out, sizeof(out), 1), recv = Request(&in, sizeof(in), 1);
  ASSERT_TRUE(transports[0]->endpoint(1)->PostSend(&send).ok());
  ASSERT_TRUE(transports[1]->endpoint(0)->PostRecv(&recv).ok());
  ForEachRank(2, [&](int rank) { EXPECT_TRUE(WaitAll(transports[rank].get(), {rank == 0 ? &send : &recv}).ok()); });
  EXPECT_EQ(in, 77);
}

// Rank `connecting` of a pair whose other rank has a different secret
// connects alone; the other never does.
Status ConnectToStranger(int connecting, std::vector<std::string>* addresses) {
  std::vector<std::unique_ptr<Transport>> pair(2);
  for (int rank = 0; rank < 2; ++rank) {
    CHORUS_RETURN_IF_ERROR(CreateShmTransport(Options(rank, 2, rank == connecting ? 1 : 9), &pair[rank]));
    addresses->push_back(pair[rank]->LocalAddress());
  }
  return pair[connecting]->Connect(*addresses, Deadline::AfterMs(300));
}

TEST(ShmTransportTest, WrongSecretIsRefused) {
  for (int connecting = 0; connecting < 2; ++connecting) {
    std::vector<std::string> addresses;
    Status status = ConnectToStranger(connecting, &addresses);
    EXPECT_EQ(status.code(), chorusInvalidUsage) << status.message();
    EXPECT_NE(status.message().find(StrCat("peer ", 1 - connecting, " (pid")), std::string::npos) << status.message();
    EXPECT_NE(status.message().find("authentication"), std::string::npos) << status.message();
    // A failed set-up leaves nothing behind either.
    for (const std::string& address : addresses) EXPECT_FALSE(SegmentExists(SegmentName(address)));
  }
}

TEST(ShmTransportTest, AddressFromAnotherHostIsRefused) {
  std::vector<std::string> addresses;
  auto transports = CreateAll(2, ShmTuning(), &addresses);
  ASSERT_EQ(transports.size(), 2u);
  addresses[1] += "-elsewhere";
  Status status = transports[0]->Connect(addresses, Deadline::AfterMs(300));
  EXPECT_EQ(status.code(), chorusInvalidUsage) << status.message();
  EXPECT_NE(status.message().find("peer 1"), std::string::npos) << status.message();
}

TEST(ShmTransportTest, UnconnectedTransportLeavesNoSegment) {
  std::string name;
  {
    std::unique_ptr<Transport> transport;
    ASSERT_TRUE(CreateShmTransport(Options(0, 4), &transport).ok());
    name = SegmentName(transport->LocalAddress());
    EXPECT_TRUE(SegmentExists(name));
  }
  EXPECT_FALSE(SegmentExists(name));
}

TEST(ShmTransportTest, ShutdownUnlinksAndFailsLaterCalls) {
  std::unique_ptr<Transport> transport;
  ASSERT_TRUE(CreateShmTransport(Options(0, 2), &transport).ok());
  const std::string name = SegmentName(transport->LocalAddress());
  transport->Shutdown();
  transport->Shutdown();  // idempotent
  EXPECT_FALSE(SegmentExists(name));
  EXPECT_FALSE(transport->Connect({transport->LocalAddress(), ""}, Deadline::AfterMs(100)).ok());
}

TEST(ShmTransportTest, RejectsBadOptions) {
  std::unique_ptr<Transport> transport;
  EXPECT_EQ(CreateShmTransport(Options(2, 2), &transport).code(), chorusInvalidArgument);
  ShmTuning tiny;
  tiny.ring_bytes = 4096;
  EXPECT_EQ(CreateShmTransport(Options(0, 2), &transport, tiny).code(), chorusInvalidArgument);
}

TEST(HostIdentityTest, NamesKernelAndNetworkNamespace) {
  const std::string identity = HostIdentity();
  EXPECT_NE(identity.find("/net:["), std::string::npos) << identity;
  EXPECT_EQ(identity, HostIdentity());
  EXPECT_EQ(identity.find(' '), std::string::npos) << identity;
}

}  // namespace
}  // namespace chorus
