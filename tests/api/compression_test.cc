// chorusAllReduceCompressed: sign majority vote by packed bits and by int8
// counts (identical, ties included), the int8 L1 quantizer's overflow bound,
// fp16/bf16 wire truncation, 1-bit error feedback's residual identity, the
// byte counters, and argument errors.
#include <gtest/gtest.h>

#include <cfloat>
#include <cmath>
#include <vector>

#include "tests/api/harness.h"

namespace chorus_test {
namespace {

using Inputs = std::vector<std::vector<float>>;  // per rank

// One call of `mode` on every rank; returns every rank's result. Checks the
// byte counters against `wire_bytes` per call.
Inputs RunMode(int nranks, chorusCompression_t mode, const Inputs& inputs, unsigned long long wire_bytes,
               int calls = 1, bool on_stream = false) {
  const size_t count = inputs[0].size();
  Inputs out(nranks, std::vector<float>(count, 99));
  ThreadComms comms = ThreadComms::InitRank(nranks);
  EXPECT_TRUE(comms.ok()) << comms.error();
  comms.Run([&](int rank, chorusComm_t comm) {
    chorusCompressState_t state = nullptr;
    ASSERT_EQ(chorusCompressStateCreate(&state, mode, count, chorusFloat32, comm), chorusSuccess);
    chorusStream_t stream = nullptr;
    if (on_stream) {
      ASSERT_EQ(chorusStreamCreate(&stream), chorusSuccess);
    }
    for (int call = 0; call < calls; ++call) {
      const chorusResult_t result = chorusAllReduceCompressed(inputs[rank].data(), out[rank].data(), count,
                                                              chorusFloat32, state, comm, stream);
      ASSERT_EQ(result, chorusSuccess) << Describe(result, comm);
    }
    if (on_stream) {
      ASSERT_EQ(chorusStreamSynchronize(stream), chorusSuccess);
      ASSERT_EQ(chorusStreamDestroy(stream), chorusSuccess);
    }
    unsigned long long wire = 0, raw = 0;
    ASSERT_EQ(chorusCompressStateGetBytes(state, &wire, &raw), chorusSuccess);
    EXPECT_EQ(wire, wire_bytes * calls);
    EXPECT_EQ(raw, 4ull * count * calls);
    ASSERT_EQ(chorusCompressStateDestroy(state), chorusSuccess);
  });
  return out;
}

float Sign(double value) { return value > 0 ? 1.0f : (value < 0 ? -1.0f : 0.0f); }

// Votes with every tie pattern: element i of rank r is negative when bit r of
// i is set; zeros and -0 vote +1.
Inputs VoteInputs(int nranks, size_t count) {
  Inputs inputs(nranks, std::vector<float>(count));
  for (int r = 0; r < nranks; ++r) {
    for (size_t i = 0; i < count; ++i) {
      const bool negative = (i >> r) & 1u;
      inputs[r][i] = negative ? -0.5f * static_cast<float>(i + 1) : (i % 3 == 0 ? (i % 2 ? -0.0f : 0.0f) : 2.0f);
    }
  }
  return inputs;
}

class SignVoteTest : public testing::TestWithParam<int> {};

TEST_P(SignVoteTest, PackedBitsAndCountsGiveTheSameMajority) {
  const int nranks = GetParam();
  const size_t count = (size_t{1} << nranks) + 5;  // every vote pattern, not a multiple of 8
  const Inputs inputs = VoteInputs(nranks, count);
  std::vector<float> expected(count);
  for (size_t i = 0; i < count; ++i) {
    int sum = 0;
    for (int r = 0; r < nranks; ++r) sum += inputs[r][i] < 0 ? -1 : 1;
    expected[i] = Sign(sum);
  }
  const Inputs bits = RunMode(nranks, chorusCompressSignVote, inputs, (count + 7) / 8);
  const Inputs counts = RunMode(nranks, chorusCompressSignVoteCounts, inputs, count);
  for (int r = 0; r < nranks; ++r) {
    EXPECT_EQ(bits[r], expected) << "bits, rank " << r;
    EXPECT_EQ(counts[r], expected) << "counts, rank " << r;
  }
  if (nranks % 2 == 0) {
    // Element 2^(n/2) - 1: half the ranks vote -1, a tie.
    EXPECT_EQ(bits[0][(size_t{1} << (nranks / 2)) - 1], 0.0f);
  }
}

INSTANTIATE_TEST_SUITE_P(Ranks, SignVoteTest, testing::Values(1, 2, 3, 4),
                         [](const testing::TestParamInfo<int>& info) { return std::to_string(info.param) + "ranks"; });

// The test's own copy of the documented quantizer.
std::vector<int> Quantize(const std::vector<float>& x, int nranks) {
  double l1 = 0;
  for (float v : x) l1 += std::fabs(static_cast<double>(v));
  const double mean = l1 / x.size();
  const int s = 127 / nranks;
  std::vector<int> q(x.size());
  for (size_t i = 0; i < x.size(); ++i) {
    double v = std::round(x[i] / mean * s / 2);
    q[i] = static_cast<int>(v > s ? s : (v < -s ? -s : v));
  }
  return q;
}

class Int8QuantizerTest : public testing::TestWithParam<int> {};

TEST_P(Int8QuantizerTest, ExtremeInputsSaturateWithoutOverflow) {
  const int nranks = GetParam();
  constexpr size_t kCount = 16;
  Inputs inputs(nranks, std::vector<float>(kCount, 0.0f));
  for (int r = 0; r < nranks; ++r) {
    // One huge element per sign: both quantize to +/-s on every rank, so the
    // int8 sums reach +/-nranks*s, the bound. The others are mixed.
    inputs[r][0] = FLT_MAX;
    inputs[r][1] = -FLT_MAX;
    for (size_t i = 2; i < kCount; ++i) inputs[r][i] = static_cast<float>((static_cast<int>(i) * 7 + r * 3) % 11 - 5) * 1e37f;
  }
  std::vector<float> expected(kCount);
  std::vector<std::vector<int>> q(nranks);
  for (int r = 0; r < nranks; ++r) q[r] = Quantize(inputs[r], nranks);
  for (size_t i = 0; i < kCount; ++i) {
    int sum = 0;
    for (int r = 0; r < nranks; ++r) sum += q[r][i];
    ASSERT_LE(std::abs(sum), 127);
    expected[i] = Sign(sum);
  }
  EXPECT_EQ(q[0][0], 127 / nranks);
  const Inputs out = RunMode(nranks, chorusCompressInt8, inputs, kCount);
  for (int r = 0; r < nranks; ++r) EXPECT_EQ(out[r], expected) << "rank " << r;
  EXPECT_EQ(out[0][0], 1.0f);
  EXPECT_EQ(out[0][1], -1.0f);
}

INSTANTIATE_TEST_SUITE_P(Ranks, Int8QuantizerTest, testing::Values(2, 5, 8),
                         [](const testing::TestParamInfo<int>& info) { return std::to_string(info.param) + "ranks"; });

TEST(SixteenBitWireTest, HalfRepresentableInputsSumExactly) {
  constexpr int kRanks = 3;
  constexpr size_t kCount = 101;
  Inputs inputs(kRanks, std::vector<float>(kCount));
  std::vector<float> expected(kCount, 0.0f);
  for (int r = 0; r < kRanks; ++r) {
    for (size_t i = 0; i < kCount; ++i) {
      inputs[r][i] = static_cast<float>(static_cast<int>(i % 17) - 8 + r) * 0.25f;
      expected[i] += inputs[r][i];
    }
  }
  for (chorusCompression_t mode : {chorusCompressFp16, chorusCompressBf16}) {
    const Inputs out = RunMode(kRanks, mode, inputs, 2 * kCount, 1, /*on_stream=*/mode == chorusCompressBf16);
    for (int r = 0; r < kRanks; ++r) EXPECT_EQ(out[r], expected) << "mode " << mode << " rank " << r;
  }
}

TEST(OneBitErrorFeedbackTest, ResidualCarriesWhatTheSignsDropped) {
  constexpr int kRanks = 2;
  constexpr size_t kCount = 8;  // a power of two: every scale is exact
  ThreadComms comms = ThreadComms::InitRank(kRanks);
  ASSERT_TRUE(comms.ok()) << comms.error();
  // Integers: scales are multiples of 1/8, residuals stay exact dyadics.
  auto input = [](int rank, int call, size_t i) {
    return static_cast<float>((static_cast<int>(i) * 5 + rank * 3 + call * 7) % 9 - 4);
  };
  std::vector<std::vector<float>> scales(kRanks), signs_seen(kRanks);
  comms.Run([&](int rank, chorusComm_t comm) {
    chorusCompressState_t state = nullptr;
    ASSERT_EQ(chorusCompressStateCreate(&state, chorusCompressOneBitEF, kCount, chorusFloat32, comm), chorusSuccess);
    std::vector<float> residual(kCount, 0.0f);  // the test's model of the state
    for (int call = 0; call < 3; ++call) {
      std::vector<float> x(kCount), out(kCount, 99);
      for (size_t i = 0; i < kCount; ++i) x[i] = input(rank, call, i);
      const chorusResult_t result = chorusAllReduceCompressed(x.data(), out.data(), kCount, chorusFloat32, state,
                                                              comm, nullptr);
      ASSERT_EQ(result, chorusSuccess) << Describe(result, comm);
      // Every rank's scale and signs, recomputed from every rank's inputs
      // and residual model (identical arithmetic, exact values).
      std::vector<double> mean(kCount, 0.0);
      for (int r = 0; r < kRanks; ++r) {
        // Rebuild rank r's residual history.
        std::vector<float> e(kCount, 0.0f);
        for (int c = 0; c <= call; ++c) {
          std::vector<float> y(kCount);
          double l1 = 0;
          for (size_t i = 0; i < kCount; ++i) {
            y[i] = input(r, c, i) + e[i];
            l1 += std::fabs(y[i]);
          }
          const float scale = static_cast<float>(l1 / kCount);
          for (size_t i = 0; i < kCount; ++i) {
            const float signed_scale = y[i] < 0 ? -scale : scale;
            const float e_new = y[i] - signed_scale;
            // The identity: x + e_old == scale * sign + e_new, exactly.
            ASSERT_EQ(y[i], signed_scale + e_new);
            if (c == call) mean[i] += signed_scale;
            e[i] = e_new;
          }
        }
      }
      for (size_t i = 0; i < kCount; ++i) ASSERT_EQ(out[i], static_cast<float>(mean[i] / kRanks)) << "call " << call;
    }
    unsigned long long wire = 0, raw = 0;
    ASSERT_EQ(chorusCompressStateGetBytes(state, &wire, &raw), chorusSuccess);
    EXPECT_EQ(wire, 3ull * (4 + 1));
    EXPECT_EQ(raw, 3ull * 4 * kCount);
    ASSERT_EQ(chorusCompressStateDestroy(state), chorusSuccess);
  });
}

TEST(CompressionErrorsTest, BadArgumentsAreRejectedAndNothingIsWritten) {
  ThreadComms comms = ThreadComms::InitRank(2);
  ASSERT_TRUE(comms.ok()) << comms.error();
  comms.Run([&](int rank, chorusComm_t comm) {
    constexpr size_t kCount = 10;
    chorusCompressState_t state = nullptr;
    EXPECT_EQ(chorusCompressStateCreate(&state, chorusCompressInt8, kCount, chorusInt32, comm),
              chorusInvalidArgument);
    EXPECT_EQ(chorusCompressStateCreate(&state, static_cast<chorusCompression_t>(42), kCount, chorusFloat32, comm),
              chorusInvalidArgument);
    EXPECT_EQ(chorusCompressStateCreate(nullptr, chorusCompressInt8, kCount, chorusFloat32, comm),
              chorusInvalidArgument);
    ASSERT_EQ(chorusCompressStateCreate(&state, chorusCompressInt8, kCount, chorusFloat32, comm), chorusSuccess);
    std::vector<float> send(kCount, static_cast<float>(rank + 1)), recv(kCount, -7.0f);
    EXPECT_EQ(chorusAllReduceCompressed(send.data(), recv.data(), kCount, chorusFloat64, state, comm, nullptr),
              chorusInvalidArgument);
    EXPECT_EQ(chorusAllReduceCompressed(send.data(), recv.data(), kCount - 1, chorusFloat32, state, comm, nullptr),
              chorusInvalidArgument);
    EXPECT_EQ(chorusAllReduceCompressed(send.data(), recv.data(), kCount, chorusFloat32, nullptr, comm, nullptr),
              chorusInvalidArgument);
    EXPECT_EQ(chorusAllReduceCompressed(send.data(), send.data() + 1, kCount, chorusFloat32, state, comm, nullptr),
              chorusInvalidArgument);
    for (float value : recv) ASSERT_EQ(value, -7.0f);
    unsigned long long wire = 1, raw = 1;
    ASSERT_EQ(chorusCompressStateGetBytes(state, &wire, &raw), chorusSuccess);
    EXPECT_EQ(wire, 0u);
    EXPECT_EQ(raw, 0u);
    // In place works.
    ASSERT_EQ(chorusAllReduceCompressed(send.data(), send.data(), kCount, chorusFloat32, state, comm, nullptr),
              chorusSuccess);
    for (float value : send) ASSERT_EQ(value, 1.0f);
    ASSERT_EQ(chorusCompressStateDestroy(state), chorusSuccess);
    EXPECT_EQ(chorusCompressStateDestroy(nullptr), chorusSuccess);
  });
}

}  // namespace
}  // namespace chorus_test
