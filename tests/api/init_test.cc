// Communicator creation as threads (chorusCommInitRank from a shared unique
// id, chorusCommInitAll), the queries on a communicator, and the library
// queries (version, error strings).
#include <gtest/gtest.h>

#include <cstring>
#include <set>
#include <string>

#include "tests/api/harness.h"

namespace chorus_test {
namespace {

class InitTest : public testing::TestWithParam<int> {};

// A sum allreduce of rank+1 over int32 proves the ranks are connected.
void ExpectConnected(const ThreadComms& comms) {
  const int nranks = comms.size();
  comms.Run([&](int rank, chorusComm_t comm) {
    int count = -1;
    int user_rank = -1;
    EXPECT_EQ(chorusCommCount(comm, &count), chorusSuccess);
    EXPECT_EQ(chorusCommUserRank(comm, &user_rank), chorusSuccess);
    EXPECT_EQ(count, nranks);
    EXPECT_EQ(user_rank, rank);
    int32_t value[3] = {rank + 1, -rank, 7};
    const chorusResult_t result = chorusAllReduce(value, value, 3, chorusInt32, chorusSum, comm, nullptr);
    ASSERT_EQ(result, chorusSuccess) << Describe(result, comm);
    EXPECT_EQ(value[0], nranks * (nranks + 1) / 2);
    EXPECT_EQ(value[1], -nranks * (nranks - 1) / 2);
    EXPECT_EQ(value[2], 7 * nranks);
  });
}

TEST_P(InitTest, InitRankFromThreads) {
  ThreadComms comms = ThreadComms::InitRank(GetParam());
  ASSERT_TRUE(comms.ok()) << comms.error();
  ExpectConnected(comms);
}

TEST_P(InitTest, InitRankConfigFromThreads) {
  chorusConfig_t config = MakeConfig(nullptr, 20000);
  config.netName = "init-test";
  ThreadComms comms = ThreadComms::InitRank(GetParam(), &config);
  ASSERT_TRUE(comms.ok()) << comms.error();
  ExpectConnected(comms);
}

TEST_P(InitTest, InitAll) {
  ThreadComms comms = ThreadComms::InitAll(GetParam());
  ASSERT_TRUE(comms.ok()) << comms.error();
  ExpectConnected(comms);
}

INSTANTIATE_TEST_SUITE_P(Ranks, InitTest, testing::Values(1, 2, 3, 4, 5, 8),
                         [](const testing::TestParamInfo<int>& info) { return std::to_string(info.param) + "ranks"; });

TEST(InitTest, TwoGroupsFromOneProcessOneAfterTheOther) {
  for (int round = 0; round < 2; ++round) {
    ThreadComms comms = ThreadComms::InitRank(3);
    ASSERT_TRUE(comms.ok()) << comms.error();
    ExpectConnected(comms);
  }
}

TEST(LibraryInfoTest, VersionMatchesHeader) {
  int version = -1;
  ASSERT_EQ(chorusGetVersion(&version), chorusSuccess);
  EXPECT_EQ(version, CHORUS_VERSION_CODE);
  EXPECT_EQ(version, CHORUS_MAJOR * 10000 + CHORUS_MINOR * 100 + CHORUS_PATCH);
}

TEST(LibraryInfoTest, EveryResultHasItsOwnNonEmptyString) {
  std::set<std::string> seen;
  for (int code = 0; code < chorusNumResults; ++code) {
    const char* text = chorusGetErrorString(static_cast<chorusResult_t>(code));
    ASSERT_NE(text, nullptr) << "code " << code;
    EXPECT_GT(std::strlen(text), 0u) << "code " << code;
    EXPECT_TRUE(seen.insert(text).second) << "code " << code << " repeats \"" << text << "\"";
  }
  for (int code : {-1, static_cast<int>(chorusNumResults), 99}) {
    const char* text = chorusGetErrorString(static_cast<chorusResult_t>(code));
    ASSERT_NE(text, nullptr) << "unknown code " << code;
    EXPECT_GT(std::strlen(text), 0u) << "unknown code " << code;
  }
}

TEST(LibraryInfoTest, LastErrorWithoutCommIsAString) {
  const char* text = chorusGetLastError(nullptr);
  ASSERT_NE(text, nullptr);
}

}  // namespace
}  // namespace chorus_test
