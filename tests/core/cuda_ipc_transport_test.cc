// The CUDA IPC overlay (transports/cuda_ipc/) between two ranks over shared
// memory, on the fake device (fake_device_ipc.h: device addresses fault when
// touched, so the transport must go through the DeviceIpc). Ranks connect on
// two threads; the tests then drive both from one thread, step by step.
#include <gtest/gtest.h>

#include <dirent.h>

#include <cstring>
#include <memory>
#include <numeric>
#include <string>
#include <thread>
#include <vector>

#include "core/transport_mux.h"
#include "fake_device_ipc.h"
#include "fake_device_memory.h"
#include "inproc_transport.h"
#include "transports/cuda_ipc/cuda_ipc_endpoint.h"
#include "transports/cuda_ipc/cuda_ipc_transport.h"
#include "transports/shm/shm_names.h"
#include "transports/shm/shm_transport.h"

namespace chorus::testing {
namespace {

constexpr int kDeadlineMs = 20000;
constexpr size_t kDeviceBytes = 64 * 1024;
constexpr MemoryKind kDevice = MemoryKind::kFakeDevice;

// Two ranks, each with a fake device, an shm transport and the overlay on it.
class CudaIpcPair {
 public:
  explicit CudaIpcPair(bool one_process) : gpu_({&device_[0], &device_[1]}) {
    secret_[0] = 7;
    secret_[1] = static_cast<uint8_t>(::getpid());
    std::vector<std::string> shm_addresses(2), ipc_addresses(2);
    for (int r = 0; r < 2; ++r) {
      TransportOptions options;
      options.rank = r;
      options.nranks = 2;
      std::memcpy(options.secret, secret_, sizeof(secret_));
      EXPECT_TRUE(CreateShmTransport(options, &shm_[r]).ok());
      const uint64_t token = one_process ? 1 : r + 1;
      EXPECT_TRUE(CreateCudaIpcTransport(options, std::make_unique<FakeDeviceIpc>(&gpu_, token), &overlay_[r]).ok());
      shm_addresses[r] = shm_[r]->LocalAddress();
      ipc_addresses[r] = overlay_[r]->LocalAddress();
    }
    std::vector<std::thread> threads;
    Status results[2];
    for (int r = 0; r < 2; ++r) {
      threads.emplace_back([&, r] {
        results[r] = shm_[r]->Connect(shm_addresses, Deadline::AfterMs(kDeadlineMs));
        std::vector<Carrier> carriers(2);
        carriers[1 - r] = {shm_[r].get(), shm_[r]->endpoint(1 - r)};
        if (results[r].ok()) results[r] = overlay_[r]->SetCarriers(carriers);
        if (results[r].ok()) results[r] = overlay_[r]->Connect(ipc_addresses, Deadline::AfterMs(kDeadlineMs));
        std::vector<std::unique_ptr<Transport>> routes;
        routes.push_back(std::make_unique<BorrowedTransport>(shm_[r].get()));
        routes.push_back(std::make_unique<BorrowedTransport>(overlay_[r].get()));
        if (results[r].ok()) results[r] = TransportMux::Create(std::move(routes), {1, 1}, r, 2, &mux_[r]);
      });
    }
    for (std::thread& thread : threads) thread.join();
    for (const Status& status : results) EXPECT_TRUE(status.ok()) << status.message();
  }

  const uint8_t* secret() const { return secret_; }
  FakeGpu& gpu() { return gpu_; }
  FakeDeviceMemory& device(int r) { return device_[r]; }
  Endpoint* endpoint(int r) { return mux_[r]->endpoint(1 - r); }
  const CudaIpcEndpoint::Counts& counts(int r) { return static_cast<CudaIpcEndpoint*>(endpoint(r))->counts(); }
  Transport* mux(int r) { return mux_[r].get(); }

