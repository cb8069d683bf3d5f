// The CUDA IPC overlay chosen by a communicator: the builder overlays the
// shm route of every same-host peer with it (`auto`, where a device is
// present: here the fake device of fake_device_ipc.h, through a registry of
// the test's own), device calls then move no device byte through host
// memory, host calls still take shm, and an overlay named alone fails with
// the reason.
#include <gtest/gtest.h>

#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "chorus/chorus.h"
#include "core/comm_factory.h"
#include "core/handles.h"
#include "fake_device_ipc.h"
#include "fake_device_memory.h"
#include "transports/shm/shm_transport.h"
#include "transports/tcp/tcp_transport.h"

namespace chorus::testing {
namespace {

constexpr size_t kDeviceBytes = 1 << 20;
constexpr size_t kRecvAt = kDeviceBytes / 2;

struct Rank {
  int rank = 0;
  chorusComm_t comm = nullptr;
  FakeDeviceMemory* device = nullptr;
  FakeDeviceEngine* engine = nullptr;
};

// `nranks` thread ranks with fake devices, over `selection` of a registry
// of shm, TCP and the CUDA IPC overlay on the fake device (its ranks taken
// for separate processes).
void RunRanks(int nranks, const std::string& selection, const std::function<void(Rank&)>& body,
              Status* first_error = nullptr) {
  std::vector<std::unique_ptr<FakeDeviceMemory>> devices;
  std::vector<FakeDeviceMemory*> memories;
  for (int r = 0; r < nranks; ++r) {
    devices.push_back(std::make_unique<FakeDeviceMemory>(kDeviceBytes));
    memories.push_back(devices.back().get());
  }
  FakeGpu gpu(memories);
  FakeIpcFactory factory(&gpu, /*one_process=*/false);
  const TransportRegistry registry(
      {ShmTransportDescriptor(), TcpTransportDescriptor(), CudaIpcTransportDescriptor(&factory.factory)});
  chorusUniqueId id;
  ASSERT_TRUE(MakeUniqueId(&id).ok());
  UniqueIdContents contents;
  ASSERT_TRUE(DecodeUniqueId(id, &contents).ok());
  std::vector<Status> created(nranks);
  std::vector<std::thread> threads;
  for (int rank = 0; rank < nranks; ++rank) {
    threads.emplace_back([&, rank] {
      FakeDeviceEngine engine(devices[rank].get());
      for (FakeDeviceMemory* memory : memories) {
        if (memory != devices[rank].get()) engine.AddPeerMemory(memory);
      }
      FakeDeviceUserMemory user_memory(devices[rank].get(), &engine);
      chorusConfig_t config = CHORUS_CONFIG_INITIALIZER;
      config.algo = "ring";  // the executor's path, not the board's
      config.timeoutMs = 20000;
      CommOptions options;
      created[rank] = ResolveOptions(&config, &options);
      if (!created[rank].ok()) return;
      options.transports = &registry;
      options.transport_selection = selection;
      options.use_tuner = false;
      options.chunk_bytes = 4096;
      options.user_memory = &user_memory;
      std::unique_ptr<chorusComm> comm;
      created[rank] = CreateCommWithOptions(contents, nranks, rank, options, &comm);
      if (!created[rank].ok()) return;
      Rank self{rank, comm.get(), devices[rank].get(), &engine};
      body(self);
      EXPECT_EQ(chorusCommDestroy(comm.release()), chorusSuccess);
    });
  }
  for (std::thread& thread : threads) thread.join();
  for (int r = 0; r < nranks; ++r) {
    if (first_error != nullptr) {
      if (!created[r].ok()) {
        *first_error = created[r];
        return;
      }
    } else {
      ASSERT_TRUE(created[r].ok()) << "rank " << r << ": " << created[r].message();
    }
  }
}

std::vector<int32_t> Input(int rank, size_t count) {
  std::vector<int32_t> values(count);
  for (size_t i = 0; i < count; ++i) values[i] = rank * 1000 + static_cast<int32_t>(i % 997);
  return values;
}

std::vector<int32_t> Get(const Rank& self, size_t offset, size_t count) {
  std::vector<int32_t> values(count);
  self.device->Download(values.data(), offset, count * sizeof(int32_t));
  return values;
}

// AllReduce, AllGather and a send/receive ring on device buffers: exact
// results, and over the overlay not one byte copied between device and host.
void ExpectDeviceCalls(int nranks, const std::string& selection, bool staged) {
  constexpr size_t kCount = 6000;
  RunRanks(nranks, selection, [&](Rank& self) {
    const std::vector<int32_t> in = Input(self.rank, kCount);
    self.device->Upload(0, in.data(), in.size() * sizeof(int32_t));
    uint8_t* device = self.device->data();
    ASSERT_EQ(chorusAllReduce(device, device + kRecvAt, kCount, chorusInt32, chorusSum, self.comm, nullptr),
              chorusSuccess);
    std::vector<int32_t> sum = Get(self, kRecvAt, kCount);
    for (size_t i = 0; i < kCount; ++i) {
      int32_t want = 0;
      for (int r = 0; r < nranks; ++r) want += Input(r, kCount)[i];
      ASSERT_EQ(sum[i], want) << "rank " << self.rank << " element " << i;
    }
    constexpr size_t kBlock = 1500;
    ASSERT_EQ(chorusAllGather(device, device + kRecvAt, kBlock, chorusInt32, self.comm, nullptr), chorusSuccess);
    std::vector<int32_t> gathered = Get(self, kRecvAt, kBlock * nranks);
    for (int r = 0; r < nranks; ++r) {
      for (size_t i = 0; i < kBlock; ++i) ASSERT_EQ(gathered[r * kBlock + i], Input(r, kCount)[i]);
    }
    const int next = (self.rank + 1) % nranks, previous = (self.rank + nranks - 1) % nranks;
    ASSERT_EQ(chorusGroupStart(), chorusSuccess);
    ASSERT_EQ(chorusSend(device, kBlock, chorusInt32, next, self.comm, nullptr), chorusSuccess);
    ASSERT_EQ(chorusRecv(device + kRecvAt, kBlock, chorusInt32, previous, self.comm, nullptr), chorusSuccess);
    ASSERT_EQ(chorusGroupEnd(), chorusSuccess);
    std::vector<int32_t> received = Get(self, kRecvAt, kBlock);
    for (size_t i = 0; i < kBlock; ++i) ASSERT_EQ(received[i], Input(previous, kCount)[i]);
    const FakeDeviceEngine::Counts& counts = self.engine->counts();
    if (staged) {
      EXPECT_GT(counts.copies_from_device, 0u) << "rank " << self.rank;
    } else {
      EXPECT_EQ(counts.copies_to_device, 0u) << "rank " << self.rank;
      EXPECT_EQ(counts.copies_from_device, 0u) << "rank " << self.rank;
    }
  });
}

TEST(CudaIpcCommTest, AutoOverlaysSameHostPeersAndStagesNothing) { ExpectDeviceCalls(3, "auto", false); }

TEST(CudaIpcCommTest, ANamedListWithACarrierOverlaysToo) { ExpectDeviceCalls(2, "cuda_ipc,shm", false); }

TEST(CudaIpcCommTest, WithoutTheOverlayDeviceBuffersAreStaged) { ExpectDeviceCalls(2, "shm", true); }

TEST(CudaIpcCommTest, HostCallsStillTakeShm) {
  RunRanks(2, "auto", [](Rank& self) {
    std::vector<float> data(3000, 1.0f + self.rank), out(3000);
    ASSERT_EQ(chorusAllReduce(data.data(), out.data(), data.size(), chorusFloat32, chorusSum, self.comm, nullptr),
              chorusSuccess);
    for (float value : out) ASSERT_EQ(value, 3.0f);
    EXPECT_EQ(self.engine->counts().reduces, 0u);
  });
}

TEST(CudaIpcCommTest, AnOverlayAloneFailsWithTheReason) {
  Status error;
  RunRanks(2, "cuda_ipc", [](Rank&) { FAIL() << "created"; }, &error);
  ASSERT_FALSE(error.ok());
  EXPECT_NE(error.message().find("needs a transport to carry the rest"), std::string::npos) << error.message();
}

}  // namespace
}  // namespace chorus::testing
