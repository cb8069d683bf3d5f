// Shrink's survivor agreement (bootstrap/shrink.h) with ranks as threads on
// loopback: a rank whose listener is closed counts as dead, whichever rank it
// is; everyone gets the same table and the same derived secret; a stranger
// with another secret is not let in; a live rank that comes after an
// agreement without it is told so by the members, never counts them dead;
// a live member of an earlier agreement is never left out of the next.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "bootstrap/shrink.h"
#include "bootstrap/shrink_protocol.h"
#include "tests/transports/intruders.h"

namespace chorus {
namespace {

constexpr int kTimeoutMs = 3000;

std::vector<std::unique_ptr<RecoveryEndpoint>> MakeEndpoints(int nranks, uint8_t secret_seed) {
  std::vector<std::unique_ptr<RecoveryEndpoint>> endpoints;
  std::vector<std::string> addresses;
  for (int rank = 0; rank < nranks; ++rank) {
    auto endpoint = std::make_unique<RecoveryEndpoint>();
    EXPECT_TRUE(OpenRecoveryListener("=lo", endpoint.get()).ok());
    endpoint->rank = rank;
    endpoint->nranks = nranks;
    for (int i = 0; i < 16; ++i) endpoint->secret[i] = static_cast<uint8_t>(secret_seed + i);
    addresses.push_back(endpoint->address);
    endpoints.push_back(std::move(endpoint));
  }
  for (auto& endpoint : endpoints) endpoint->addresses = addresses;
  return endpoints;
}

struct Agreement {
  Status status;
  ShrinkOutcome outcome;
};

// Runs AgreeOnSurvivors on every rank not in `dead` (whose listeners are
// closed first).
std::vector<Agreement> Shrink(std::vector<std::unique_ptr<RecoveryEndpoint>>& endpoints, const std::vector<int>& dead) {
  for (int rank : dead) endpoints[rank]->listener.Close();
  std::vector<Agreement> results(endpoints.size());
  std::vector<std::thread> threads;
  for (size_t rank = 0; rank < endpoints.size(); ++rank) {
    if (std::count(dead.begin(), dead.end(), static_cast<int>(rank)) > 0) continue;
    threads.emplace_back([&, rank] {
      results[rank].status = AgreeOnSurvivors(*endpoints[rank], Deadline::AfterMs(kTimeoutMs * 3 / 4),
                                              Deadline::AfterMs(kTimeoutMs), &results[rank].outcome);
    });
  }
  for (std::thread& thread : threads) thread.join();
  return results;
}

void ExpectAgreement(const std::vector<Agreement>& results, const std::vector<int>& survivors) {
  for (size_t i = 0; i < survivors.size(); ++i) {
    const Agreement& mine = results[survivors[i]];
    ASSERT_TRUE(mine.status.ok()) << "rank " << survivors[i] << ": " << mine.status.message();
    EXPECT_EQ(mine.outcome.survivors, survivors);
    EXPECT_EQ(mine.outcome.new_rank, static_cast<int>(i));
    const ShrinkOutcome& root = results[survivors[0]].outcome;
    EXPECT_EQ(mine.outcome.id.root_address, root.id.root_address);
    EXPECT_EQ(0, std::memcmp(mine.outcome.id.secret, root.id.secret, 16));
  }
}

TEST(ShrinkAgreementTest, EveryoneAliveKeepsEveryRank) {
  auto endpoints = MakeEndpoints(3, 1);
  ExpectAgreement(Shrink(endpoints, {}), {0, 1, 2});
}

TEST(ShrinkAgreementTest, DeadRankZeroMakesRankOneTheRoot) {
  auto endpoints = MakeEndpoints(4, 2);
  ExpectAgreement(Shrink(endpoints, {0}), {1, 2, 3});
}

TEST(ShrinkAgreementTest, SeveralDeadRanksAnywhere) {
  auto endpoints = MakeEndpoints(5, 3);
  ExpectAgreement(Shrink(endpoints, {0, 2, 4}), {1, 3});
}

TEST(ShrinkAgreementTest, NewSecretDiffersFromTheOldAndBetweenShrinks) {
  auto endpoints = MakeEndpoints(2, 4);
  const std::vector<Agreement> first = Shrink(endpoints, {});
  const std::vector<Agreement> second = Shrink(endpoints, {});
  ASSERT_TRUE(first[0].status.ok() && second[0].status.ok());
  EXPECT_NE(0, std::memcmp(first[0].outcome.id.secret, endpoints[0]->secret, 16));
  EXPECT_NE(0, std::memcmp(first[0].outcome.id.secret, second[0].outcome.id.secret, 16));
}

TEST(ShrinkAgreementTest, AStrangerWithAnotherSecretIsLeftOut) {
  auto endpoints = MakeEndpoints(3, 5);
  endpoints[2]->secret[0] ^= 1;  // rank 2 does not know the secret
  const std::vector<Agreement> results = Shrink(endpoints, {});
  ASSERT_TRUE(results[0].status.ok()) << results[0].status.message();
  ASSERT_TRUE(results[1].status.ok()) << results[1].status.message();
  // Rank 2 is alive (its listener answers) but never authenticates: the root
  // waits for it until the gather deadline, then leaves it out.
  EXPECT_EQ(results[0].outcome.survivors, (std::vector<int>{0, 1}));
  EXPECT_FALSE(results[2].status.ok());
}

TEST(ShrinkAgreementTest, AloneIsItsOwnRoot) {
  auto endpoints = MakeEndpoints(1, 6);
  ExpectAgreement(Shrink(endpoints, {}), {0});
}

// Runs AgreeOnSurvivors with a short timeout on `ranks` only; the others'
// listeners stay open (alive, not taking part).
std::vector<Agreement> ShrinkSome(std::vector<std::unique_ptr<RecoveryEndpoint>>& endpoints,
                                  const std::vector<int>& ranks, int timeout_ms) {
  std::vector<Agreement> results(endpoints.size());
  std::vector<std::thread> threads;
  for (int rank : ranks) {
    threads.emplace_back([&, rank] {
      results[rank].status = AgreeOnSurvivors(*endpoints[rank], Deadline::AfterMs(timeout_ms * 3 / 4),
                                              Deadline::AfterMs(timeout_ms), &results[rank].outcome);
    });
  }
  for (std::thread& thread : threads) thread.join();
  return results;
}

void ExpectLeftOut(const Agreement& result, const std::string& membership) {
  EXPECT_EQ(result.status.code(), chorusRemoteError) << result.status.message();
  EXPECT_NE(result.status.message().find("left out of a shrink that ranks " + membership), std::string::npos)
      << result.status.message();
}

// Strangers queued on every recovery listener since creation (silent ones,
// ones that trickle junk, ones that send a junk handshake) delay no healthy
// shrink: the root authenticates joiners concurrently.
TEST(ShrinkAgreementTest, SilentAndJunkConnectionsDelayNoShrink) {
  auto endpoints = MakeEndpoints(4, 11);
  chorus_test::Intruders intruders;
  for (const auto& endpoint : endpoints) ASSERT_EQ(intruders.Attack(endpoint->address, 6, 3, 3), 12);
  const auto start = std::chrono::steady_clock::now();
  ExpectAgreement(Shrink(endpoints, {}), {0, 1, 2, 3});
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::milliseconds(2000));
}

// The same strangers on the listeners of members answering late ranks (the
// responder) delay no answer.
TEST(ShrinkAgreementTest, SilentAndJunkConnectionsDelayNoAnswerToALateRank) {
  constexpr int kShortMs = 800;
  auto endpoints = MakeEndpoints(3, 12);
  ExpectAgreement(ShrinkSome(endpoints, {0, 1}, kShortMs), {0, 1});
  chorus_test::Intruders intruders;
  ASSERT_EQ(intruders.Attack(endpoints[0]->address, 6, 3, 3), 12);
  const auto start = std::chrono::steady_clock::now();
  ExpectLeftOut(ShrinkSome(endpoints, {2}, kTimeoutMs)[2], "{0,1} completed (told by rank 0)");
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::milliseconds(2000));
}

