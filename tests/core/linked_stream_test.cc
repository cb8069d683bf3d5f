// Host streams linked to a device stream (core/device_stream_link.h), on the
// tests' fake device stream (a thread running queued kernels, standing in
// for a CUDA stream): an item starts only after the device work queued
// before it; device work queued after it waits for it; a failed item, or one
// that gave up waiting, still releases the device stream; and collectives
// enqueued through the C API on a linked stream follow the same order.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "chorus/chorus.h"
#include "chorus_build_config.h"
#include "core/handles.h"
#include "core/host_stream.h"
#include "fake_device_stream.h"

namespace chorus::testing {
namespace {

using std::chrono::milliseconds;

TEST(LinkedStreamTest, AnItemStartsAfterTheDeviceWorkQueuedBeforeIt) {
  FakeDeviceStream device;
  HostStream stream(device.Link(5000));
  std::atomic<int> written{0};
  int seen = -1;
  device.Launch([&] {
    std::this_thread::sleep_for(milliseconds(100));
    written.store(7);
  });
  stream.Enqueue([&] {
    seen = written.load();
    return Status::Ok();
  });
  const Status status = stream.Synchronize();
  ASSERT_TRUE(status.ok()) << status.message();
  EXPECT_EQ(seen, 7);
  ASSERT_TRUE(device.Synchronize());
  EXPECT_EQ(device.memory_waits(), 1);
  EXPECT_EQ(device.abandoned_waits(), 0);
}

TEST(LinkedStreamTest, LaterDeviceWorkWaitsForTheItem) {
  FakeDeviceStream device;
  HostStream stream(device.Link(5000));
  std::atomic<int> done{0};
  int seen = -1;
  stream.Enqueue([&] {
    std::this_thread::sleep_for(milliseconds(100));
    done.store(1);
    return Status::Ok();
  });
  device.Launch([&] { seen = done.load(); });
  ASSERT_TRUE(device.Synchronize());
  EXPECT_EQ(seen, 1);
  EXPECT_TRUE(stream.Synchronize().ok());
  EXPECT_EQ(device.abandoned_waits(), 0);
}

// Device kernels and host items alternate, d0 h0 d1 h1 ...: each side runs
// only once the other has run the step before, whatever their speeds.
TEST(LinkedStreamTest, ItemsAndDeviceWorkRunInEnqueueOrder) {
  FakeDeviceStream device;
  HostStream stream(device.Link(5000));
  std::mutex mutex;
  std::vector<std::string> log;
  auto note = [&](std::string entry) {
    std::lock_guard<std::mutex> lock(mutex);
    log.push_back(std::move(entry));
  };
  constexpr int kSteps = 20;
  for (int i = 0; i < kSteps; ++i) {
    device.Launch([&, i] {
      if (i % 3 == 0) std::this_thread::sleep_for(milliseconds(5));
      note("d" + std::to_string(i));
    });
    stream.Enqueue([&, i] {
      if (i % 4 == 1) std::this_thread::sleep_for(milliseconds(5));
      note("h" + std::to_string(i));
      return Status::Ok();
    });
  }
  device.Launch([&] { note("end"); });
  ASSERT_TRUE(device.Synchronize());
  ASSERT_TRUE(stream.Synchronize().ok());
  std::vector<std::string> expected;
  for (int i = 0; i < kSteps; ++i) {
    expected.push_back("d" + std::to_string(i));
    expected.push_back("h" + std::to_string(i));
  }
  expected.push_back("end");
  EXPECT_EQ(log, expected);
  EXPECT_EQ(device.memory_waits(), kSteps);
  EXPECT_EQ(device.abandoned_waits(), 0);
}

TEST(LinkedStreamTest, AFailedItemStillReleasesTheDeviceStream) {
  FakeDeviceStream device;
  HostStream stream(device.Link(5000));
  stream.Enqueue([] { return InternalError("the collective failed"); });
  std::atomic<bool> later{false};
  device.Launch([&] { later.store(true); });
  ASSERT_TRUE(device.Synchronize());
  EXPECT_TRUE(later.load());
  const Status status = stream.Synchronize();
  EXPECT_EQ(status.code(), chorusInternalError);
  EXPECT_NE(status.message().find("the collective failed"), std::string::npos) << status.message();
  EXPECT_EQ(device.abandoned_waits(), 0);
}

// The device work before the item outlasts the link's wait: the item fails
// with chorusTimeout without running, and the device stream goes on.
TEST(LinkedStreamTest, DeviceWorkPastTheWaitFailsTheItemWithATimeout) {
  FakeDeviceStream device;
  HostStream stream(device.Link(50));
  std::atomic<bool> let_go{false};
  device.Launch([&] {
    for (int i = 0; i < 5000 && !let_go.load(); ++i) std::this_thread::sleep_for(milliseconds(1));
  });
  bool ran = false;
  stream.Enqueue([&] {
    ran = true;
    return Status::Ok();
  });
  std::atomic<bool> later{false};
  device.Launch([&] { later.store(true); });
  const Status status = stream.Synchronize();
  EXPECT_EQ(status.code(), chorusTimeout) << status.message();
  EXPECT_FALSE(ran);
  let_go.store(true);
  ASSERT_TRUE(device.Synchronize());
  EXPECT_TRUE(later.load());
  EXPECT_EQ(device.abandoned_waits(), 0);
}

// Destroying the host stream runs its items, so the device stream is never
// left waiting for a ticket no one will write.
TEST(LinkedStreamTest, DestroyingTheStreamReleasesTheDeviceStream) {
  FakeDeviceStream device;
  std::atomic<int> items{0};
  int seen = -1;
  {
    HostStream stream(device.Link(5000));
    for (int i = 0; i < 5; ++i) {
      stream.Enqueue([&] {
        std::this_thread::sleep_for(milliseconds(10));
        ++items;
        return Status::Ok();
      });
    }
    device.Launch([&] { seen = items.load(); });
  }
  ASSERT_TRUE(device.Synchronize());
  EXPECT_EQ(seen, 5);
  EXPECT_EQ(device.abandoned_waits(), 0);
}

// Two ranks as threads, each with its own device stream: a late kernel
// fills the send buffer, the allreduce on the linked stream reduces it, an
// event recorded after it completes, and a kernel queued after both reads
// the result.
TEST(LinkedStreamTest, CollectivesThroughTheApiFollowTheDeviceStream) {
  constexpr int kRanks = 2;
  constexpr size_t kCount = 4099;
  chorusUniqueId id;
  ASSERT_EQ(chorusGetUniqueId(&id), chorusSuccess);
  std::vector<std::vector<float>> observed(kRanks);
  std::vector<std::string> errors(kRanks);
  std::vector<std::thread> threads;
  for (int rank = 0; rank < kRanks; ++rank) {
    threads.emplace_back([&, rank] {
      chorusComm_t comm = nullptr;
      chorusConfig_t config = CHORUS_CONFIG_INITIALIZER;
      config.timeoutMs = 20000;
      if (chorusCommInitRankConfig(&comm, kRanks, id, rank, &config) != chorusSuccess) {
        errors[rank] = chorusGetLastError(nullptr);
        return;
      }
      {
        FakeDeviceStream device;
        chorusStream_t stream = new chorusStream(device.Link(20000));
        chorusEvent_t event = nullptr;
        std::vector<float> send(kCount, 0.0f), recv(kCount, -1.0f);
        device.Launch([&] {
          std::this_thread::sleep_for(milliseconds(50));
          for (size_t i = 0; i < kCount; ++i) send[i] = static_cast<float>(rank + 1 + i % 1000);
        });
        if (chorusAllReduce(send.data(), recv.data(), kCount, chorusFloat32, chorusSum, comm, stream) !=
                chorusSuccess ||
            chorusEventCreate(&event) != chorusSuccess || chorusEventRecord(event, stream) != chorusSuccess) {
          errors[rank] = chorusGetLastError(comm);
        }
        device.Launch([&] { observed[rank] = recv; });
        if (!device.Synchronize()) errors[rank] += "device stream did not finish; ";
        if (chorusStreamSynchronize(stream) != chorusSuccess) errors[rank] += chorusGetLastError(nullptr);
        if (event != nullptr && chorusEventQuery(event) != chorusSuccess) errors[rank] += "event not complete; ";
        if (device.abandoned_waits() != 0) errors[rank] += "a device wait gave up; ";
        if (device.memory_waits() != 2) errors[rank] += "not one memory wait per call; ";
        if (event != nullptr) chorusEventDestroy(event);
        chorusStreamDestroy(stream);
      }
      chorusCommDestroy(comm);
    });
  }
  for (std::thread& thread : threads) thread.join();
  for (int rank = 0; rank < kRanks; ++rank) {
    ASSERT_EQ(errors[rank], "") << "rank " << rank;
    ASSERT_EQ(observed[rank].size(), kCount);
    for (size_t i = 0; i < kCount; ++i) {
      ASSERT_EQ(observed[rank][i], static_cast<float>(3 + 2 * (i % 1000))) << "rank " << rank << " element " << i;
    }
  }
}

TEST(LinkedStreamTest, StreamFromCudaSaysWhyItCannotLink) {
  chorusStream_t stream = nullptr;
  const chorusResult_t result = chorusStreamFromCuda(&stream, nullptr);
  const std::string message = chorusGetLastError(nullptr);
#if CHORUS_HAVE_CUDA
  if (result == chorusSuccess) {  // a machine with a GPU: linked to the legacy default stream
    EXPECT_EQ(chorusStreamDestroy(stream), chorusSuccess);
    GTEST_SKIP() << "a CUDA device is present: linking succeeded";
  }
  EXPECT_EQ(result, chorusSystemError);
  EXPECT_NE(message.find("chorusStreamFromCuda"), std::string::npos) << message;
#else
  EXPECT_EQ(result, chorusInvalidUsage);
  EXPECT_NE(message.find("no CUDA support"), std::string::npos) << message;
#endif
  EXPECT_EQ(stream, nullptr);
  EXPECT_EQ(chorusStreamFromCuda(nullptr, nullptr), chorusInvalidArgument);
}

}  // namespace
}  // namespace chorus::testing
