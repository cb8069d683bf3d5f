// ShmBoard (transports/shm/shm_board.h): publish and read in place over
// ranks as threads and as forked processes, thousands of rounds (the two
// slots wrap around many times) of 0 bytes to a whole slot, alike or
// different per rank, a third of them in line mode, and every way a wait
// ends early: a peer that dies or shuts down, a mismatched size (in either
// mode), the abort flag, the timeout.
#include <signal.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "tests/transports/shm_test_util.h"
#include "transports/shm/shm_board.h"
#include "transports/shm/shm_transport.h"

namespace chorus {
namespace {

using namespace shm_test;
using Clock = std::chrono::steady_clock;

// What a rank runs once connected; returns "" or what went wrong.
using BoardBody = std::function<std::string(int rank, ShmTransport* transport, shm::ShmBoard* board)>;

uint8_t PayloadByte(int rank, uint64_t round, size_t index) {
  return static_cast<uint8_t>(rank * 37 + round * 11 + index * 3 + (index >> 8));
}

// Payload size of `rank`'s round: from 0 bytes to the whole slot; most
// rounds alike on every rank, some mid-size, and some different per rank
// (as the slices of a two-phase board allreduce).
size_t RoundBytes(uint64_t round, int rank) {
  if (round % 7 == 0) return shm::kBoardPayloadBytes;
  if (round % 11 == 0) return 4096 + (round * 977) % (shm::kBoardPayloadBytes - 4096);
  if (round % 5 == 0) return static_cast<size_t>(rank) * 64 + round % 3;
  return 1 + (round * 13) % 200;
}

// Whether every rank sends `round` in line mode (alike on every rank: only
// rounds whose sizes all fit the lines).
bool LineRound(uint64_t round) { return round % 3 == 1 && round % 7 != 0 && round % 11 != 0; }

// Every rank publishes a pattern per round and checks every rank's slot,
// its own included; every third round in line mode, so that line rounds
// follow and precede contiguous ones of other sizes in the same slot.
std::string ExchangeRounds(int rank, shm::ShmBoard* board, uint64_t rounds) {
  std::atomic<bool> abort{false};
  std::vector<uint8_t> mine(shm::kBoardLinesMaxBytes), lines(shm::kBoardLinesMaxBytes);
  for (uint64_t round = 1; round <= rounds; ++round) {
    const size_t bytes = RoundBytes(round, rank);
    const bool line_round = LineRound(round);
    uint8_t* outbox = line_round ? mine.data() : board->OutboxFor(round);
    for (size_t i = 0; i < bytes; ++i) outbox[i] = PayloadByte(rank, round, i);
    if (line_round) {
      board->PublishLines(round, mine.data(), bytes);
    } else {
      board->Publish(round, bytes);
    }
    for (int peer = 0; peer < board->nranks(); ++peer) {
      const uint8_t* payload = nullptr;
      const size_t peer_bytes = RoundBytes(round, peer);
      Status status = line_round ? board->AwaitLines(peer, round, peer_bytes, &abort, kTestTimeoutMs, lines.data())
                                 : board->Await(peer, round, peer_bytes, &abort, kTestTimeoutMs, &payload);
      if (line_round) payload = lines.data();
      if (!status.ok()) return StrCat("round ", round, ": ", status.message());
      for (size_t i = 0; i < peer_bytes; ++i) {
        if (payload[i] != PayloadByte(peer, round, i)) {
          return StrCat("round ", round, ": byte ", i, " of rank ", peer, "'s slot is wrong");
        }
      }
    }
  }
  return "";
}

// Connected transports, ranks as threads of this process.
std::vector<std::unique_ptr<Transport>> ConnectThreads(int nranks,
                                                       std::vector<std::vector<std::string>> addresses = {}) {
  std::vector<std::unique_ptr<Transport>> transports(nranks);
  std::vector<std::string> all(nranks);
  for (int rank = 0; rank < nranks; ++rank) {
    EXPECT_TRUE(CreateShmTransport(Options(rank, nranks), &transports[rank]).ok());
    all[rank] = transports[rank]->LocalAddress();
  }
  if (addresses.empty()) addresses.assign(nranks, all);
  for (auto& row : addresses) {
    for (int rank = 0; rank < nranks; ++rank) {
      if (!row[rank].empty()) row[rank] = all[rank];
    }
  }
  std::vector<std::thread> threads;
  for (int rank = 0; rank < nranks; ++rank) {
    threads.emplace_back([&, rank] {
      Status status = transports[rank]->Connect(addresses[rank], Deadline::AfterMs(kTestTimeoutMs));
      EXPECT_TRUE(status.ok()) << status.message();
    });
  }
  for (std::thread& thread : threads) thread.join();
  return transports;
}

std::vector<std::string> RunOnThreads(int nranks, const BoardBody& body) {
  std::vector<std::unique_ptr<Transport>> transports = ConnectThreads(nranks);
  std::vector<std::string> errors(nranks);
  std::vector<std::thread> threads;
  for (int rank = 0; rank < nranks; ++rank) {
    threads.emplace_back([&, rank] {
      auto* shm = static_cast<ShmTransport*>(transports[rank].get());
      if (shm->SharedBoard() == nullptr) {
        errors[rank] = "no board";
        return;
      }
      errors[rank] = body(rank, shm, shm->SharedBoard());
      if (!errors[rank].empty()) shm->Shutdown();  // peers fail now
    });
  }
  for (std::thread& thread : threads) thread.join();
  return errors;
}

// Ranks as forked processes; returns each rank's message ("" = passed).
class ProcessBoard {
 public:
  static constexpr int kMaxRanks = 4;
  struct Shared {
    std::atomic<int> created;
    char addresses[kMaxRanks][512];
    char messages[kMaxRanks][512];
  };