  // Progresses both ranks until every request is done; the first error.
  Status Drive(const std::vector<const TransferRequest*>& requests, int rounds = 100000) {
    for (int i = 0; i < rounds; ++i) {
      bool all = true;
      for (const TransferRequest* request : requests) all = all && request->done;
      if (all) return Status::Ok();
      for (int r = 0; r < 2; ++r) CHORUS_RETURN_IF_ERROR(mux_[r]->Progress(0));
    }
    return Status(chorusTimeout, "requests not done");
  }
  // Progresses only rank r a few times.
  Status Poll(int r, int rounds = 50) {
    for (int i = 0; i < rounds; ++i) CHORUS_RETURN_IF_ERROR(mux_[r]->Progress(0));
    return Status::Ok();
  }

 private:
  uint8_t secret_[16] = {};
  FakeDeviceMemory device_[2] = {FakeDeviceMemory(kDeviceBytes), FakeDeviceMemory(kDeviceBytes)};
  FakeGpu gpu_;
  std::unique_ptr<Transport> shm_[2], overlay_[2];
  std::unique_ptr<TransportMux> mux_[2];
};

TransferRequest Request(void* buffer, size_t bytes, uint64_t tag, MemoryKind kind, MemoryKind call_kind) {
  TransferRequest request;
  request.buffer = buffer;
  request.bytes = bytes;
  request.tag = tag;
  request.kind = kind;
  request.call_kind = call_kind;
  return request;
}

std::vector<uint8_t> Pattern(size_t bytes, uint8_t seed) {
  std::vector<uint8_t> values(bytes);
  for (size_t i = 0; i < bytes; ++i) values[i] = static_cast<uint8_t>(seed + i * 7);
  return values;
}

std::vector<uint8_t> Download(FakeDeviceMemory& device, size_t offset, size_t bytes) {
  std::vector<uint8_t> values(bytes);
  device.Download(values.data(), offset, bytes);
  return values;
}

TEST(CudaIpcTransportTest, EndpointsTakeDeviceMemory) {
  CudaIpcPair pair(false);
  EXPECT_TRUE(Contains(pair.endpoint(0)->memory_kinds(), kDevice));
  EXPECT_TRUE(Contains(pair.endpoint(0)->memory_kinds(), MemoryKind::kHost));
  EXPECT_TRUE(pair.endpoint(0)->combine_on_receive());
  EXPECT_TRUE(Contains(pair.mux(0)->capabilities().memory_kinds, kDevice));
}

// The receiver maps the sender's allocation once and copies out of it; the
// send completes only when the receiver acknowledged.
TEST(CudaIpcTransportTest, ReceiverPullsFromTheSendersDeviceBufferThenAcknowledges) {
  CudaIpcPair pair(false);
  const std::vector<uint8_t> first = Pattern(5000, 1), second = Pattern(3000, 9);
  pair.device(0).Upload(0, first.data(), first.size());
  pair.device(0).Upload(8192, second.data(), second.size());
  TransferRequest send = Request(pair.device(0).data(), first.size(), 5, kDevice, kDevice);
  ASSERT_TRUE(pair.endpoint(0)->PostSend(&send).ok());
  ASSERT_TRUE(pair.Poll(0).ok());
  EXPECT_FALSE(send.done) << "a pulled send is done only once the receiver pulled it";
  TransferRequest recv = Request(pair.device(1).data() + 100, first.size(), 5, kDevice, kDevice);
  ASSERT_TRUE(pair.endpoint(1)->PostRecv(&recv).ok());
  ASSERT_TRUE(pair.Drive({&send, &recv}).ok());
  EXPECT_EQ(Download(pair.device(1), 100, first.size()), first);

  // Another buffer of the same allocation: no second mapping.
  TransferRequest send2 = Request(pair.device(0).data() + 8192, second.size(), 6, kDevice, kDevice);
  TransferRequest recv2 = Request(pair.device(1).data() + 20000, second.size(), 6, kDevice, kDevice);
  ASSERT_TRUE(pair.endpoint(0)->PostSend(&send2).ok());
  ASSERT_TRUE(pair.endpoint(1)->PostRecv(&recv2).ok());
  ASSERT_TRUE(pair.Drive({&send2, &recv2}).ok());
  EXPECT_EQ(Download(pair.device(1), 20000, second.size()), second);
  EXPECT_EQ(pair.counts(1).pulls, 2u);
  EXPECT_EQ(pair.counts(1).maps, 1u);
  EXPECT_EQ(pair.gpu().opens, 1);
  EXPECT_EQ(pair.counts(0).inline_sends, 0u);
}

TEST(CudaIpcTransportTest, ThreadsOfOneProcessUseEachOthersPointers) {
  CudaIpcPair pair(true);
  const std::vector<uint8_t> bytes = Pattern(4096, 3);
  pair.device(0).Upload(64, bytes.data(), bytes.size());
  TransferRequest send = Request(pair.device(0).data() + 64, bytes.size(), 1, kDevice, kDevice);
  TransferRequest recv = Request(pair.device(1).data(), bytes.size(), 1, kDevice, kDevice);
  ASSERT_TRUE(pair.endpoint(0)->PostSend(&send).ok());
  ASSERT_TRUE(pair.endpoint(1)->PostRecv(&recv).ok());
  ASSERT_TRUE(pair.Drive({&send, &recv}).ok());
  EXPECT_EQ(Download(pair.device(1), 0, bytes.size()), bytes);
  EXPECT_EQ(pair.gpu().opens, 0);
  EXPECT_EQ(pair.gpu().exports, 0);
  EXPECT_EQ(pair.counts(1).pulls, 1u);
}

// Host memory in a device call (scratch, staging) crosses the carrier after
// its descriptor, into host or device memory; device bytes pulled into host
// memory need no inline copy.
TEST(CudaIpcTransportTest, HostBytesOfADeviceCallGoInline) {
  CudaIpcPair pair(false);
  const std::vector<uint8_t> host_in = Pattern(3000, 4), device_in = Pattern(2000, 8);
  pair.device(0).Upload(0, device_in.data(), device_in.size());
  std::vector<uint8_t> host_out(device_in.size(), 0);
  TransferRequest send_host = Request(const_cast<uint8_t*>(host_in.data()), host_in.size(), 2, MemoryKind::kHost, kDevice);
  TransferRequest recv_device = Request(pair.device(1).data() + 512, host_in.size(), 2, kDevice, kDevice);
  TransferRequest send_device = Request(pair.device(0).data(), device_in.size(), 3, kDevice, kDevice);
  TransferRequest recv_host = Request(host_out.data(), host_out.size(), 3, MemoryKind::kHost, kDevice);
  ASSERT_TRUE(pair.endpoint(0)->PostSend(&send_host).ok());
  ASSERT_TRUE(pair.endpoint(0)->PostSend(&send_device).ok());
  ASSERT_TRUE(pair.endpoint(1)->PostRecv(&recv_device).ok());
  ASSERT_TRUE(pair.endpoint(1)->PostRecv(&recv_host).ok());
  ASSERT_TRUE(pair.Drive({&send_host, &recv_device, &send_device, &recv_host}).ok());
  EXPECT_EQ(Download(pair.device(1), 512, host_in.size()), host_in);
  EXPECT_EQ(host_out, device_in);
  EXPECT_EQ(pair.counts(0).inline_sends, 1u);
  EXPECT_EQ(pair.counts(1).pulls, 1u);
}

// Device memory the runtime cannot export crosses the carrier from a host
// copy; a later send of host memory through the same (reused) send state
// carries its own bytes, not that copy.
TEST(CudaIpcTransportTest, UnexportableDeviceMemoryGoesInline) {
  CudaIpcPair pair(false);
  const std::vector<uint8_t> device_in = Pattern(2048, 11), host_in = Pattern(2048, 77);
  pair.device(0).Upload(0, device_in.data(), device_in.size());
  pair.gpu().refuse_exports = true;
  TransferRequest send = Request(pair.device(0).data(), device_in.size(), 20, kDevice, kDevice);
  TransferRequest recv = Request(pair.device(1).data(), device_in.size(), 20, kDevice, kDevice);
  ASSERT_TRUE(pair.endpoint(0)->PostSend(&send).ok());
  ASSERT_TRUE(pair.endpoint(1)->PostRecv(&recv).ok());
  ASSERT_TRUE(pair.Drive({&send, &recv}).ok());
  EXPECT_EQ(Download(pair.device(1), 0, device_in.size()), device_in);
  EXPECT_EQ(pair.counts(0).inline_sends, 1u);
  EXPECT_EQ(pair.counts(1).pulls, 0u);
  TransferRequest send_host =
      Request(const_cast<uint8_t*>(host_in.data()), host_in.size(), 21, MemoryKind::kHost, kDevice);
  TransferRequest recv2 = Request(pair.device(1).data() + 4096, host_in.size(), 21, kDevice, kDevice);
  ASSERT_TRUE(pair.endpoint(0)->PostSend(&send_host).ok());
  ASSERT_TRUE(pair.endpoint(1)->PostRecv(&recv2).ok());
  ASSERT_TRUE(pair.Drive({&send_host, &recv2}).ok());
  EXPECT_EQ(Download(pair.device(1), 4096, host_in.size()), host_in);
}

// What a combiner is handed: the peer's device bytes where it reads device
// memory (one call, the mapped address), host pieces where it does not.
struct Seen {
  FakeGpu* gpu = nullptr;
  std::vector<uint8_t> bytes;
  int calls = 0;
  int on_device = 0;
};

void Record(void* context, size_t offset, const void* incoming, size_t bytes) {
  auto* seen = static_cast<Seen*>(context);
  ++seen->calls;
  FakeDeviceMemory* memory = seen->gpu->Find(incoming);
  if (memory != nullptr) ++seen->on_device;
  const auto* source = static_cast<const uint8_t*>(memory != nullptr ? memory->Backing(incoming) : incoming);
  if (seen->bytes.size() < offset + bytes) seen->bytes.resize(offset + bytes);
  std::memcpy(seen->bytes.data() + offset, source, bytes);
}

TEST(CudaIpcTransportTest, CombinersReadThePeersDeviceMemoryOrHostPieces) {
  CudaIpcPair pair(false);
  const std::vector<uint8_t> bytes = Pattern(6000, 5);
  pair.device(0).Upload(0, bytes.data(), bytes.size());
  for (bool reads_device : {true, false}) {
    SCOPED_TRACE(reads_device ? "device combiner" : "CPU combiner");
    Seen seen;
    seen.gpu = &pair.gpu();
    ReceiveCombiner combiner;
    combiner.fn = Record;
    combiner.context = &seen;
    if (reads_device) combiner.readable |= KindBit(kDevice);
    TransferRequest send = Request(pair.device(0).data(), bytes.size(), 4, kDevice, kDevice);
    TransferRequest recv = Request(pair.device(1).data(), bytes.size(), 4, kDevice, kDevice);
    recv.combine = &combiner;
    ASSERT_TRUE(pair.endpoint(0)->PostSend(&send).ok());
    ASSERT_TRUE(pair.endpoint(1)->PostRecv(&recv).ok());
    ASSERT_TRUE(pair.Drive({&send, &recv}).ok());
    EXPECT_EQ(seen.bytes, bytes);
    EXPECT_EQ(seen.on_device, reads_device ? 1 : 0);
    EXPECT_EQ(seen.calls, 1);  // 6000 bytes fit one host piece
    EXPECT_EQ(Download(pair.device(1), 0, 16), std::vector<uint8_t>(16, 0)) << "a combined receive writes nothing";
  }
}

// A host call passes to the carrier untouched, even queued behind a device
// call's receive whose descriptor has not arrived.
TEST(CudaIpcTransportTest, HostCallsPassToTheCarrierInOrder) {
  CudaIpcPair pair(false);
  const std::vector<uint8_t> device_in = Pattern(1000, 6), host_in = Pattern(700, 2);
  pair.device(0).Upload(0, device_in.data(), device_in.size());
  std::vector<uint8_t> host_out(host_in.size());
  TransferRequest recv_device = Request(pair.device(1).data(), device_in.size(), 10, kDevice, kDevice);
  TransferRequest recv_host = Request(host_out.data(), host_out.size(), 11, MemoryKind::kHost, MemoryKind::kHost);
  ASSERT_TRUE(pair.endpoint(1)->PostRecv(&recv_device).ok());
  ASSERT_TRUE(pair.endpoint(1)->PostRecv(&recv_host).ok());
  ASSERT_TRUE(pair.Poll(1).ok());
  TransferRequest send_device = Request(pair.device(0).data(), device_in.size(), 10, kDevice, kDevice);
  TransferRequest send_host =
      Request(const_cast<uint8_t*>(host_in.data()), host_in.size(), 11, MemoryKind::kHost, MemoryKind::kHost);
  ASSERT_TRUE(pair.endpoint(0)->PostSend(&send_device).ok());
  ASSERT_TRUE(pair.endpoint(0)->PostSend(&send_host).ok());
  ASSERT_TRUE(pair.Drive({&recv_device, &recv_host, &send_device, &send_host}).ok());
  EXPECT_EQ(Download(pair.device(1), 0, device_in.size()), device_in);
  EXPECT_EQ(host_out, host_in);
  EXPECT_EQ(pair.counts(1).pulls, 1u);
  EXPECT_EQ(pair.counts(0).inline_sends, 0u);
}

TEST(CudaIpcTransportTest, ZeroBytesInADeviceCall) {
  CudaIpcPair pair(false);
  TransferRequest send = Request(pair.device(0).data(), 0, 12, kDevice, kDevice);
  TransferRequest recv = Request(pair.device(1).data(), 0, 12, kDevice, kDevice);
  ASSERT_TRUE(pair.endpoint(0)->PostSend(&send).ok());
  ASSERT_TRUE(pair.endpoint(1)->PostRecv(&recv).ok());
  ASSERT_TRUE(pair.Drive({&send, &recv}).ok());
  EXPECT_EQ(pair.gpu().exports, 0);
  EXPECT_EQ(pair.counts(1).pulls, 0u);
}

// Ranks that disagree on the kind of a call's buffers get the carrier's
// matching error, not a hang.
TEST(CudaIpcTransportTest, RanksDisagreeingOnTheCallsKindFail) {
  CudaIpcPair pair(false);
  std::vector<uint8_t> host_out(256);
  TransferRequest send = Request(pair.device(0).data(), host_out.size(), 13, kDevice, kDevice);
  TransferRequest recv = Request(host_out.data(), host_out.size(), 13, MemoryKind::kHost, MemoryKind::kHost);
  ASSERT_TRUE(pair.endpoint(0)->PostSend(&send).ok());
  ASSERT_TRUE(pair.endpoint(1)->PostRecv(&recv).ok());
  const Status status = pair.Drive({&send, &recv});
  ASSERT_FALSE(status.ok());
  EXPECT_NE(status.code(), chorusTimeout) << status.message();
  EXPECT_NE(status.message().find("tag"), std::string::npos) << status.message();
}

// Connected, no segment of the communicator keeps its name: peers mapped
// them and their creators unlinked them.
TEST(CudaIpcTransportTest, ConnectedSegmentsLeaveNoNames) {
  CudaIpcPair pair(false);
  const std::string prefix = shm::CommSegmentPrefix(pair.secret()).substr(1);
  DIR* dir = opendir("/dev/shm");
  ASSERT_NE(dir, nullptr);
  std::vector<std::string> left;
  while (dirent* entry = readdir(dir)) {
    if (std::string(entry->d_name).rfind(prefix, 0) == 0) left.push_back(entry->d_name);
  }
  closedir(dir);
  EXPECT_TRUE(left.empty()) << left.front();
}

}  // namespace
}  // namespace chorus::testing
