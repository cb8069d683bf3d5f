// The shm wait policy: when do the ranks of a host outnumber their CPUs,
// and does a connected transport pick the matching policy.
#include "transports/shm/shm_wait_policy.h"

#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "tests/transports/shm_test_util.h"
#include "transports/shm/shm_transport.h"

namespace chorus {
namespace {

using shm::CpuMask;
using shm::RanksOutnumberCpus;

CpuMask Cpus(std::initializer_list<int> cpus) {
  CpuMask mask;
  for (int cpu : cpus) mask.words[cpu / 64] |= uint64_t{1} << (cpu % 64);
  return mask;
}

TEST(ShmWaitPolicy, UnpinnedRanksAgainstTheirCpus) {
  const CpuMask two = Cpus({0, 1});
  EXPECT_FALSE(RanksOutnumberCpus({two}));
  EXPECT_FALSE(RanksOutnumberCpus({two, two}));
  EXPECT_TRUE(RanksOutnumberCpus({two, two, two}));
  EXPECT_TRUE(RanksOutnumberCpus({two, two, two, two}));
  const CpuMask many = Cpus({0, 1, 2, 3, 64, 65, 127, 1023});
  EXPECT_FALSE(RanksOutnumberCpus(std::vector<CpuMask>(8, many)));
  EXPECT_TRUE(RanksOutnumberCpus(std::vector<CpuMask>(9, many)));
}

TEST(ShmWaitPolicy, PinnedRanks) {
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

TEST(ShmWaitPolicy, UnknownMaskMeansEveryCpu) {
  const CpuMask unknown;  // no CPU set: the peer could not say
  EXPECT_FALSE(RanksOutnumberCpus({Cpus({0}), unknown}));
  EXPECT_FALSE(RanksOutnumberCpus({unknown, unknown, unknown}));
  // The two ranks pinned to core 0 still share it.
  EXPECT_TRUE(RanksOutnumberCpus({Cpus({0}), Cpus({0}), unknown}));
  EXPECT_FALSE(RanksOutnumberCpus({}));
}

TEST(ShmWaitPolicy, CurrentMaskHasTheCpusThisThreadMayUse) {
  const CpuMask mine = shm::CurrentCpuMask();
  size_t cpus = 0;
  for (uint64_t word : mine.words) cpus += static_cast<size_t>(__builtin_popcountll(word));
  EXPECT_GE(cpus, 1u);
  EXPECT_LE(cpus, static_cast<size_t>(std::thread::hardware_concurrency()));
}

// Thread ranks share this process's CPUs: the transport yields exactly when
// they outnumber them, unless the tuning forces a policy.
TEST(ShmWaitPolicy, ConnectedTransportChoosesFromTheMasks) {
  const CpuMask mine = shm::CurrentCpuMask();
  size_t cpus = 0;
  for (uint64_t word : mine.words) cpus += static_cast<size_t>(__builtin_popcountll(word));
  for (ShmWaitMode mode : {ShmWaitMode::kAuto, ShmWaitMode::kDedicatedCores, ShmWaitMode::kSharedCores}) {
    for (int nranks : {2, 3, 8}) {
      ShmTuning tuning;
      tuning.wait_mode = mode;
      std::vector<std::unique_ptr<Transport>> transports(nranks);
      std::vector<std::string> addresses;
      for (int rank = 0; rank < nranks; ++rank) {
        ASSERT_TRUE(CreateShmTransport(shm_test::Options(rank, nranks), &transports[rank], tuning).ok());
        addresses.push_back(transports[rank]->LocalAddress());
      }
      std::vector<Status> results(nranks);
      std::vector<std::thread> threads;
      for (int rank = 0; rank < nranks; ++rank) {
        threads.emplace_back([&, rank] {
          results[rank] = transports[rank]->Connect(addresses, Deadline::AfterMs(shm_test::kTestTimeoutMs));
        });
      }
      for (auto& thread : threads) thread.join();
      const bool expected = mode == ShmWaitMode::kSharedCores ||
                            (mode == ShmWaitMode::kAuto && static_cast<size_t>(nranks) > cpus);
      for (int rank = 0; rank < nranks; ++rank) {
        ASSERT_TRUE(results[rank].ok()) << results[rank].message();
        EXPECT_EQ(static_cast<ShmTransport*>(transports[rank].get())->shares_cores(), expected)
            << "mode " << static_cast<int>(mode) << ", " << nranks << " ranks, rank " << rank;
      }
    }
  }
}

}  // namespace
}  // namespace chorus
