// GossipGraD's ring shuffle of samples (DistributedSampler in gossip mode)
// against a literal simulation: every rank holds rows of sample indices, and
// after each step each rank's batch rows are replaced by its ring successor's.
#include <gtest/gtest.h>

#include <set>
#include <vector>

#include "examples/trainer/distributed_sampler.h"

namespace trainer_test {
namespace {

using trainer::DistributedSampler;

struct ShuffleCase {
  int size, nranks, batch, steps;
};

DistributedSampler GossipSampler(const ShuffleCase& s, int rank) {
  DistributedSampler sampler(s.size, s.nranks, rank, 7);
  sampler.EnableRingShuffle(s.batch, s.steps);
  return sampler;
}

class RingShuffleTest : public testing::TestWithParam<ShuffleCase> {};

TEST_P(RingShuffleTest, MatchesPassingBatchesAlongTheRing) {
  const ShuffleCase s = GetParam();
  constexpr int kEpochs = 6;
  const int rows = s.size / s.nranks;
  // Rows start as the plain sampler's epoch-0 shards.
  std::vector<std::vector<uint32_t>> held(s.nranks);
  for (int r = 0; r < s.nranks; ++r) held[r] = DistributedSampler(s.size, s.nranks, r, 7).EpochIndices(0);
  for (int epoch = 0; epoch < kEpochs; ++epoch) {
    const std::vector<uint32_t> order = GossipSampler(s, 0).RowOrder(epoch);
    ASSERT_EQ(order.size(), static_cast<size_t>(rows));
    std::vector<std::vector<uint32_t>> visited(s.nranks);
    for (int r = 0; r < s.nranks; ++r) {
      EXPECT_EQ(GossipSampler(s, r).RowOrder(epoch), order) << "the row order is shared";
      visited[r] = GossipSampler(s, r).EpochIndices(epoch);
      ASSERT_EQ(visited[r].size(), static_cast<size_t>(rows));
    }
    std::set<uint32_t> used;
    for (int step = 0; step < s.steps; ++step) {
      for (int r = 0; r < s.nranks; ++r) {
        for (int j = step * s.batch; j < (step + 1) * s.batch; ++j) {
          ASSERT_EQ(visited[r][j], held[r][order[j]]) << "epoch " << epoch << " step " << step << " rank " << r;
          EXPECT_TRUE(used.insert(visited[r][j]).second) << "sample " << visited[r][j] << " used twice in a step";
        }
      }
      // Each rank sends its batch rows to rank - 1 and receives rank + 1's.
      std::vector<std::vector<uint32_t>> next = held;
      for (int r = 0; r < s.nranks; ++r) {
        for (int j = step * s.batch; j < (step + 1) * s.batch; ++j) next[r][order[j]] = held[(r + 1) % s.nranks][order[j]];
      }
      held = std::move(next);
    }
    EXPECT_EQ(used.size(), static_cast<size_t>(s.nranks) * s.batch * s.steps);
  }
}

INSTANTIATE_TEST_SUITE_P(Setups, RingShuffleTest,
                         testing::Values(ShuffleCase{103, 4, 3, 8},   // every row used; 3 samples dropped
                                         ShuffleCase{100, 4, 4, 5},   // 5 of 25 rows stay put each epoch
                                         ShuffleCase{60, 3, 5, 4},    // 3 ranks, 20 rows
                                         ShuffleCase{37, 1, 6, 6}));  // one rank: only the row order changes

TEST(RingShuffle, DataMovesAroundTheRing) {
  const ShuffleCase s{400, 4, 10, 10};  // every row used every epoch
  const std::vector<uint32_t> epoch0 = GossipSampler(s, 0).EpochIndices(0);
  const std::vector<uint32_t> epoch1 = GossipSampler(s, 0).EpochIndices(1);
  // With every row used, rank 0's epoch-1 samples are rank 1's epoch-0 ones.
  const std::vector<uint32_t> neighbour0 = GossipSampler(s, 1).EpochIndices(0);
  EXPECT_EQ(std::set<uint32_t>(epoch1.begin(), epoch1.end()), std::set<uint32_t>(neighbour0.begin(), neighbour0.end()));
  EXPECT_NE(std::set<uint32_t>(epoch1.begin(), epoch1.end()), std::set<uint32_t>(epoch0.begin(), epoch0.end()));
  // After p epochs the shards are back, in a new order.
  const std::vector<uint32_t> epoch4 = GossipSampler(s, 0).EpochIndices(4);
  EXPECT_EQ(std::set<uint32_t>(epoch4.begin(), epoch4.end()), std::set<uint32_t>(epoch0.begin(), epoch0.end()));
  EXPECT_NE(epoch4, epoch0);
  // Without gossip mode the sampler is unchanged.
  DistributedSampler plain(s.size, s.nranks, 0, 7);
  EXPECT_FALSE(plain.ring_shuffle());
  EXPECT_EQ(plain.EpochIndices(0), DistributedSampler(s.size, s.nranks, 0, 7).EpochIndices(0));
}

}  // namespace
}  // namespace trainer_test