// Ranks 0 to 3 agree without ranks 4, 5 and 6, which are alive but late.
// A late rank is told so by the lowest member that still holds the endpoint,
// never counts the members dead, and stays left out; a rank that learnt it
// passes it on to later ones below whom every member is gone.
TEST(ShrinkAgreementTest, ALateRankIsToldWhatWasAgreedWithoutIt) {
  constexpr int kShortMs = 800;
  auto endpoints = MakeEndpoints(7, 7);
  ExpectAgreement(ShrinkSome(endpoints, {0, 1, 2, 3}, kShortMs), {0, 1, 2, 3});
  ExpectLeftOut(ShrinkSome(endpoints, {4}, kShortMs)[4], "{0,1,2,3} completed (told by rank 0)");
  endpoints[0].reset();  // rank 0's process ends
  ExpectLeftOut(ShrinkSome(endpoints, {5}, kShortMs)[5], "{0,1,2,3} completed (told by rank 1)");
  for (int rank : {1, 2, 3}) endpoints[rank].reset();
  ExpectLeftOut(ShrinkSome(endpoints, {6}, kShortMs)[6], "{0,1,2,3} completed (told by rank 4)");
  // Asking again changes nothing, at once.
  const auto start = std::chrono::steady_clock::now();
  ExpectLeftOut(ShrinkSome(endpoints, {5}, kShortMs)[5], "{0,1,2,3} completed (told by rank 1)");
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::milliseconds(kShortMs / 2));
}

