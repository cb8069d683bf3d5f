// The compressed allreduce's codecs (src/lossy/compression_codecs.cc) against
// the original one-element-at-a-time versions (vote_reference.h): identical
// bytes for random inputs, every rank count 1..17 (and a few large ones),
// every count 0..130 (every tail length of a 64-bit word and of a byte),
// ties, and special floats (-0, NaN, infinities, denormals).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "lossy/compression_codecs.h"
#include "lossy/compression_stages.h"
#include "tests/lossy/vote_reference.h"

namespace chorus {
namespace {

constexpr size_t kMaxCount = 130;

// Bitwise equality, so +0 and -0 (and NaN payloads) are told apart.
void ExpectSameFloats(const std::vector<float>& got, const std::vector<float>& want, const char* what, int nranks,
                      size_t count) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    uint32_t a, b;
    std::memcpy(&a, &got[i], 4);
    std::memcpy(&b, &want[i], 4);
    ASSERT_EQ(a, b) << what << ": element " << i << " of " << count << ", " << nranks << " ranks: " << got[i]
                    << " vs " << want[i];
  }
}

std::vector<uint8_t> RandomBytes(std::mt19937_64& rng, size_t n) {
  std::vector<uint8_t> bytes(n);
  for (uint8_t& b : bytes) b = static_cast<uint8_t>(rng());
  return bytes;
}

// Random values with every special case mixed in.
std::vector<float> RandomFloats(std::mt19937_64& rng, size_t n) {
  const float specials[] = {0.0f, -0.0f, std::numeric_limits<float>::quiet_NaN(),
                            -std::numeric_limits<float>::quiet_NaN(), std::numeric_limits<float>::infinity(),
                            -std::numeric_limits<float>::infinity(), std::numeric_limits<float>::denorm_min(),
                            -std::numeric_limits<float>::denorm_min()};
  std::uniform_real_distribution<float> uniform(-2.0f, 2.0f);
  std::vector<float> x(n);
  for (float& v : x) v = rng() % 8 == 0 ? specials[rng() % 8] : uniform(rng);
  return x;
}

using DecodeFn = void (*)(const uint8_t*, size_t, int, size_t, float*);

std::vector<float> Decode(DecodeFn decode, const std::vector<uint8_t>& bits, size_t stride, int nranks,
                          size_t count) {
  std::vector<float> out(count, 99.0f);
  decode(bits.data(), stride, nranks, count, out.data());
  return out;
}

// The library's vote (vector code where the CPU has it) and its portable
// version, each against the reference.
void ExpectVoteMatchesReference(const std::vector<uint8_t>& bits, size_t stride, int nranks, size_t count) {
  const std::vector<float> want = Decode(reference::SignVoteFromBits, bits, stride, nranks, count);
  ExpectSameFloats(Decode(SignVoteFromBits, bits, stride, nranks, count), want, "vote", nranks, count);
  ExpectSameFloats(Decode(SignVoteFromBitsPortable, bits, stride, nranks, count), want, "portable vote", nranks,
                   count);
}

TEST(SignVoteFromBits, RandomVotesMatchTheReferenceForEveryRankCountAndTail) {
  std::mt19937_64 rng(1);
  for (int nranks = 1; nranks <= 17; ++nranks) {
    for (size_t count = 0; count <= kMaxCount; ++count) {
      // Rows padded by 0..2 bytes of garbage, as is the unused tail of the last byte.
      const size_t stride = PackedBitBytes(count) + count % 3;
      const std::vector<uint8_t> bits = RandomBytes(rng, stride * nranks + 1);
      ExpectVoteMatchesReference(bits, stride, nranks, count);
    }
  }
}

TEST(SignVoteFromBits, LargeRankCountsAndCounts) {
  std::mt19937_64 rng(2);
  for (int nranks : {31, 32, 33, 64, 127, 128, 255, 256, 1000}) {
    const size_t count = 1000 + static_cast<size_t>(nranks);
    const size_t stride = PackedBitBytes(count);
    const std::vector<uint8_t> bits = RandomBytes(rng, stride * nranks);
    ExpectVoteMatchesReference(bits, stride, nranks, count);
  }
}

