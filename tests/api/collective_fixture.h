// A gtest fixture giving each collective test a fresh group of thread ranks
// for every (nranks, forced algorithm) pair.
#pragma once

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "tests/api/harness.h"
#include "tests/api/typed_buffer.h"

namespace chorus_test {

struct CollectiveParam {
  int nranks;
  const char* algo;  // chorusConfig_t.algo: "ring", "tree" or "direct"
};

inline std::vector<CollectiveParam> AllCollectiveParams() {
  std::vector<CollectiveParam> params;
  for (const char* algo : {"ring", "tree", "direct"}) {
    for (int nranks : {1, 2, 3, 4, 5, 8}) params.push_back({nranks, algo});
  }
  return params;
}

inline std::string CollectiveParamName(const testing::TestParamInfo<CollectiveParam>& info) {
  return std::string(info.param.algo) + "_" + std::to_string(info.param.nranks) + "ranks";
}

// Mismatches surface as a failed wait rather than a hang within this time.
inline constexpr int kCollectiveTimeoutMs = 30000;

class CollectiveTest : public testing::TestWithParam<CollectiveParam> {
 protected:
  void SetUp() override {
    config_ = MakeConfig(GetParam().algo, kCollectiveTimeoutMs);
    comms_ = ThreadComms::InitRank(GetParam().nranks, &config_);
    ASSERT_TRUE(comms_.ok()) << comms_.error();
  }

  int nranks() const { return GetParam().nranks; }

  chorusConfig_t config_{};
  ThreadComms comms_;
};

// Prefix for failure messages: which call, on which rank.
inline std::string Context(const char* collective, int rank, chorusDataType_t dtype, const char* op_or_root,
                           size_t count, bool in_place) {
  return std::string(collective) + " rank " + std::to_string(rank) + " " + Name(dtype) + " " + op_or_root + " count " +
         std::to_string(count) + (in_place ? " in-place" : "") + ": ";
}

}  // namespace chorus_test
