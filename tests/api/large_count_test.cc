// LARGE: one allreduce of more than 2^31 elements (2 ranks as threads, uint8,
// in place, 2 GiB per rank), so that no 32-bit count or offset survives
// anywhere on the path. Needs ~4.5 GiB of free memory; skipped without it.
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <memory>

#include "tests/api/harness.h"

namespace chorus_test {
namespace {

constexpr size_t kCount = (size_t{1} << 31) + 17;
constexpr int kRanks = 2;
constexpr size_t kPeriod = 64;

// Rank r holds (7i + 13r) mod 64 at element i: depends on i mod 64 only, so
// the whole input and the expected sum are one 64-byte pattern repeated.
uint8_t InputByte(int rank, size_t index) {
  return static_cast<uint8_t>((index * 7 + static_cast<size_t>(rank) * 13) % kPeriod);
}

uint8_t ExpectedByte(size_t index) { return static_cast<uint8_t>(InputByte(0, index) + InputByte(1, index)); }

size_t AvailableMemoryBytes() {
  return static_cast<size_t>(sysconf(_SC_AVPHYS_PAGES)) * static_cast<size_t>(sysconf(_SC_PAGESIZE));
}

void FillPattern(uint8_t* data, size_t count, const uint8_t (&pattern)[kPeriod]) {
  size_t i = 0;
  for (; i + kPeriod <= count; i += kPeriod) std::memcpy(data + i, pattern, kPeriod);
  std::memcpy(data + i, pattern, count - i);
}

// Elements that differ from the repeated expected pattern.
size_t CountWrong(const uint8_t* data, size_t count, const uint8_t (&pattern)[kPeriod]) {
  size_t wrong = 0;
  size_t i = 0;
  for (; i + kPeriod <= count; i += kPeriod) {
    if (std::memcmp(data + i, pattern, kPeriod) == 0) continue;
    for (size_t j = 0; j < kPeriod; ++j) wrong += data[i + j] != pattern[j];
  }
  for (size_t j = 0; i + j < count; ++j) wrong += data[i + j] != pattern[j];
  return wrong;
}

TEST(LargeCountTest, AllReduceSumOfMoreThan2Pow31Uint8Elements) {
  if (AvailableMemoryBytes() < (size_t{9} << 29)) {
    GTEST_SKIP() << "needs 4.5 GiB free, have " << (AvailableMemoryBytes() >> 20) << " MiB";
  }
  ThreadComms comms = ThreadComms::InitRank(kRanks);
  ASSERT_TRUE(comms.ok()) << comms.error();
  const auto start = std::chrono::steady_clock::now();
  comms.Run(
      [&](int rank, chorusComm_t comm) {
        uint8_t input[kPeriod];
        uint8_t expected[kPeriod];
        for (size_t j = 0; j < kPeriod; ++j) {
          input[j] = InputByte(rank, j);
          expected[j] = ExpectedByte(j);
        }
        std::unique_ptr<uint8_t[]> data(new uint8_t[kCount]);
        FillPattern(data.get(), kCount, input);
        const chorusResult_t result =
            chorusAllReduce(data.get(), data.get(), kCount, chorusUint8, chorusSum, comm, nullptr);
        ASSERT_EQ(result, chorusSuccess) << Describe(result, comm);
        // Samples around the 2^31 boundary first: the likeliest to break.
        for (size_t index : {size_t{0}, (size_t{1} << 31) - 1, size_t{1} << 31, (size_t{1} << 31) + 1, kCount - 1}) {
          EXPECT_EQ(data[index], ExpectedByte(index)) << "rank " << rank << " index " << index;
        }
        EXPECT_EQ(CountWrong(data.get(), kCount, expected), 0u) << "rank " << rank;
      },
      Millis(120000));
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_LT(seconds, 60.0) << "a 2 GiB allreduce should take seconds";
  std::printf("large allreduce of %zu uint8 on %d ranks: %.1f s\n", kCount, kRanks, seconds);
}

}  // namespace
}  // namespace chorus_test