// Element i of the p ranks gets exactly i % (p + 1) votes of +1, at random
// ranks: every possible count, ties (p/2 for even p) included.
TEST(SignVoteFromBits, EveryVoteCountGivesItsSign) {
  std::mt19937_64 rng(3);
  for (int nranks = 1; nranks <= 17; ++nranks) {
    const size_t count = 4 * kMaxCount + 3;
    const size_t stride = PackedBitBytes(count);
    std::vector<uint8_t> bits(stride * nranks, 0);
    std::vector<float> expected(count);
    std::vector<int> ranks(nranks);
    for (size_t i = 0; i < count; ++i) {
      const int plus = static_cast<int>(i % (nranks + 1));
      for (int r = 0; r < nranks; ++r) ranks[r] = r;
      std::shuffle(ranks.begin(), ranks.end(), rng);
      for (int k = 0; k < plus; ++k) bits[ranks[k] * stride + i / 8] |= static_cast<uint8_t>(1u << (i % 8));
      const int sum = 2 * plus - nranks;
      expected[i] = sum > 0 ? 1.0f : (sum < 0 ? -1.0f : 0.0f);
    }
    const std::vector<float> got = Decode(SignVoteFromBits, bits, stride, nranks, count);
    ExpectSameFloats(got, expected, "vote", nranks, count);
    ExpectSameFloats(Decode(SignVoteFromBitsPortable, bits, stride, nranks, count), expected, "portable vote", nranks,
                     count);
    ExpectSameFloats(Decode(reference::SignVoteFromBits, bits, stride, nranks, count), expected, "reference", nranks,
                     count);
    if (nranks % 2 == 0) {
      EXPECT_EQ(got[nranks / 2], 0.0f) << "a tie gives 0";
    }
  }
}

TEST(PackSignBits, MatchesTheReferenceForEveryCount) {
  std::mt19937_64 rng(4);
  for (size_t count = 0; count <= kMaxCount; ++count) {
    const std::vector<float> x = RandomFloats(rng, count);
    std::vector<uint8_t> got(PackedBitBytes(count) + 1, 0xab), want(got.size(), 0xab);
    PackSignBits(x.data(), count, got.data());
    reference::PackSignBits(x.data(), count, want.data());
    ASSERT_EQ(got, want) << "count " << count;  // the byte after the bits is left alone
  }
}

TEST(SignOfSums, EveryInt8Value) {
  std::vector<int8_t> sums;
  for (int v = -128; v <= 127; ++v) sums.push_back(static_cast<int8_t>(v));
  std::vector<float> got(sums.size()), want(sums.size());
  SignOfSums(sums.data(), sums.size(), got.data());
  reference::SignOfSums(sums.data(), sums.size(), want.data());
  ExpectSameFloats(got, want, "sign of sums", 1, sums.size());
}

void ExpectQuantizerMatchesReference(const std::vector<float>& x, int nranks) {
  std::vector<int8_t> got(x.size(), 99), want(x.size(), 99);
  QuantizeInt8L1(x.data(), x.size(), nranks, got.data());
  reference::QuantizeInt8L1(x.data(), x.size(), nranks, want.data());
  ASSERT_EQ(got, want) << nranks << " ranks, count " << x.size();
}

TEST(QuantizeInt8L1, RandomInputsMatchTheReference) {
  std::mt19937_64 rng(6);
  for (int nranks : {1, 2, 3, 4, 5, 8, 16, 17, 63, 64, 127}) {
    for (size_t count = 0; count <= kMaxCount; ++count) {
      std::vector<float> x = RandomFloats(rng, count);
      for (float& v : x) v = std::isnan(v) || std::isinf(v) ? 0.25f : v;  // NaN/inf zero the whole vector
      ExpectQuantizerMatchesReference(x, nranks);
    }
    std::vector<float> with_nan = RandomFloats(rng, kMaxCount);
    ExpectQuantizerMatchesReference(with_nan, nranks);
  }
}