// Leaving out live ranks needs a majority of the ranks not gone, or half
// with the lowest of them; gone ranks do not count.
TEST(ShrinkAgreementTest, LeavingOutLiveRanksNeedsAMajority) {
  const std::vector<bool> none_gone(4, false);
  EXPECT_TRUE(shrink::CheckMajority({0, 1, 2, 3}, none_gone, 0).ok());
  EXPECT_TRUE(shrink::CheckMajority({1, 2, 3}, none_gone, 1).ok());
  EXPECT_TRUE(shrink::CheckMajority({0, 3}, none_gone, 0).ok());  // half, with rank 0
  const Status half_without_lowest = shrink::CheckMajority({2, 3}, none_gone, 2);
  EXPECT_EQ(half_without_lowest.code(), chorusTimeout);
  EXPECT_NE(half_without_lowest.message().find("ranks {0,1} are alive"), std::string::npos)
      << half_without_lowest.message();
  EXPECT_NE(half_without_lowest.message().find("{2,3}, are not a majority of the 4 ranks"), std::string::npos)
      << half_without_lowest.message();
  EXPECT_EQ(shrink::CheckMajority({3}, none_gone, 3).code(), chorusTimeout);
  // Ranks 0 and 1 gone: {2,3} is everyone left; {3} is half without rank 2.
  const std::vector<bool> two_gone = {true, true, false, false};
  EXPECT_TRUE(shrink::CheckMajority({2, 3}, two_gone, 2).ok());
  EXPECT_TRUE(shrink::CheckMajority({2}, two_gone, 2).ok());
  EXPECT_EQ(shrink::CheckMajority({3}, two_gone, 3).code(), chorusTimeout);
  EXPECT_TRUE(shrink::CheckMajority({0}, {false}, 0).ok());
}

// A late rank whose every lower rank is gone serves as root; it must hear
// from the member above it that it was left out, and tell its joiners.
TEST(ShrinkAgreementTest, ALateRootHearsItWasLeftOut) {
  constexpr int kShortMs = 800;
  auto endpoints = MakeEndpoints(4, 8);
  ExpectAgreement(ShrinkSome(endpoints, {0, 3}, kShortMs), {0, 3});
  endpoints[0].reset();
  const std::vector<Agreement> late = ShrinkSome(endpoints, {1, 2}, kShortMs);
  ExpectLeftOut(late[1], "{0,3} completed (told by rank 3)");
  ExpectLeftOut(late[2], "{0,3} completed (told by rank 1)");
}

// After a shrink of everyone, ranks 1 and 2 shrink the same communicator
// again before rank 0 does: rank 0 tells them to ask again (it is a member,
// not left out), and once it calls they all agree.
TEST(ShrinkAgreementTest, MembersShrinkingAgainWaitForTheLowestRank) {
  auto endpoints = MakeEndpoints(3, 9);
  ExpectAgreement(Shrink(endpoints, {}), {0, 1, 2});
  std::vector<Agreement> results(3);
  std::vector<std::thread> threads;
  for (int rank = 0; rank < 3; ++rank) {
    threads.emplace_back([&, rank] {
      if (rank == 0) std::this_thread::sleep_for(std::chrono::milliseconds(300));
      results[rank].status = AgreeOnSurvivors(*endpoints[rank], Deadline::AfterMs(kTimeoutMs * 3 / 4),
                                              Deadline::AfterMs(kTimeoutMs), &results[rank].outcome);
    });
  }
  for (std::thread& thread : threads) thread.join();
  ExpectAgreement(results, {0, 1, 2});
}

