// Forcing an algorithm: chorusConfig_t.algo and the CHORUS_ALGO environment
// variable take the same syntax ("ring", "tree", or NCCL's per-collective
// "allreduce:ring;broadcast:tree"); results stay exact whichever is chosen.
#include <gtest/gtest.h>

#include <cctype>
#include <cstdlib>
#include <string>
#include <vector>

#include "tests/api/harness.h"

namespace chorus_test {
namespace {

constexpr int kRanks = 4;
constexpr size_t kCount = 100003;  // several chunks, odd

// AllReduce then Broadcast (root 2) of int32 and float32; all exact.
void ExpectExactResults(const ThreadComms& comms) {
  comms.Run([&](int rank, chorusComm_t comm) {
    std::vector<int32_t> ints(kCount);
    std::vector<float> floats(kCount);
    for (size_t i = 0; i < kCount; ++i) {
      ints[i] = static_cast<int32_t>(i % 1000) * (rank + 1) - 500;
      floats[i] = static_cast<float>(static_cast<int>(i % 64) - rank);
    }
    chorusResult_t result = chorusAllReduce(ints.data(), ints.data(), kCount, chorusInt32, chorusSum, comm, nullptr);
    ASSERT_EQ(result, chorusSuccess) << Describe(result, comm);
    result = chorusAllReduce(floats.data(), floats.data(), kCount, chorusFloat32, chorusMax, comm, nullptr);
    ASSERT_EQ(result, chorusSuccess) << Describe(result, comm);
    size_t wrong = 0;
    for (size_t i = 0; i < kCount; ++i) {
      // sum over r of ((i%1000)*(r+1) - 500) = (i%1000)*n(n+1)/2 - 500n
      const int32_t expected_int = static_cast<int32_t>(i % 1000) * kRanks * (kRanks + 1) / 2 - 500 * kRanks;
      wrong += ints[i] != expected_int;
      wrong += floats[i] != static_cast<float>(i % 64);  // max is rank 0's
    }
    EXPECT_EQ(wrong, 0u) << "rank " << rank;

    std::vector<int32_t> bcast(kCount, rank == 2 ? 0 : -1);
    if (rank == 2) {
      for (size_t i = 0; i < kCount; ++i) bcast[i] = static_cast<int32_t>(i * 3);
    }
    result = chorusBroadcast(bcast.data(), bcast.data(), kCount, chorusInt32, 2, comm, nullptr);
    ASSERT_EQ(result, chorusSuccess) << Describe(result, comm);
    wrong = 0;
    for (size_t i = 0; i < kCount; ++i) wrong += bcast[i] != static_cast<int32_t>(i * 3);
    EXPECT_EQ(wrong, 0u) << "rank " << rank;
  });
}

class AlgorithmSelectionTest : public testing::TestWithParam<const char*> {};

TEST_P(AlgorithmSelectionTest, ThroughConfig) {
  chorusConfig_t config = MakeConfig(GetParam(), 20000);
  ThreadComms comms = ThreadComms::InitRank(kRanks, &config);
  ASSERT_TRUE(comms.ok()) << comms.error();
  ExpectExactResults(comms);
}

// Sets CHORUS_ALGO while no communicator exists and restores it after.
class ScopedAlgoEnv {
 public:
  explicit ScopedAlgoEnv(const char* value) {
    const char* old = std::getenv("CHORUS_ALGO");
    had_old_ = old != nullptr;
    if (had_old_) old_ = old;
    setenv("CHORUS_ALGO", value, 1);
  }
  ~ScopedAlgoEnv() {
    if (had_old_) {
      setenv("CHORUS_ALGO", old_.c_str(), 1);
    } else {
      unsetenv("CHORUS_ALGO");
    }
  }

 private:
  bool had_old_ = false;
  std::string old_;
};

TEST_P(AlgorithmSelectionTest, ThroughEnvironment) {
  ScopedAlgoEnv env(GetParam());
  ThreadComms comms = ThreadComms::InitRank(kRanks);
  ASSERT_TRUE(comms.ok()) << comms.error();
  ExpectExactResults(comms);
}

INSTANTIATE_TEST_SUITE_P(Algorithms, AlgorithmSelectionTest,
                         testing::Values("ring", "tree", "allreduce:tree;broadcast:ring",
                                         "allreduce:ring;broadcast:tree", "ps", "allreduce:ps_sharded",
                                         "allreduce:hd", "dbtree", "broadcast:chain;allreduce:hd",
                                         "allreduce:hier", "allreduce:hier_sliced", "direct",
                                         "allreduce:oneshot"),
                         [](const testing::TestParamInfo<const char*>& info) {
                           std::string name;
                           for (const char* c = info.param; *c; ++c) {
                             name += std::isalnum(static_cast<unsigned char>(*c)) ? *c : '_';
                           }
                           return name;
                         });

}  // namespace
}  // namespace chorus_test