// x = +/-(j + 1/2) for j < s with s = floor(127/p): mean |x| = s/2, so the
// scale is exactly 1 and every element is a tie between two levels.
TEST(QuantizeInt8L1, HalvesRoundAwayFromZero) {
  std::mt19937_64 rng(7);
  for (int nranks : {1, 2, 3, 4, 7, 64, 127}) {
    const int levels = 127 / nranks;
    std::vector<float> x;
    for (int j = 0; j < levels; ++j) x.push_back((rng() % 2 ? -1.0f : 1.0f) * (static_cast<float>(j) + 0.5f));
    ExpectQuantizerMatchesReference(x, nranks);
    std::vector<int8_t> q(x.size());
    QuantizeInt8L1(x.data(), x.size(), nranks, q.data());
    for (size_t j = 0; j < x.size(); ++j) {
      ASSERT_EQ(q[j], static_cast<int8_t>((x[j] < 0 ? -1 : 1) * static_cast<int>(j + 1))) << x[j];
    }
  }
}

TEST(OneBitErrorFeedback, EncodeAndDecodeMatchTheReference) {
  std::mt19937_64 rng(5);
  std::uniform_real_distribution<float> uniform(-1.0f, 1.0f);
  for (int nranks = 1; nranks <= 17; ++nranks) {
    for (size_t count : {size_t{0}, size_t{1}, size_t{7}, size_t{8}, size_t{63}, size_t{64}, size_t{65},
                         size_t{130}, size_t{511}, size_t{512}, size_t{1500}}) {
      const size_t record_bytes = OneBitRecordBytes(count);
      std::vector<uint8_t> records(record_bytes * nranks), want_records(records.size());
      for (int r = 0; r < nranks; ++r) {
        std::vector<float> x(count), residual(count);
        for (size_t i = 0; i < count; ++i) {
          x[i] = uniform(rng);
          residual[i] = i % 5 == 0 ? -x[i] : 0.1f * uniform(rng);  // some y = 0 exactly
        }
        std::vector<float> want_residual = residual;
        EncodeOneBit(x.data(), residual.data(), count, records.data() + r * record_bytes);
        reference::EncodeOneBit(x.data(), want_residual.data(), count, want_records.data() + r * record_bytes);
        ExpectSameFloats(residual, want_residual, "residual", nranks, count);
      }
      ASSERT_EQ(records, want_records) << nranks << " ranks, count " << count;
      std::vector<float> got(count), want(count);
      DecodeOneBitMean(records.data(), record_bytes, nranks, count, got.data());
      reference::DecodeOneBitMean(records.data(), record_bytes, nranks, count, want.data());
      ExpectSameFloats(got, want, "one-bit mean", nranks, count);
    }
  }
}

// Every codec at count 0 with NULL buffers (what an empty std::vector's
// data() gives): nothing is read or written, and nothing is passed to
// memset/memcpy as NULL (undefined even for 0 bytes; UBSan's nonnull check).
TEST(CodecsAtCountZero, TakeNullBuffers) {
  PackSignBits(nullptr, 0, nullptr);
  SignVoteFromBits(nullptr, 0, 3, 0, nullptr);
  SignVoteFromBitsPortable(nullptr, 0, 3, 0, nullptr);
  SignVotes(nullptr, 0, nullptr);
  SignOfSums(nullptr, 0, nullptr);
  for (int nranks : {1, 2, 127}) QuantizeInt8L1(nullptr, 0, nranks, nullptr);
  uint8_t record[sizeof(float)] = {0xff, 0xff, 0xff, 0xff};
  ASSERT_EQ(OneBitRecordBytes(0), sizeof(record));
  EncodeOneBit(nullptr, nullptr, 0, record);
  float scale = -1.0f;
  std::memcpy(&scale, record, sizeof(scale));
  EXPECT_EQ(scale, 0.0f);
  DecodeOneBitMean(record, sizeof(record), 1, 0, nullptr);
  // The references too, as the tests above call them.
  reference::PackSignBits(nullptr, 0, nullptr);
  reference::QuantizeInt8L1(nullptr, 0, 2, nullptr);
  reference::EncodeOneBit(nullptr, nullptr, 0, record);
}

}  // namespace
}  // namespace chorus