// Rank 0 is alive but silent (stopped, or not calling shrink): its kernel
// accepts connections, nobody answers. The others pass over it halfway to
// their gather deadline and, being a majority, agree without it. When it
// calls alone, the members tell it that it was left out.
TEST(ShrinkAgreementTest, ASilentLowestRankIsLeftOutByAMajority) {
  constexpr int kShortMs = 800;
  auto endpoints = MakeEndpoints(3, 10);
  ExpectAgreement(ShrinkSome(endpoints, {1, 2}, kShortMs), {1, 2});
  // Rank 0 asks both at once; either may tell it.
  ExpectLeftOut(ShrinkSome(endpoints, {0}, kShortMs)[0], "{1,2} completed (told by rank ");
}

// Ranks 0 and 1 of 4 are silent: ranks 2 and 3 are half of the live ranks,
// without the lowest, so they time out saying so instead of forming a
// communicator that ranks 0 and 1 could mirror. Ranks 0 and 1 (half, with
// the lowest) may then agree without them, and tell them so.
TEST(ShrinkAgreementTest, SilentLowerHalfMakesTheOthersTimeOutNotSplit) {
  constexpr int kShortMs = 800;
  auto endpoints = MakeEndpoints(4, 15);
  // Passing over the second silent rank takes another second (kAnswerMs).
  const std::vector<Agreement> upper = ShrinkSome(endpoints, {2, 3}, kTimeoutMs);
  for (int rank : {2, 3}) {
    EXPECT_EQ(upper[rank].status.code(), chorusTimeout) << upper[rank].status.message();
    EXPECT_NE(upper[rank].status.message().find("ranks {0,1} are alive"), std::string::npos)
        << upper[rank].status.message();
  }
  ExpectAgreement(ShrinkSome(endpoints, {0, 1}, kShortMs), {0, 1});
  const std::vector<Agreement> again = ShrinkSome(endpoints, {2, 3}, kShortMs);
  ExpectLeftOut(again[2], "{0,1} completed (told by rank 0)");
  ExpectLeftOut(again[3], "{0,1} completed (told by rank 0)");
}

// A loopback address whose connections never complete: a listener with a
// backlog of 0 holds one connection in its accept queue, never accepted, and
// the kernel drops every further SYN (an unreachable host, as far as a
// connecting rank can tell).
class Blackhole {
 public:
  Blackhole() {
    listener_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t length = sizeof(address);
    if (::bind(listener_, reinterpret_cast<sockaddr*>(&address), sizeof(address)) != 0 || ::listen(listener_, 0) != 0 ||
        ::getsockname(listener_, reinterpret_cast<sockaddr*>(&address), &length) != 0) {
      return;
    }
    filler_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (::connect(filler_, reinterpret_cast<sockaddr*>(&address), sizeof(address)) != 0) return;
    address_ = "127.0.0.1:" + std::to_string(ntohs(address.sin_port));
  }
  ~Blackhole() {
    if (filler_ >= 0) ::close(filler_);
    if (listener_ >= 0) ::close(listener_);
  }
  const std::string& address() const { return address_; }  // empty: could not be set up

 private:
  int listener_ = -1;
  int filler_ = -1;
  std::string address_;
};

// Rank 3's host is unreachable (its connections never complete). The root
// keeps answering its joiners while it probes rank 3, so they join it
// instead of passing over it, and rank 3 is left out once its probe window
// has passed.
TEST(ShrinkAgreementTest, AnUnreachableRankDoesNotKeepTheRootFromItsJoiners) {
  auto endpoints = MakeEndpoints(4, 16);
  const Blackhole unreachable;
  ASSERT_FALSE(unreachable.address().empty());
  for (auto& endpoint : endpoints) endpoint->addresses[3] = unreachable.address();
  ExpectAgreement(ShrinkSome(endpoints, {0, 1, 2}, kTimeoutMs), {0, 1, 2});
}

