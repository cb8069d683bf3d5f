// ShmTransport with ranks as forked processes: the CMA path, the ring
// fallback, dead and departing peers, and no /dev/shm leftovers.
#include <signal.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <functional>
#include <memory>
#include <thread>

#include <gtest/gtest.h>

#include "base/shared_heap.h"
#include "tests/transports/shm_test_util.h"
#include "transports/shm/shm_transport.h"

namespace chorus {
namespace {

using namespace shm_test;
using Clock = std::chrono::steady_clock;

constexpr int kMaxRanks = 4;

// Shared between the test process and its rank processes.
struct Board {
  std::atomic<int> created;
  std::atomic<int> connected;
  std::atomic<int64_t> event_ns;  // CLOCK_MONOTONIC of the test's kill/shutdown
  char addresses[kMaxRanks][512];
  char messages[kMaxRanks][1024];  // a rank's error ("" = passed) or note
};

int64_t NowNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now().time_since_epoch()).count();
}

// What a rank process runs after Connect; returns an error message or "".
using RankBody = std::function<std::string(int rank, Transport* transport, Board* board)>;

class ProcessRanks {
 public:
  ProcessRanks() {
    void* mapped = ::mmap(nullptr, sizeof(Board), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    board_ = mapped == MAP_FAILED ? nullptr : new (mapped) Board();
  }
  ~ProcessRanks() {
    for (pid_t pid : pids_) {
      if (pid > 0) {
        ::kill(pid, SIGKILL);
        ::waitpid(pid, nullptr, 0);
      }
    }
    if (board_ != nullptr) ::munmap(board_, sizeof(Board));
  }

  Board* board() const { return board_; }
  pid_t pid(int rank) const { return pids_[rank]; }

  void Start(int nranks, const ShmTuning& tuning, const RankBody& body) {
    nranks_ = nranks;
    pids_.assign(nranks, -1);
    for (int rank = 0; rank < nranks; ++rank) {
      const pid_t pid = ::fork();
      if (pid == 0) ::_exit(RunRank(rank, tuning, body));
      pids_[rank] = pid;
    }
  }

  void WaitConnected() const {
    const Deadline deadline = Deadline::AfterMs(kTestTimeoutMs);
    while (board_->connected.load() < nranks_ && !deadline.Expired()) {
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
  }

  // Reaps `rank` (bounded) and returns its exit code, or -1 (killed/timeout).
  // Every wait of a rank has its own deadline; this bound only backs them up,
  // with room for a whole exchange on a loaded host under a sanitizer.
  int Reap(int rank) {
    const Deadline deadline = Deadline::AfterMs(6 * kTestTimeoutMs);
    while (!deadline.Expired()) {
      int status = 0;
      if (::waitpid(pids_[rank], &status, WNOHANG) == pids_[rank]) {
        pids_[rank] = -1;
        return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    return -1;
  }

  // Reaps every rank and expects each to have passed.
  void ExpectAllPassed() {
    for (int rank = 0; rank < nranks_; ++rank) {
      EXPECT_EQ(Reap(rank), 0) << "rank " << rank << ": " << board_->messages[rank];
    }
  }

  void ExpectNoSegmentsLeft() const {
    for (int rank = 0; rank < nranks_; ++rank) {
      const std::string name = SegmentName(board_->addresses[rank]);
      EXPECT_FALSE(name.empty()) << "rank " << rank;
      EXPECT_FALSE(SegmentExists(name)) << name;
    }
  }

 private:
  int RunRank(int rank, const ShmTuning& tuning, const RankBody& body) {
    std::string result;
    {
      std::unique_ptr<Transport> transport;
      Status status = CreateShmTransport(Options(rank, nranks_), &transport, tuning);
      if (status.ok()) {
        std::snprintf(board_->addresses[rank], sizeof(board_->addresses[rank]), "%s",
                      transport->LocalAddress().c_str());
        board_->created.fetch_add(1);
        const Deadline deadline = Deadline::AfterMs(kTestTimeoutMs);
        while (board_->created.load() < nranks_ && !deadline.Expired()) {
          std::this_thread::sleep_for(std::chrono::microseconds(100));
        }
        std::vector<std::string> addresses(board_->addresses, board_->addresses + nranks_);
        status = transport->Connect(addresses, deadline);
      }
      if (status.ok()) {
        board_->connected.fetch_add(1);
        result = body(rank, transport.get(), board_);
      } else {
        result = "set-up: " + status.message();
      }
    }
    std::snprintf(board_->messages[rank], sizeof(board_->messages[rank]), "%s", result.c_str());
    return result.empty() || result[0] == '#' ? 0 : 1;  // '#': a note, not an error
  }

  Board* board_ = nullptr;
  int nranks_ = 0;
  std::vector<pid_t> pids_;
};

// Every rank sends each size to every other rank and checks what it gets,
// then which path carried it.
std::string ExchangeBody(int rank, Transport* transport, int nranks, const std::vector<size_t>& sizes,
                         bool expect_pulls) {
  ExchangeCounts counts;
  const std::string error = ExchangeWithEveryPeer(transport, rank, nranks, sizes, /*first_tag=*/0, &counts);
  if (!error.empty()) return error;
  auto* shm = static_cast<ShmTransport*>(transport);
  const shm::ShmStats stats = shm->stats();
  const bool cma = shm->pull_method(rank == 0 ? 1 : 0) == shm::PullMethod::kCma;
  if (stats.memcpy_pulls != 0) return "memcpy pull between processes";
  if (expect_pulls && cma && stats.cma_pulls != counts.large) {
    return StrCat(stats.cma_pulls, " CMA pulls, expected ", counts.large);
  }
  if (!expect_pulls && stats.cma_pulls != 0) return "CMA used although single copy is off";
  if (stats.eager_messages + stats.cma_pulls != counts.messages) return "messages missing from the statistics";
  if (expect_pulls && !cma) return "# CMA not permitted here: large messages went through the ring";
  return "";
}

TEST(ShmProcessTest, TwoProcessesExchangeEverySizeWithCma) {
  ProcessRanks ranks;
  ASSERT_NE(ranks.board(), nullptr);
  const std::vector<size_t> sizes = {0, 1, 4096, 1 << 20, 64 << 20};
  ShmTuning pulling;
  pulling.pull_from_processes = true;
  ranks.Start(2, pulling, [&](int rank, Transport* transport, Board*) {
    return ExchangeBody(rank, transport, 2, sizes, /*expect_pulls=*/true);
  });
  ranks.ExpectAllPassed();
  ranks.ExpectNoSegmentsLeft();
  if (ranks.board()->messages[0][0] == '#') std::printf("note: %s\n", ranks.board()->messages[0]);
}

// By default a process maps its peers' shared heaps and nothing else of
// theirs: large messages from ordinary memory still take the ring.
TEST(ShmProcessTest, ByDefaultProcessesExchangeLargeMessagesOfOrdinaryMemoryThroughTheRing) {
  ProcessRanks ranks;
  ASSERT_NE(ranks.board(), nullptr);
  const std::vector<size_t> sizes = {0, 1, 4096, 1 << 20, 3 << 20};
  ranks.Start(2, ShmTuning(), [&](int rank, Transport* transport, Board*) -> std::string {
    const shm::PullMethod method = static_cast<ShmTransport*>(transport)->pull_method(1 - rank);
    if (method != shm::PullMethod::kHeap && method != shm::PullMethod::kNone) return "pulls ordinary memory";
    const std::string error = ExchangeBody(rank, transport, 2, sizes, /*expect_pulls=*/false);
    if (!error.empty()) return error;
    if (static_cast<ShmTransport*>(transport)->stats().heap_pulls != 0) return "pulled ordinary memory";
    return "";
  });
  ranks.ExpectAllPassed();
}

// Sends from blocks of the sender's shared heap: the receiver maps that
// heap at Connect and takes every message of kSingleCopyThreshold bytes or
// more straight out of the block, into a plain receive or through its
// combiner in one piece; smaller ones take the ring.
std::string HeapBody(int rank, Transport* transport, const std::vector<size_t>& sizes) {
  const int peer = 1 - rank;
  auto* shm = static_cast<ShmTransport*>(transport);
  if (shm->pull_method(peer) != shm::PullMethod::kHeap) return "the peer's heap is not mapped here";
  SharedHeap* heap = SharedHeap::Process();
  if (heap == nullptr) return "no shared heap";
  Endpoint* endpoint = transport->endpoint(peer);
  std::vector<uint8_t*> blocks;
  std::vector<std::vector<uint8_t>> plain(sizes.size());
  std::vector<std::unique_ptr<AddingCombiner>> combiners;
  std::vector<TransferRequest> requests;
  requests.reserve(4 * sizes.size());
  std::vector<TransferRequest*> pending;
  uint64_t large = 0;
  for (size_t k = 0; k < sizes.size(); ++k) {
    auto* block = static_cast<uint8_t*>(heap->Allocate(sizes[k]));
    if (block == nullptr) return "heap block refused";
    blocks.push_back(block);
    for (size_t i = 0; i < sizes[k]; ++i) block[i] = Pattern(rank, peer, i + k);
    large += 2 * (sizes[k] >= shm::kSingleCopyThreshold);
    requests.push_back(Request(block, sizes[k], 2 * k));
    requests.push_back(Request(block, sizes[k], 2 * k + 1));
    plain[k].assign(sizes[k], 0);
    requests.push_back(Request(plain[k].data(), sizes[k], 2 * k));
    combiners.push_back(std::make_unique<AddingCombiner>(sizes[k], static_cast<uint8_t>(k)));
    requests.push_back(combiners.back()->Receive(2 * k + 1));
    for (size_t r = requests.size() - 4; r < requests.size(); ++r) {
      const bool send = r % 4 < 2;
      Status posted = send ? endpoint->PostSend(&requests[r]) : endpoint->PostRecv(&requests[r]);
      if (!posted.ok()) return posted.message();
      pending.push_back(&requests[r]);
    }
  }
  Status status = WaitAll(transport, pending);
  if (!status.ok()) return status.message();
  for (size_t k = 0; k < sizes.size(); ++k) {
    if (CountWrong(plain[k], peer, rank, k) != 0) return StrCat("message of ", sizes[k], " bytes: wrong bytes");
    const std::string wrong =
        combiners[k]->Check(peer, rank, k, MaxCombinePiece(sizes[k], shm::PullMethod::kHeap, true, 0));
    if (!wrong.empty()) return StrCat("combined message of ", sizes[k], " bytes: ", wrong);
    heap->Free(blocks[k]);
  }
  const shm::ShmStats stats = shm->stats();
  if (stats.heap_pulls != large) return StrCat(stats.heap_pulls, " heap pulls, expected ", large);
  if (stats.cma_pulls != 0 || stats.memcpy_pulls != 0) return "pulled by another method";
  if (stats.eager_messages + stats.heap_pulls != 2 * sizes.size()) return "messages missing from the statistics";
  return "";
}

TEST(ShmProcessTest, TwoProcessesPullLargeMessagesFromTheSendersSharedHeap) {
  ProcessRanks ranks;
  ASSERT_NE(ranks.board(), nullptr);
  const std::vector<size_t> sizes = {1, 4096, 65535, 65536, 200000, (1 << 20) + 3, 16 << 20};
  ranks.Start(2, ShmTuning(), [&](int rank, Transport* transport, Board*) { return HeapBody(rank, transport, sizes); });
  ranks.ExpectAllPassed();
  ranks.ExpectNoSegmentsLeft();
}

// Without the heap (CHORUS_SHARED_HEAP=0 in a peer, or /proc closed to us)
// heap blocks are ordinary memory: through the ring.
TEST(ShmProcessTest, WithoutHeapPullsHeapBlocksTakeTheRing) {
  ProcessRanks ranks;
  ASSERT_NE(ranks.board(), nullptr);
  ShmTuning no_heap;
  no_heap.pull_from_heap = false;
  ranks.Start(2, no_heap, [&](int rank, Transport* transport, Board*) -> std::string {
    auto* shm = static_cast<ShmTransport*>(transport);
    if (shm->pull_method(1 - rank) != shm::PullMethod::kNone) return "pulls although heap pulls are off";
    SharedHeap* heap = SharedHeap::Process();
    if (heap == nullptr) return "no shared heap";
    const size_t bytes = 3 << 20;
    auto* block = static_cast<uint8_t*>(heap->Allocate(bytes));
    for (size_t i = 0; i < bytes; ++i) block[i] = Pattern(rank, 1 - rank, i);
    std::vector<uint8_t> received(bytes);
    TransferRequest send = Request(block, bytes, 7);
    TransferRequest recv = Request(received.data(), bytes, 7);
    if (!transport->endpoint(1 - rank)->PostSend(&send).ok()) return "PostSend failed";
    if (!transport->endpoint(1 - rank)->PostRecv(&recv).ok()) return "PostRecv failed";
    Status status = WaitAll(transport, {&send, &recv});
    if (!status.ok()) return status.message();
    if (CountWrong(received, 1 - rank, rank, 0) != 0) return "wrong bytes";
    if (shm->stats().heap_pulls != 0 || shm->stats().eager_messages != 1) return "not through the ring";
    heap->Free(block);
    return "";
  });
  ranks.ExpectAllPassed();
}

TEST(ShmProcessTest, ThreeProcessesExchangeThroughTheRing) {
  ProcessRanks ranks;
  ASSERT_NE(ranks.board(), nullptr);
  ShmTuning ring_only;
  ring_only.single_copy = false;
  const std::vector<size_t> sizes = {0, 1, 4096, 1 << 20, 3 << 20};
  ranks.Start(3, ring_only, [&](int rank, Transport* transport, Board*) {
    return ExchangeBody(rank, transport, 3, sizes, /*expect_pulls=*/false);
  });
  ranks.ExpectAllPassed();
  ranks.ExpectNoSegmentsLeft();
}

// Both ranks send every size; every receive combines. Checks the values,
// the pieces and that the pulled path (CMA) or the ring carried them.
std::string CombineBody(int rank, Transport* transport, const std::vector<size_t>& sizes, size_t piece_bytes,
                        bool expect_pulls) {
  const int peer = 1 - rank;
  Endpoint* endpoint = transport->endpoint(peer);
  if (!endpoint->combine_on_receive()) return "endpoint does not combine";
  std::vector<std::vector<uint8_t>> sends;
  std::vector<std::unique_ptr<AddingCombiner>> combiners;
  std::vector<TransferRequest> requests;
  requests.reserve(2 * sizes.size());
  std::vector<TransferRequest*> pending;
  for (size_t k = 0; k < sizes.size(); ++k) {
    sends.emplace_back(sizes[k]);
    FillPattern(&sends.back(), rank, peer, k);
    requests.push_back(Request(sends.back().data(), sizes[k], k));
    if (!endpoint->PostSend(&requests.back()).ok()) return "PostSend failed";
    pending.push_back(&requests.back());
    combiners.push_back(std::make_unique<AddingCombiner>(sizes[k], static_cast<uint8_t>(k)));
    requests.push_back(combiners.back()->Receive(k));
    if (!endpoint->PostRecv(&requests.back()).ok()) return "PostRecv failed";
    pending.push_back(&requests.back());
  }
  Status status = WaitAll(transport, pending);
  if (!status.ok()) return status.message();
  auto* shm = static_cast<ShmTransport*>(transport);
  const shm::PullMethod method = shm->pull_method(peer);
  uint64_t large = 0;
  for (size_t k = 0; k < sizes.size(); ++k) {
    const bool pulled = expect_pulls && method == shm::PullMethod::kCma;
    const std::string wrong =
        combiners[k]->Check(peer, rank, k, MaxCombinePiece(sizes[k], method, pulled, piece_bytes));
    if (!wrong.empty()) return StrCat("message of ", sizes[k], " bytes: ", wrong);
    large += sizes[k] >= shm::kSingleCopyThreshold;
  }
  const shm::ShmStats stats = shm->stats();
  if (stats.combined_messages != sizes.size()) {
    return StrCat(stats.combined_messages, " combined, expected ", sizes.size());
  }
  if (expect_pulls && method == shm::PullMethod::kCma && stats.cma_pulls != large) return "large messages not pulled";
  if (expect_pulls && method != shm::PullMethod::kCma) return "# CMA not permitted here: combined from the ring";
  return "";
}

const std::vector<size_t> kCombineSizes = {0, 1, 4096, 65535, 65536, 200000, (1 << 20) + 3, 16 << 20};

TEST(ShmProcessTest, TwoProcessesCombineThroughCmaPieces) {
  ProcessRanks ranks;
  ASSERT_NE(ranks.board(), nullptr);
  ShmTuning tuning;
  tuning.pull_from_processes = true;
  tuning.combine_piece_bytes = 64 * 1000;  // boundaries off every power of two
  ranks.Start(2, tuning, [&](int rank, Transport* transport, Board*) {
    return CombineBody(rank, transport, kCombineSizes, tuning.combine_piece_bytes, /*expect_pulls=*/true);
  });
  ranks.ExpectAllPassed();
  ranks.ExpectNoSegmentsLeft();
  if (ranks.board()->messages[0][0] == '#') std::printf("note: %s\n", ranks.board()->messages[0]);
}

TEST(ShmProcessTest, TwoProcessesCombineFromTheRing) {
  ProcessRanks ranks;
  ASSERT_NE(ranks.board(), nullptr);
  ShmTuning ring_only;
  ring_only.single_copy = false;
  ranks.Start(2, ring_only, [&](int rank, Transport* transport, Board*) {
    return CombineBody(rank, transport, kCombineSizes, ring_only.combine_piece_bytes, /*expect_pulls=*/false);
  });
  ranks.ExpectAllPassed();
  ranks.ExpectNoSegmentsLeft();
}

// Rank 1 waits for a message rank 0 never sends; the test then ends rank 0
// (`end_rank0`) and rank 1 must fail naming it within a second.
void ExpectPeerLossDetected(const std::function<void(ProcessRanks&)>& end_rank0, const char* expected_words,
                            bool rank0_shuts_down) {
  ProcessRanks ranks;
  ASSERT_NE(ranks.board(), nullptr);
  ranks.Start(2, ShmTuning(), [&](int rank, Transport* transport, Board* board) -> std::string {
    if (rank == 0) {
      if (rank0_shuts_down) {
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
        board->event_ns.store(NowNs());
        transport->Shutdown();
      } else {
        std::this_thread::sleep_for(std::chrono::seconds(30));  // killed before this ends
      }
      return "";
    }
    uint8_t byte = 0;
    TransferRequest recv = Request(&byte, 1, 1);
    if (!transport->endpoint(0)->PostRecv(&recv).ok()) return "PostRecv failed";
    Status status = WaitAll(transport, {&recv}, 10000);
    const int64_t detected_after_ms = (NowNs() - board->event_ns.load()) / 1000000;
    if (status.code() != chorusRemoteError) return "expected chorusRemoteError, got: " + status.message();
    if (status.message().find(StrCat("peer 0 (pid ")) == std::string::npos ||
        status.message().find(expected_words) == std::string::npos) {
      return "message does not name the peer: " + status.message();
    }
    if (board->event_ns.load() == 0 || detected_after_ms > 1000) {
      return StrCat("detected after ", detected_after_ms, " ms: ", status.message());
    }
    return "";
  });
  ranks.WaitConnected();
  end_rank0(ranks);
  EXPECT_EQ(ranks.Reap(1), 0) << ranks.board()->messages[1];
  ranks.Reap(0);
  ranks.ExpectNoSegmentsLeft();
}

TEST(ShmProcessTest, KilledPeerIsDetectedWithinOneSecond) {
  ExpectPeerLossDetected(
      [](ProcessRanks& ranks) {
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
        ranks.board()->event_ns.store(NowNs());
        ::kill(ranks.pid(0), SIGKILL);  // not reaped until rank 1 is done: a zombie must count as dead
      },
      "died", /*rank0_shuts_down=*/false);
}

TEST(ShmProcessTest, PeerShutdownIsDetectedWithinOneSecond) {
  ExpectPeerLossDetected([](ProcessRanks&) {}, "shut down", /*rank0_shuts_down=*/true);
}

// Not an assertion: one-way bandwidth of a 64 MiB message between processes.
double MeasureGBps(const ShmTuning& tuning, std::string* note) {
  constexpr size_t kBytes = 64 << 20;
  constexpr int kRounds = 4;
  ProcessRanks ranks;
  if (ranks.board() == nullptr) return 0;
  ranks.Start(2, tuning, [&](int rank, Transport* transport, Board*) -> std::string {
    std::vector<uint8_t> buffer(kBytes, static_cast<uint8_t>(rank));
    double best = 0;
    for (int round = 0; round < kRounds; ++round) {
      uint8_t token = 0;  // rank 1 says "ready" so the clock starts at a common point
      TransferRequest ready = Request(&token, 1, 1);
      Status status = rank == 1 ? transport->endpoint(0)->PostSend(&ready) : transport->endpoint(1)->PostRecv(&ready);
      if (status.ok()) status = WaitAll(transport, {&ready});
      const Clock::time_point start = Clock::now();
      TransferRequest data = Request(buffer.data(), kBytes, 2);
      if (status.ok()) {
        status = rank == 0 ? transport->endpoint(1)->PostSend(&data) : transport->endpoint(0)->PostRecv(&data);
      }
      if (status.ok()) status = WaitAll(transport, {&data});
      if (!status.ok()) return status.message();
      const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
      if (kBytes / seconds / 1e9 > best) best = kBytes / seconds / 1e9;
    }
    if (rank == 1) {
      const auto* shm = static_cast<ShmTransport*>(transport);
      return StrCat("# ", best, " ", shm->pull_method(0) == shm::PullMethod::kCma ? "cma" : "ring");
    }
    return "";
  });
  ranks.ExpectAllPassed();
  double gbps = 0;
  char method[16] = {};
  std::sscanf(ranks.board()->messages[1], "# %lf %15s", &gbps, method);
  *note = method;
  return gbps;
}

// Not an assertion: half the round trip of an 8-byte ping-pong.
TEST(ShmProcessTest, PrintsSmallMessageLatency) {
  constexpr int kRoundTrips = 20000;
  ProcessRanks ranks;
  ASSERT_NE(ranks.board(), nullptr);
  ranks.Start(2, ShmTuning(), [&](int rank, Transport* transport, Board*) -> std::string {
    uint64_t value = 0;
    Endpoint* peer = transport->endpoint(1 - rank);
    const Clock::time_point start = Clock::now();
    for (int i = 0; i < kRoundTrips; ++i) {
      TransferRequest ping = Request(&value, sizeof(value), 1), pong = Request(&value, sizeof(value), 2);
      Status status = rank == 0 ? peer->PostSend(&ping) : peer->PostRecv(&ping);
      if (status.ok()) status = WaitAll(transport, {&ping});
      if (status.ok()) status = rank == 0 ? peer->PostRecv(&pong) : peer->PostSend(&pong);
      if (status.ok()) status = WaitAll(transport, {&pong});
      if (!status.ok()) return status.message();
    }
    const double us = std::chrono::duration<double, std::micro>(Clock::now() - start).count();
    return rank == 0 ? StrCat("# ", us / kRoundTrips / 2) : "";
  });
  ranks.ExpectAllPassed();
  std::printf("shm 8-byte one-way latency between 2 processes (ping-pong / 2): %s us\n",
              ranks.board()->messages[0] + 2);
}

TEST(ShmProcessTest, PrintsThroughputOfSixtyFourMiB) {
  std::string single_copy_method, ring_method;
  ShmTuning pulling;
  pulling.pull_from_processes = true;
  const double single_copy = MeasureGBps(pulling, &single_copy_method);
  const double ring = MeasureGBps(ShmTuning(), &ring_method);
  std::printf("shm 64 MiB one-way between 2 processes: pulled (%s) %.2f GB/s, default (%s) %.2f GB/s\n",
              single_copy_method.c_str(), single_copy, ring_method.c_str(), ring);
}

}  // namespace
}  // namespace chorus
