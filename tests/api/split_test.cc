// chorusCommSplit: colours, key ordering, CHORUS_SPLIT_NOCOLOR, and
// collectives on the new communicators.
#include <gtest/gtest.h>

#include <chrono>
#include <vector>

#include "tests/api/harness.h"

namespace chorus_test {
namespace {

// Even and odd ranks of 4, key = -rank: each half is ordered in reverse.
TEST(SplitTest, EvenOddWithReversedKeys) {
  ThreadComms comms = ThreadComms::InitRank(4);
  ASSERT_TRUE(comms.ok()) << comms.error();
  std::vector<chorusComm_t> halves(4, nullptr);
  comms.Run([&](int rank, chorusComm_t comm) {
    const chorusResult_t result = chorusCommSplit(comm, rank % 2, -rank, &halves[rank], nullptr);
    ASSERT_EQ(result, chorusSuccess) << Describe(result, comm);
    ASSERT_NE(halves[rank], nullptr);
    int count = -1;
    int new_rank = -1;
    EXPECT_EQ(chorusCommCount(halves[rank], &count), chorusSuccess);
    EXPECT_EQ(chorusCommUserRank(halves[rank], &new_rank), chorusSuccess);
    EXPECT_EQ(count, 2);
    // {0,2} -> old 2 is new 0; {1,3} -> old 3 is new 0.
    EXPECT_EQ(new_rank, rank >= 2 ? 0 : 1) << "old rank " << rank;

    // Sum of old ranks per half, and the old ranks gathered in new order.
    int32_t sum = rank;
    ASSERT_EQ(chorusAllReduce(&sum, &sum, 1, chorusInt32, chorusSum, halves[rank], nullptr), chorusSuccess);
    EXPECT_EQ(sum, rank % 2 == 0 ? 2 : 4);
    int32_t old_ranks[2] = {-1, -1};
    const int32_t mine = rank;
    ASSERT_EQ(chorusAllGather(&mine, old_ranks, 1, chorusInt32, halves[rank], nullptr), chorusSuccess);
    EXPECT_EQ(old_ranks[0], rank % 2 == 0 ? 2 : 3);
    EXPECT_EQ(old_ranks[1], rank % 2 == 0 ? 0 : 1);

    // The parent still works while the children exist.
    int32_t total = 1;
    ASSERT_EQ(chorusAllReduce(&total, &total, 1, chorusInt32, chorusSum, comm, nullptr), chorusSuccess);
    EXPECT_EQ(total, 4);
  });
  RunOnThreads(4, [&](int rank) {
    if (halves[rank] != nullptr) {
      EXPECT_EQ(chorusCommDestroy(halves[rank]), chorusSuccess);
    }
  });
}

TEST(SplitTest, NoColorGivesNullAndTheOthersFormOneComm) {
  ThreadComms comms = ThreadComms::InitRank(4);
  ASSERT_TRUE(comms.ok()) << comms.error();
  std::vector<chorusComm_t> split(4, nullptr);
  comms.Run([&](int rank, chorusComm_t comm) {
    const int color = rank == 3 ? CHORUS_SPLIT_NOCOLOR : 0;
    split[rank] = reinterpret_cast<chorusComm_t>(&split);  // must be overwritten
    const chorusResult_t result = chorusCommSplit(comm, color, 0, &split[rank], nullptr);
    ASSERT_EQ(result, chorusSuccess) << Describe(result, comm);
    if (rank == 3) {
      EXPECT_EQ(split[rank], nullptr);
      return;
    }
    ASSERT_NE(split[rank], nullptr);
    int count = -1;
    int new_rank = -1;
    EXPECT_EQ(chorusCommCount(split[rank], &count), chorusSuccess);
    EXPECT_EQ(chorusCommUserRank(split[rank], &new_rank), chorusSuccess);
    EXPECT_EQ(count, 3);
    EXPECT_EQ(new_rank, rank);  // equal keys: old rank order
    std::vector<float> data(4099, static_cast<float>(rank));
    ASSERT_EQ(chorusAllReduce(data.data(), data.data(), data.size(), chorusFloat32, chorusSum, split[rank], nullptr),
              chorusSuccess);
    size_t wrong = 0;
    for (float value : data) wrong += value != 3.0f;  // 0 + 1 + 2
    EXPECT_EQ(wrong, 0u) << "rank " << rank;
  });
  RunOnThreads(4, [&](int rank) {
    if (rank != 3 && split[rank] != nullptr) (void)chorusCommDestroy(split[rank]);
  });
}

// Every rank its own colour: four 1-rank communicators.
TEST(SplitTest, EveryRankAlone) {
  ThreadComms comms = ThreadComms::InitRank(4);
  ASSERT_TRUE(comms.ok()) << comms.error();
  comms.Run([&](int rank, chorusComm_t comm) {
    chorusComm_t alone = nullptr;
    ASSERT_EQ(chorusCommSplit(comm, rank, 0, &alone, nullptr), chorusSuccess);
    ASSERT_NE(alone, nullptr);
    int count = -1;
    EXPECT_EQ(chorusCommCount(alone, &count), chorusSuccess);
    EXPECT_EQ(count, 1);
    int64_t value = rank * 100;
    int64_t out = -1;
    ASSERT_EQ(chorusAllReduce(&value, &out, 1, chorusInt64, chorusSum, alone, nullptr), chorusSuccess);
    EXPECT_EQ(out, rank * 100);
    EXPECT_EQ(chorusCommDestroy(alone), chorusSuccess);
  });
}

// A bad config is refused before the rank takes part in any exchange: at
// once, even when no other rank calls split; *newcomm is NULL.
TEST(SplitTest, ABadConfigFailsAtOnceAndWritesNothing) {
  chorusConfig_t parent_config = MakeConfig(nullptr, 60000);
  ThreadComms comms = ThreadComms::InitRank(2, &parent_config);
  ASSERT_TRUE(comms.ok()) << comms.error();
  chorusConfig_t bad = MakeConfig("no_such_algorithm", -1);
  chorusComm_t out = reinterpret_cast<chorusComm_t>(&bad);
  const auto start = std::chrono::steady_clock::now();
  EXPECT_EQ(chorusCommSplit(comms[0], 0, 0, &out, &bad), chorusInvalidArgument);
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(10));
  EXPECT_EQ(out, nullptr);
  EXPECT_NE(std::string(chorusGetLastError(comms[0])).find("no_such_algorithm"), std::string::npos)
      << chorusGetLastError(comms[0]);
}

}  // namespace
}  // namespace chorus_test
