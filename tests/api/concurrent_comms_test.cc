// Several communicators in one process used at the same time from different
// threads must not see each other's traffic.
#include <gtest/gtest.h>

#include <vector>

#include "tests/api/harness.h"

namespace chorus_test {
namespace {

// `rounds` allreduces whose inputs depend on the communicator's `tag`, so
// that crossed traffic between communicators shows up as wrong sums.
void AllReduceRounds(int rank, chorusComm_t comm, int nranks, int tag, int rounds) {
  for (int round = 0; round < rounds; ++round) {
    const size_t count = 1000 + static_cast<size_t>(round) * 997;
    std::vector<int32_t> data(count);
    for (size_t i = 0; i < count; ++i) {
      data[i] = tag * 1000 + rank * 10 + round + static_cast<int32_t>(i % 7);
    }
    const chorusResult_t result =
        chorusAllReduce(data.data(), data.data(), count, chorusInt32, chorusSum, comm, nullptr);
    ASSERT_EQ(result, chorusSuccess) << "tag " << tag << " " << Describe(result, comm);
    size_t wrong = 0;
    for (size_t i = 0; i < count; ++i) {
      const int32_t expected =
          nranks * (tag * 1000 + round + static_cast<int32_t>(i % 7)) + 10 * nranks * (nranks - 1) / 2;
      wrong += data[i] != expected;
    }
    EXPECT_EQ(wrong, 0u) << "comm tag " << tag << " rank " << rank << " round " << round;
  }
}

TEST(ConcurrentCommsTest, TwoTwoRankCommsDrivenAtOnce) {
  ThreadComms first = ThreadComms::InitRank(2);
  ThreadComms second = ThreadComms::InitRank(2);
  ASSERT_TRUE(first.ok()) << first.error();
  ASSERT_TRUE(second.ok()) << second.error();
  // Four threads: 0,1 drive `first`, 2,3 drive `second`.
  RunOnThreads(4, [&](int thread) {
    const ThreadComms& comms = thread < 2 ? first : second;
    AllReduceRounds(thread % 2, comms[thread % 2], 2, thread < 2 ? 1 : 2, 30);
  });
}

TEST(ConcurrentCommsTest, ThreeCommsOfDifferentSizesDrivenAtOnce) {
  const int sizes[] = {1, 2, 3};
  std::vector<ThreadComms> groups;
  for (int size : sizes) {
    groups.push_back(ThreadComms::InitRank(size));
    ASSERT_TRUE(groups.back().ok()) << groups.back().error();
  }
  RunOnThreads(6, [&](int thread) {
    const int group = thread == 0 ? 0 : (thread < 3 ? 1 : 2);
    const int rank = thread == 0 ? 0 : (thread < 3 ? thread - 1 : thread - 3);
    AllReduceRounds(rank, groups[group][rank], sizes[group], group + 5, 15);
  });
}

// The same ranks (threads) drive two communicators alternately.
TEST(ConcurrentCommsTest, OneThreadPerRankAlternatingBetweenTwoComms) {
  ThreadComms first = ThreadComms::InitRank(3);
  ThreadComms second = ThreadComms::InitRank(3);
  ASSERT_TRUE(first.ok()) << first.error();
  ASSERT_TRUE(second.ok()) << second.error();
  RunOnThreads(3, [&](int rank) {
    for (int round = 0; round < 5; ++round) {
      AllReduceRounds(rank, first[rank], 3, 3, 1);
      AllReduceRounds(rank, second[rank], 3, 4, 1);
    }
  });
}

}  // namespace
}  // namespace chorus_test
