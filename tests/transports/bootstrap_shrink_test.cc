// Shrink's survivor agreement (bootstrap/shrink.h) with ranks as threads on
// loopback: a rank whose listener is closed counts as dead, whichever rank it
// is; everyone gets the same table and the same derived secret; a stranger
// with another secret is not let in.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <memory>
#include <thread>
#include <vector>

#include "bootstrap/shrink.h"

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

}  // namespace
}  // namespace chorus