// Random trials: each rank is dead, silent (alive, never calls) or calls
// after a random delay up to past the others' deadline. Whatever the
// timing, every rank that succeeds gets the same membership (which holds
// it), and it is never a minority of the ranks not dead that leaves live
// ones out.
TEST(ShrinkAgreementTest, RandomArrivalsNeverFormTwoGroups) {
  constexpr int kShortMs = 900;
  constexpr int kTrials = 8;
  std::mt19937 random(20261128);
  int formed = 0, failed = 0;
  for (int trial = 0; trial < kTrials; ++trial) {
    const int nranks = 3 + static_cast<int>(random() % 3);
    auto endpoints = MakeEndpoints(nranks, static_cast<uint8_t>(40 + trial));
    std::vector<int> role(nranks), delay_ms(nranks, 0);  // 0 calls, 1 silent, 2 dead
    for (int rank = 0; rank < nranks; ++rank) {
      const unsigned draw = random() % 10;
      role[rank] = draw < 7 ? 0 : draw < 9 ? 1 : 2;
      delay_ms[rank] = static_cast<int>(random() % (kShortMs * 5 / 4));
      if (role[rank] == 2) endpoints[rank]->listener.Close();
    }
    std::vector<Agreement> results(nranks);
    std::vector<std::thread> threads;
    for (int rank = 0; rank < nranks; ++rank) {
      if (role[rank] != 0) continue;
      threads.emplace_back([&, rank] {
        std::this_thread::sleep_for(std::chrono::milliseconds(delay_ms[rank]));
        results[rank].status = AgreeOnSurvivors(*endpoints[rank], Deadline::AfterMs(kShortMs * 3 / 4),
                                                Deadline::AfterMs(kShortMs), &results[rank].outcome);
      });
    }
    for (std::thread& thread : threads) thread.join();
    std::vector<int> group;
    for (int rank = 0; rank < nranks; ++rank) {
      if (role[rank] != 0) continue;
      if (!results[rank].status.ok()) {
        ++failed;
        continue;
      }
      ++formed;
      const std::vector<int>& mine = results[rank].outcome.survivors;
      EXPECT_TRUE(std::binary_search(mine.begin(), mine.end(), rank)) << "trial " << trial << " rank " << rank;
      if (group.empty()) group = mine;
      EXPECT_EQ(mine, group) << "trial " << trial << ": rank " << rank << " formed another group";
    }
    if (!group.empty()) {
      const int not_dead =
          static_cast<int>(std::count(role.begin(), role.end(), 0) + std::count(role.begin(), role.end(), 1));
      EXPECT_GE(2 * static_cast<int>(group.size()), not_dead) << "trial " << trial;
    }
  }
  std::printf("%d ranks formed a communicator, %d failed, over %d trials\n", formed, failed, kTrials);
}

// Everyone agreed; then rank 0 dies (as a shrink root that dies before the
// new communicator exists: its members shrink the old one again). Rank 2
// comes after the root's gather deadline (still failing to create the
// communicator of the first agreement, say). It answered the root "not
// shrinking now": alive, a member of the earlier agreement, so the root
// waits for it instead of leaving it out (which, once the others had exited,
// would let it find their listeners closed and form a communicator alone).
TEST(ShrinkAgreementTest, ALiveMemberOfAnEarlierAgreementIsWaitedForPastTheGatherDeadline) {
  auto endpoints = MakeEndpoints(4, 13);
  ExpectAgreement(Shrink(endpoints, {}), {0, 1, 2, 3});
  endpoints[0].reset();
  std::vector<Agreement> results(4);
  std::vector<std::thread> threads;
  for (int rank = 1; rank < 4; ++rank) {
    threads.emplace_back([&, rank] {
      if (rank == 2) std::this_thread::sleep_for(std::chrono::milliseconds(kTimeoutMs * 3 / 4 + 150));
      results[rank].status = AgreeOnSurvivors(*endpoints[rank], Deadline::AfterMs(kTimeoutMs * 3 / 4),
                                              Deadline::AfterMs(kTimeoutMs), &results[rank].outcome);
    });
  }
  for (std::thread& thread : threads) thread.join();
  ExpectAgreement(results, {1, 2, 3});
}

// The same, but rank 2 never calls again: the root and its joiners fail with
// a timeout naming it; nobody forms a communicator without it.
TEST(ShrinkAgreementTest, ALiveMemberThatNeverComesMakesTheOthersTimeOutNotSplit) {
  constexpr int kShortMs = 800;
  auto endpoints = MakeEndpoints(4, 14);
  ExpectAgreement(Shrink(endpoints, {}), {0, 1, 2, 3});
  endpoints[0].reset();
  const std::vector<Agreement> results = ShrinkSome(endpoints, {1, 3}, kShortMs);
  for (int rank : {1, 3}) {
    EXPECT_EQ(results[rank].status.code(), chorusTimeout) << results[rank].status.message();
    EXPECT_NE(results[rank].status.message().find("ranks {2} are alive and agreed with it in an earlier shrink"),
              std::string::npos)
        << results[rank].status.message();
  }
}

}  // namespace
}  // namespace chorus
