// When the ranks of a host outnumber its CPUs, the transport says so
// (TransportCapabilities::shares_cores), the mux passes it on, and the waits
// of core that would spin do not poll: the host stream's worker and
// Synchronize (and the communicator's turn wait) check once and sleep.
// Counts the polls each wait makes.
#include <gtest/gtest.h>
#include <sched.h>

#include <chrono>
#include <memory>
#include <thread>
#include <vector>

#include "chorus/chorus.h"
#include "core/handles.h"
#include "core/host_stream.h"
#include "core/transport_mux.h"
#include "inproc_transport.h"

namespace chorus {
namespace {

using testing::InprocFabric;

// A fabric transport that reports `shares_cores`.
class CoresTransport : public testing::BorrowedTransport {
 public:
  CoresTransport(Transport* inner, bool shares_cores) : BorrowedTransport(inner), shares_cores_(shares_cores) {}
  const char* name() const override { return "cores"; }
  TransportCapabilities capabilities() const override {
    TransportCapabilities capabilities = inner_->capabilities();
    capabilities.shares_cores = shares_cores_;
    return capabilities;
  }

 private:
  bool shares_cores_;
};

TEST(OversubscribedWaitsTest, MuxSharesCoresWhenAnyServingTransportDoes) {
  for (bool shares : {false, true}) {
    InprocFabric near(2), far(2);
    std::vector<std::unique_ptr<Transport>> transports;
    transports.push_back(std::make_unique<CoresTransport>(near.transport(0), shares));
    transports.push_back(std::make_unique<CoresTransport>(far.transport(0), false));
    std::unique_ptr<TransportMux> mux;
    ASSERT_TRUE(TransportMux::Create(std::move(transports), 0, 2, &mux).ok());
    EXPECT_EQ(mux->capabilities().shares_cores, shares);
  }
}

TEST(OversubscribedWaitsTest, HostStreamDoesNotPollForSharedCoresWork) {
  HostStream stream;
  auto slow_item = [] {
    std::this_thread::sleep_for(std::chrono::microseconds(300));
    return Status::Ok();
  };
  stream.Enqueue(slow_item, /*cores_shared=*/true);
  ASSERT_TRUE(stream.Synchronize().ok());
  const uint64_t synchronize_before = stream.synchronize_polls();
  const uint64_t worker_before = stream.worker_polls();
  constexpr int kItems = 50;
  for (int i = 0; i < kItems; ++i) {
    stream.Enqueue(slow_item, /*cores_shared=*/true);
    ASSERT_TRUE(stream.Synchronize().ok());
  }
  // One check per wait: Synchronize once per call, the worker once per idle
  // spell (the one after the first item may fall on either side of the read).
  EXPECT_EQ(stream.synchronize_polls() - synchronize_before, static_cast<uint64_t>(kItems));
  EXPECT_LE(stream.worker_polls() - worker_before, static_cast<uint64_t>(kItems + 1));
}

TEST(OversubscribedWaitsTest, HostStreamPollsForDedicatedCoresWork) {
  HostStream stream;
  stream.Enqueue([] {
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
    return Status::Ok();
  });
  ASSERT_TRUE(stream.Synchronize().ok());
  EXPECT_GT(stream.synchronize_polls(), 16u) << "a first wait spins a batch of 16 polls at least";
}

// End to end: more thread ranks than this process's CPUs, over shared
// memory. The shm transport's decision reaches the communicator (whose turn
// waits then do not poll) and the host stream that runs its calls.
TEST(OversubscribedWaitsTest, TheTransportsDecisionReachesCommunicatorAndStream) {
  cpu_set_t set;
  CPU_ZERO(&set);
  ASSERT_EQ(::sched_getaffinity(0, sizeof(set), &set), 0);
  const int cpus = CPU_COUNT(&set);
  if (cpus > 4) GTEST_SKIP() << cpus << " CPUs: too many thread ranks to oversubscribe them in a test";
  const int nranks = cpus + 1;
  std::vector<chorusComm_t> comms(nranks);
  ASSERT_EQ(chorusCommInitAll(comms.data(), nranks, nullptr), chorusSuccess) << chorusGetLastError(nullptr);
  constexpr int kCalls = 20;
  std::vector<uint64_t> synchronize_polls(nranks);
  std::vector<int> failures(nranks);
  std::vector<std::thread> threads;
  for (int r = 0; r < nranks; ++r) {
    threads.emplace_back([&, r] {
      chorusStream_t stream = nullptr;
      if (chorusStreamCreate(&stream) != chorusSuccess) {
        ++failures[r];
        return;
      }
      // 8 KiB: through the executor and the transport (tiny calls may take
      // the shm board, which waits on its own).
      std::vector<float> values(2048, 1.0f);
      for (int i = 0; i < kCalls; ++i) {
        failures[r] += chorusAllReduce(values.data(), values.data(), values.size(), chorusFloat32, chorusSum, comms[r],
                                       stream) != chorusSuccess;
        failures[r] += chorusStreamSynchronize(stream) != chorusSuccess;
      }
      synchronize_polls[r] = stream->stream.synchronize_polls();
      failures[r] += chorusStreamDestroy(stream) != chorusSuccess;
    });
  }
  for (std::thread& thread : threads) thread.join();
  for (int r = 0; r < nranks; ++r) {
    EXPECT_EQ(failures[r], 0) << "rank " << r;
    EXPECT_TRUE(comms[r]->impl->cores_shared()) << "rank " << r << ": " << nranks << " ranks on " << cpus << " CPUs";
    EXPECT_EQ(synchronize_polls[r], static_cast<uint64_t>(kCalls)) << "rank " << r;
  }
  std::vector<std::thread> destroyers;  // concurrently, as ranks would
  std::vector<chorusResult_t> destroyed(nranks, chorusSuccess);
  for (int r = 0; r < nranks; ++r) destroyers.emplace_back([&, r] { destroyed[r] = chorusCommDestroy(comms[r]); });
  for (std::thread& thread : destroyers) thread.join();
  for (int r = 0; r < nranks; ++r) EXPECT_EQ(destroyed[r], chorusSuccess) << "rank " << r;
}

}  // namespace
}  // namespace chorus
