// The shm wait policy: does a connected transport pick the policy that
// matches its ranks' CPUs (transports/cpu_sharing.h decides).
#include "transports/shm/shm_wait_policy.h"

#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "tests/transports/shm_test_util.h"
#include "transports/shm/shm_transport.h"

namespace chorus {
namespace {

// Thread ranks share this process's CPUs: the transport yields exactly when
// they outnumber them, unless the tuning forces a policy.
TEST(ShmWaitPolicy, ConnectedTransportChoosesFromTheMasks) {
  const size_t cpus = CpuCount(CurrentCpuMask());
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
