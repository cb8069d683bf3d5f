// chorusGossip (GossipGraD): cube steps reach the exact global average after
// log2(p) calls, dissemination partners, per-cycle rotation identical on all
// ranks, non-power-of-two behaviour, and argument errors.
#include <gtest/gtest.h>

#include <cstring>
#include <string>

#include <vector>

#include "tests/api/harness.h"
#include "tests/api/typed_buffer.h"

namespace chorus_test {
namespace {

constexpr size_t kCount = 33;

// Small integers: every partial average over a power-of-two group is a
// dyadic rational that every floating type holds exactly.
double Input(int rank, size_t index) { return static_cast<double>((rank * 5 + static_cast<int>(index) * 3) % 16); }

double GlobalAverage(int nranks, size_t index) {
  double sum = 0;
  for (int rank = 0; rank < nranks; ++rank) sum += Input(rank, index);
  return sum / nranks;
}

int Log2(int nranks) {
  int length = 0;
  while ((1 << length) < nranks) ++length;
  return length;
}

struct CubeCase {
  int nranks;
  chorusDataType_t dtype;
};

class CubeAverageTest : public testing::TestWithParam<CubeCase> {};

TEST_P(CubeAverageTest, Log2StepsGiveTheExactAverage) {
  const auto [nranks, dtype] = GetParam();
  ThreadComms comms = ThreadComms::InitRank(nranks);
  ASSERT_TRUE(comms.ok()) << comms.error();
  comms.Run([&](int rank, chorusComm_t comm) {
    TypedBuffer value(dtype, kCount);
    for (size_t i = 0; i < kCount; ++i) value.Set(i, Input(rank, i));
    chorusGossipState_t state = CHORUS_GOSSIP_STATE_INITIALIZER;
    for (int step = 0; step < Log2(nranks); ++step) {
      // In place, as a trainer would average its gradient buffer.
      const chorusResult_t result = chorusGossip(value.data(), value.data(), kCount, dtype, &state, comm, nullptr);
      ASSERT_EQ(result, chorusSuccess) << Describe(result, comm);
    }
    EXPECT_EQ(state.step, static_cast<unsigned long long>(Log2(nranks)));
    for (size_t i = 0; i < kCount; ++i) {
      ASSERT_EQ(value.Get(i), GlobalAverage(nranks, i)) << "rank " << rank << " index " << i;
    }
  });
}

INSTANTIATE_TEST_SUITE_P(Ranks, CubeAverageTest,
                         testing::Values(CubeCase{2, chorusFloat32}, CubeCase{4, chorusFloat32},
                                         CubeCase{8, chorusFloat32}, CubeCase{4, chorusFloat64},
                                         CubeCase{4, chorusFloat16}, CubeCase{4, chorusBfloat16}),
                         [](const testing::TestParamInfo<CubeCase>& info) {
                           return std::to_string(info.param.nranks) + "ranks_" + Name(info.param.dtype);
                         });

// One step with explicit partners; returns what every rank received.
std::vector<std::vector<float>> OneStep(ThreadComms& comms, chorusGossipState_t initial, bool on_stream) {
  const int nranks = comms.size();
  std::vector<std::vector<float>> out(nranks, std::vector<float>(kCount, -1));
  comms.Run([&](int rank, chorusComm_t comm) {
    std::vector<float> mine(kCount);
    for (size_t i = 0; i < kCount; ++i) mine[i] = static_cast<float>(Input(rank, i));
    chorusGossipState_t state = initial;
    chorusStream_t stream = nullptr;
    if (on_stream) {
      ASSERT_EQ(chorusStreamCreate(&stream), chorusSuccess);
    }
    const chorusResult_t result =
        chorusGossip(mine.data(), out[rank].data(), kCount, chorusFloat32, &state, comm, stream);
    ASSERT_EQ(result, chorusSuccess) << Describe(result, comm);
    if (on_stream) {
      ASSERT_EQ(chorusStreamSynchronize(stream), chorusSuccess);
      ASSERT_EQ(chorusStreamDestroy(stream), chorusSuccess);
    }
    EXPECT_EQ(state.step, initial.step + 1);
  });
  return out;
}

float Mean(int a, int b, size_t i) { return static_cast<float>(0.5 * Input(a, i) + 0.5 * Input(b, i)); }

TEST(GossipTest, DisseminationReceivesFromPositionPlusDistance) {
  constexpr int kRanks = 8;
  ThreadComms comms = ThreadComms::InitRank(kRanks);
  ASSERT_TRUE(comms.ok()) << comms.error();
  for (unsigned long long step : {0ull, 1ull, 2ull}) {
    chorusGossipState_t state = {chorusGossipDissemination, 0, 0, step};
    const auto out = OneStep(comms, state, /*on_stream=*/step == 1);
    const int distance = 1 << step;
    for (int rank = 0; rank < kRanks; ++rank) {
      for (size_t i = 0; i < kCount; ++i) {
        ASSERT_EQ(out[rank][i], Mean(rank, (rank + distance) % kRanks, i)) << "step " << step << " rank " << rank;
      }
    }
  }
}

// Rank -> partner per step, read back from the data (Input is unique per rank
// at index 0..1, so the mean identifies the partner).
int PartnerFromResult(const std::vector<float>& result, int rank, int nranks) {
  for (int other = 0; other < nranks; ++other) {
    if (result[1] == Mean(rank, other, 1) && result[2] == Mean(rank, other, 2) && other != rank) return other;
  }
  return rank;  // kept its own value
}

TEST(GossipTest, RotationIsIdenticalAcrossRanksAndChangesPerCycle) {
  constexpr int kRanks = 4;  // cycle length 2
  ThreadComms comms = ThreadComms::InitRank(kRanks);
  ASSERT_TRUE(comms.ok()) << comms.error();
  std::vector<std::vector<int>> partners_per_step;
  for (unsigned long long step = 0; step < 8; ++step) {
    chorusGossipState_t state = {chorusGossipCube, 1, 12345, step};
    const auto out = OneStep(comms, state, false);
    std::vector<int> partner(kRanks);
    for (int rank = 0; rank < kRanks; ++rank) partner[rank] = PartnerFromResult(out[rank], rank, kRanks);
    // Consistency: partners are mutual (what both ranks computed agrees).
    for (int rank = 0; rank < kRanks; ++rank) {
      ASSERT_NE(partner[rank], rank) << "step " << step;
      ASSERT_EQ(partner[partner[rank]], rank) << "step " << step;
    }
    partners_per_step.push_back(partner);
  }
  // Within a cycle the two steps use different partners (a hypercube).
  for (size_t step = 0; step < partners_per_step.size(); step += 2) {
    EXPECT_NE(partners_per_step[step], partners_per_step[step + 1]) << "cycle " << step / 2;
  }
  // Across the 4 cycles the pairings are not all the same.
  bool changed = false;
  for (size_t step = 2; step < partners_per_step.size(); step += 2) changed |= partners_per_step[step] != partners_per_step[0];
  EXPECT_TRUE(changed) << "rotation never changed the partners";
}

TEST(GossipTest, NonPowerOfTwoCubeRanksWithoutPartnerKeepTheirValue) {
  constexpr int kRanks = 3;  // cycle length 2: step 0 pairs 0-1 (2 alone), step 1 pairs 0-2 (1 alone)
  ThreadComms comms = ThreadComms::InitRank(kRanks);
  ASSERT_TRUE(comms.ok()) << comms.error();
  const int expected_partner[2][kRanks] = {{1, 0, 2}, {2, 1, 0}};
  for (unsigned long long step : {0ull, 1ull}) {
    const auto out = OneStep(comms, {chorusGossipCube, 0, 0, step}, false);
    for (int rank = 0; rank < kRanks; ++rank) {
      const int partner = expected_partner[step][rank];
      for (size_t i = 0; i < kCount; ++i) ASSERT_EQ(out[rank][i], Mean(rank, partner, i)) << "rank " << rank;
    }
  }
  // Dissemination is defined for every size.
  const auto out = OneStep(comms, {chorusGossipDissemination, 0, 0, 1}, false);
  for (int rank = 0; rank < kRanks; ++rank) {
    for (size_t i = 0; i < kCount; ++i) ASSERT_EQ(out[rank][i], Mean(rank, (rank + 2) % kRanks, i));
  }
}

TEST(GossipTest, BadArgumentsAreRejectedAndNothingIsWritten) {
  ThreadComms comms = ThreadComms::InitRank(2);
  ASSERT_TRUE(comms.ok()) << comms.error();
  comms.Run([&](int rank, chorusComm_t comm) {
    std::vector<int32_t> send(kCount, rank), recv(kCount, -7);
    chorusGossipState_t state = CHORUS_GOSSIP_STATE_INITIALIZER;
    for (chorusDataType_t dtype : {chorusInt8, chorusUint8, chorusInt32, chorusUint32, chorusInt64, chorusUint64}) {
      EXPECT_EQ(chorusGossip(send.data(), recv.data(), kCount / 2, dtype, &state, comm, nullptr),
                chorusInvalidArgument);
    }
    EXPECT_EQ(chorusGossip(send.data(), recv.data(), kCount, chorusFloat32, nullptr, comm, nullptr),
              chorusInvalidArgument);
    EXPECT_EQ(chorusGossip(send.data(), nullptr, kCount, chorusFloat32, &state, comm, nullptr),
              chorusInvalidArgument);
    EXPECT_EQ(chorusGossip(send.data(), send.data() + 1, kCount, chorusFloat32, &state, comm, nullptr),
              chorusInvalidArgument);
    // A partner rule outside the enum, stored as C code may store any int
    // (a C++ cast to the enum would itself be undefined): rejected from its
    // integer value, never loaded as the enum (UBSan's enum check).
    for (int value : {2, 7, -1, 1 << 30}) {
      chorusGossipState_t bad = state;
      static_assert(sizeof(bad.partner) == sizeof(value));
      std::memcpy(&bad.partner, &value, sizeof(value));
      EXPECT_EQ(chorusGossip(send.data(), recv.data(), kCount, chorusFloat32, &bad, comm, nullptr),
                chorusInvalidArgument);
      EXPECT_NE(std::string(chorusGetLastError(comm)).find("unknown gossip partner rule"), std::string::npos)
          << chorusGetLastError(comm);
      EXPECT_EQ(bad.step, 0u);
    }
    EXPECT_EQ(state.step, 0u);
    for (int32_t value : recv) ASSERT_EQ(value, -7);
  });
}

}  // namespace
}  // namespace chorus_test
