// Whether the ranks of a host can all run at once, from their CPU masks,
// and the masks' text form (the UCX address carries it).
#include "transports/cpu_sharing.h"

#include <initializer_list>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

namespace chorus {
namespace {

CpuMask Cpus(std::initializer_list<int> cpus) {
  CpuMask mask;
  for (int cpu : cpus) mask.words[cpu / 64] |= uint64_t{1} << (cpu % 64);
  return mask;
}

TEST(CpuSharing, UnpinnedRanksAgainstTheirCpus) {
  const CpuMask two = Cpus({0, 1});
  EXPECT_FALSE(RanksOutnumberCpus({two}));
  EXPECT_FALSE(RanksOutnumberCpus({two, two}));
  EXPECT_TRUE(RanksOutnumberCpus({two, two, two}));
  EXPECT_TRUE(RanksOutnumberCpus({two, two, two, two}));
  const CpuMask many = Cpus({0, 1, 2, 3, 64, 65, 127, 1023});
  EXPECT_FALSE(RanksOutnumberCpus(std::vector<CpuMask>(8, many)));
  EXPECT_TRUE(RanksOutnumberCpus(std::vector<CpuMask>(9, many)));
}

TEST(CpuSharing, PinnedRanks) {
  // One rank per core (taskset -c r): every rank has its core.
  EXPECT_FALSE(RanksOutnumberCpus({Cpus({0}), Cpus({1})}));
  EXPECT_FALSE(RanksOutnumberCpus({Cpus({0}), Cpus({1}), Cpus({2}), Cpus({3})}));
  // Two ranks pinned to each of two cores.
  EXPECT_TRUE(RanksOutnumberCpus({Cpus({0}), Cpus({0}), Cpus({1}), Cpus({1})}));
  // Rank 0 has core 0 alone, ranks 1 and 2 share core 1.
  EXPECT_TRUE(RanksOutnumberCpus({Cpus({0}), Cpus({1}), Cpus({1})}));
  // Two ranks on core 0 among four cores that have room for five ranks.
  EXPECT_TRUE(RanksOutnumberCpus({Cpus({0}), Cpus({1}), Cpus({2}), Cpus({3}), Cpus({0})}));
  // Ranks 0 and 2 pinned, rank 1 free on cores 0-1 (it can use core 1): no core is short.
  EXPECT_FALSE(RanksOutnumberCpus({Cpus({0}), Cpus({0, 1}), Cpus({2})}));
  // Rank 1 may use cores 0-1, but ranks 0 and 2 pin both: three ranks, two cores.
  EXPECT_TRUE(RanksOutnumberCpus({Cpus({0}), Cpus({0, 1}), Cpus({1}), Cpus({2, 3})}));
}

TEST(CpuSharing, UnknownMaskMeansEveryCpu) {
  const CpuMask unknown;  // no CPU set: the peer could not say
  EXPECT_FALSE(RanksOutnumberCpus({Cpus({0}), unknown}));
  EXPECT_FALSE(RanksOutnumberCpus({unknown, unknown, unknown}));
  // The two ranks pinned to core 0 still share it.
  EXPECT_TRUE(RanksOutnumberCpus({Cpus({0}), Cpus({0}), unknown}));
  EXPECT_FALSE(RanksOutnumberCpus({}));
}

TEST(CpuSharing, CurrentMaskHasTheCpusThisThreadMayUse) {
  const size_t cpus = CpuCount(CurrentCpuMask());
  EXPECT_EQ(CpuCount(Cpus({0, 64, 129, 1023})), 4u);
  EXPECT_EQ(CpuCount(CpuMask()), 0u);
  EXPECT_GE(cpus, 1u);
  EXPECT_LE(cpus, static_cast<size_t>(std::thread::hardware_concurrency()));
}

TEST(CpuSharing, MasksRoundTripAsText) {
  EXPECT_EQ(EncodeCpuMask(CpuMask()), "");
  EXPECT_EQ(EncodeCpuMask(Cpus({0, 1})), "3");
  EXPECT_EQ(EncodeCpuMask(Cpus({0, 64, 129})), "1.1.2");
  for (const CpuMask& mask : {CpuMask(), Cpus({0, 1}), Cpus({0, 64, 129}), Cpus({5, 1023}), CurrentCpuMask()}) {
    CpuMask decoded;
    decoded.words[3] = 7;
    ASSERT_TRUE(DecodeCpuMask(EncodeCpuMask(mask), &decoded)) << EncodeCpuMask(mask);
    for (size_t i = 0; i < kCpuMaskWords; ++i) EXPECT_EQ(decoded.words[i], mask.words[i]) << i;
  }
}

TEST(CpuSharing, MalformedMaskTextIsRefused) {
  CpuMask mask;
  for (const char* text : {".", "3.", ".3", "3..1", "g", "-1", "3 ", "1ffffffffffffffff",
                           "1.1.1.1.1.1.1.1.1.1.1.1.1.1.1.1.1", "FF"}) {
    EXPECT_FALSE(DecodeCpuMask(text, &mask)) << text;
  }
}

}  // namespace
}  // namespace chorus