  ProcessBoard() {
    void* mapped = ::mmap(nullptr, sizeof(Shared), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    shared_ = mapped == MAP_FAILED ? nullptr : new (mapped) Shared();
  }
  ~ProcessBoard() {
    for (pid_t pid : pids_) {
      if (pid > 0 && ::waitpid(pid, nullptr, WNOHANG) == 0) {
        ::kill(pid, SIGKILL);
        ::waitpid(pid, nullptr, 0);
      }
    }
    if (shared_ != nullptr) ::munmap(shared_, sizeof(Shared));
  }

  std::vector<std::string> Run(int nranks, const BoardBody& body) {
    std::fflush(nullptr);
    pids_.assign(nranks, -1);
    for (int rank = 0; rank < nranks; ++rank) {
      const pid_t pid = ::fork();
      if (pid == 0) ::_exit(RunRank(rank, nranks, body));
      pids_[rank] = pid;
    }
    std::vector<std::string> results(nranks);
    // Each wait inside has its own deadline; this only backs them up, with
    // room for thousands of rounds on a loaded host under a sanitizer.
    const Clock::time_point give_up = Clock::now() + std::chrono::milliseconds(6 * kTestTimeoutMs);
    for (int rank = 0; rank < nranks; ++rank) {
      int status = 0;
      while (::waitpid(pids_[rank], &status, WNOHANG) == 0) {
        if (Clock::now() >= give_up) {
          ::kill(pids_[rank], SIGKILL);
          ::waitpid(pids_[rank], &status, 0);
          break;
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
      }
      results[rank] = WIFEXITED(status) && WEXITSTATUS(status) == 0
                          ? std::string()
                          : StrCat("exit status ", status, ": ", shared_->messages[rank]);
      pids_[rank] = -1;
    }
    return results;
  }

 private:
  int RunRank(int rank, int nranks, const BoardBody& body) {
    auto fail = [&](const std::string& message) {
      std::snprintf(shared_->messages[rank], sizeof(shared_->messages[rank]), "%s", message.c_str());
      return 1;
    };
    std::unique_ptr<Transport> transport;
    Status status = CreateShmTransport(Options(rank, nranks), &transport);
    if (!status.ok()) return fail(status.message());
    std::snprintf(shared_->addresses[rank], sizeof(shared_->addresses[rank]), "%s", transport->LocalAddress().c_str());
    shared_->created.fetch_add(1);
    const Deadline deadline = Deadline::AfterMs(kTestTimeoutMs);
    while (shared_->created.load() < nranks && !deadline.Expired()) ::usleep(100);
    std::vector<std::string> addresses(nranks);
    for (int r = 0; r < nranks; ++r) addresses[r] = shared_->addresses[r];
    status = transport->Connect(addresses, deadline);
    if (!status.ok()) return fail(status.message());
    auto* shm = static_cast<ShmTransport*>(transport.get());
    if (shm->SharedBoard() == nullptr) return fail("no board");
    const std::string error = body(rank, shm, shm->SharedBoard());
    if (!error.empty()) return fail(error);
    return 0;
  }

  Shared* shared_ = nullptr;
  std::vector<pid_t> pids_;
};

void ExpectAllPassed(const std::vector<std::string>& errors) {
  for (size_t rank = 0; rank < errors.size(); ++rank) EXPECT_EQ(errors[rank], "") << "rank " << rank;
}

TEST(ShmBoardTest, ThreadsExchangeThousandsOfRounds) {
  for (int nranks : {1, 2, 3, 4}) {
    SCOPED_TRACE(StrCat(nranks, " ranks"));
    ExpectAllPassed(RunOnThreads(
        nranks, [](int rank, ShmTransport*, shm::ShmBoard* board) { return ExchangeRounds(rank, board, 3000); }));
  }
}

TEST(ShmBoardTest, ProcessesExchangeThousandsOfRounds) {
  for (int nranks : {2, 4}) {
    SCOPED_TRACE(StrCat(nranks, " ranks"));
    ProcessBoard processes;
    ExpectAllPassed(processes.Run(
        nranks, [](int rank, ShmTransport*, shm::ShmBoard* board) { return ExchangeRounds(rank, board, 3000); }));
  }
}

// Rank 2 is not reachable over shm from ranks 0 and 1: nobody gets a board.
TEST(ShmBoardTest, NoBoardUnlessEveryRankIsConnected) {
  std::vector<std::vector<std::string>> addresses = {{"x", "x", ""}, {"x", "x", ""}, {"", "", "x"}};
  std::vector<std::unique_ptr<Transport>> transports = ConnectThreads(3, addresses);
  for (int rank = 0; rank < 3; ++rank) {
    EXPECT_EQ(static_cast<ShmTransport*>(transports[rank].get())->SharedBoard(), nullptr) << "rank " << rank;
  }
}

// Rank 1 publishes round 1 and exits: round 1 still reads, round 2 fails
// long before the 20 s timeout.
TEST(ShmBoardTest, PeerDeathFailsTheWaitBeforeTheDeadline) {
  ProcessBoard processes;
  ExpectAllPassed(processes.Run(2, [](int rank, ShmTransport*, shm::ShmBoard* board) -> std::string {
    board->OutboxFor(1)[0] = static_cast<uint8_t>(rank);
    board->Publish(1, 1);
    if (rank == 1) ::_exit(0);  // no Shutdown: the waiter must notice the death
    std::atomic<bool> abort{false};
    const uint8_t* payload = nullptr;
    Status status = board->Await(1, 1, 1, &abort, kTestTimeoutMs, &payload);
    if (!status.ok() || payload[0] != 1) return StrCat("round 1: ", status.message());
    const Clock::time_point start = Clock::now();
    status = board->Await(1, 2, 1, &abort, kTestTimeoutMs, &payload);
    const auto waited = std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - start).count();
    if (status.ok()) return "round 2 succeeded";
    if (status.code() != chorusRemoteError || status.message().find("died") == std::string::npos) {
      return StrCat("unexpected error: ", status.message());
    }
    if (waited > 2000) return StrCat("noticed the death after ", waited, " ms");
    return "";
  }));
}

TEST(ShmBoardTest, PeerShutdownFailsTheWait) {
  std::vector<std::string> errors = RunOnThreads(2, [](int rank, ShmTransport* transport, shm::ShmBoard* board) {
    if (rank == 1) {
      std::this_thread::sleep_for(std::chrono::milliseconds(30));  // rank 0 is asleep by now
      transport->Shutdown();
      return std::string();
    }
    std::atomic<bool> abort{false};
    const uint8_t* payload = nullptr;
    const Clock::time_point start = Clock::now();
    Status status = board->Await(1, 1, 8, &abort, kTestTimeoutMs, &payload);
    const auto waited = std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - start).count();
    if (status.ok() || status.message().find("shut down") == std::string::npos) {
      return StrCat("expected a shutdown error, got '", status.message(), "'");
    }
    return waited < 2000 ? std::string() : StrCat("took ", waited, " ms");
  });
  ExpectAllPassed(errors);
}

// In line mode too: the stamps carry the size, so the wait goes on to the
// round word and its size check instead of taking lines of another size.
TEST(ShmBoardTest, MismatchedSizeInLineModeIsAnError) {
  std::vector<std::string> errors = RunOnThreads(2, [](int rank, ShmTransport*, shm::ShmBoard* board) {
    const size_t bytes = rank == 0 ? 200 : 256;
    std::vector<uint8_t> payload(bytes, 7), got(shm::kBoardLinesMaxBytes);
    board->PublishLines(1, payload.data(), bytes);
    std::atomic<bool> abort{false};
    Status status = board->AwaitLines(1 - rank, 1, bytes, &abort, kTestTimeoutMs, got.data());
    if (status.ok() || status.code() != chorusInvalidUsage) {
      return StrCat("expected invalid usage, got '", status.message(), "'");
    }
    return std::string();
  });
  ExpectAllPassed(errors);
}

TEST(ShmBoardTest, MismatchedSizeIsAnError) {
  std::vector<std::string> errors = RunOnThreads(2, [](int rank, ShmTransport*, shm::ShmBoard* board) {
    const size_t bytes = rank == 0 ? 8 : 16;
    board->Publish(1, bytes);
    std::atomic<bool> abort{false};
    const uint8_t* payload = nullptr;
    Status status = board->Await(1 - rank, 1, bytes, &abort, kTestTimeoutMs, &payload);
    if (status.ok() || status.code() != chorusInvalidUsage) {
      return StrCat("expected invalid usage, got '", status.message(), "'");
    }
    return std::string();
  });
  ExpectAllPassed(errors);
}

TEST(ShmBoardTest, AbortAndTimeoutEndTheWait) {
  std::vector<std::string> errors = RunOnThreads(2, [](int rank, ShmTransport*, shm::ShmBoard* board) {
    if (rank == 1) return std::string();  // never publishes
    const uint8_t* payload = nullptr;
    std::atomic<bool> abort{false};
    Clock::time_point start = Clock::now();
    Status status = board->Await(1, 1, 8, &abort, 50, &payload);
    auto waited = std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - start).count();
    if (status.code() != chorusTimeout || waited < 50 || waited > 2000) {
      return StrCat("timeout: '", status.message(), "' after ", waited, " ms");
    }
    std::thread aborter([&] {
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
      abort.store(true);
    });
    start = Clock::now();
    status = board->Await(1, 1, 8, &abort, kTestTimeoutMs, &payload);
    waited = std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - start).count();
    aborter.join();
    if (status.ok() || status.message().find("aborted") == std::string::npos || waited > 2000) {
      return StrCat("abort: '", status.message(), "' after ", waited, " ms");
    }
    return std::string();
  });
  ExpectAllPassed(errors);
}

}  // namespace
}  // namespace chorus
