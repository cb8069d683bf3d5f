// DeviceIpc (transports/cuda_ipc/device_ipc.h) over the tests' fake devices:
// every rank's FakeDeviceMemory is one "allocation"; an export names it, an
// open hands back its fake address (ranks are threads, so the address is
// valid; the transport still takes the path of separate processes when the
// ranks' tokens differ), and copies go through the backings, so a transport
// that touched a device address itself would fault. Counts what it is asked.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <vector>

#include "fake_device_memory.h"
#include "transports/cuda_ipc/cuda_ipc_descriptor.h"
#include "transports/cuda_ipc/device_ipc.h"

namespace chorus::testing {

// Every rank's fake device, known to every rank's FakeDeviceIpc.
class FakeGpu {
 public:
  explicit FakeGpu(std::vector<FakeDeviceMemory*> memories) : memories_(std::move(memories)) {}
  // The memory holding `pointer`, or null (host memory).
  FakeDeviceMemory* Find(const void* pointer) const;
  size_t IndexOf(const FakeDeviceMemory* memory) const;
  const std::vector<FakeDeviceMemory*>& memories() const { return memories_; }

  std::atomic<int> opens{0};
  std::atomic<int> closes{0};
  std::atomic<int> exports{0};
  std::atomic<int> copies{0};
  // Exports fail, as for memory the runtime cannot export (managed memory).
  std::atomic<bool> refuse_exports{false};

 private:
  std::vector<FakeDeviceMemory*> memories_;
};

class FakeDeviceIpc final : public DeviceIpc {
 public:
  // `token`: ranks given the same token are "one process".
  FakeDeviceIpc(FakeGpu* gpu, uint64_t token) : gpu_(gpu), token_(token) {}

  MemoryKind kind() const override { return MemoryKind::kFakeDevice; }
  uint64_t ProcessToken() const override { return token_; }
  Status Export(const void* pointer, ExportedBuffer* out) override;
  Status Open(const IpcHandle& handle, void** base) override;
  void Close(void* base) override;
  Status Copy(void* dst, const void* src, size_t bytes) override;

 private:
  void* Translate(const void* pointer) const;

  FakeGpu* gpu_;
  uint64_t token_;
};

// A factory for CudaIpcTransportDescriptor: rank r gets a FakeDeviceIpc of
// `gpu` with token r + 1 (separate processes), or 1 for all (one process).
struct FakeIpcFactory {
  FakeGpu* gpu = nullptr;
  bool one_process = false;
  DeviceIpcFactory factory;
  FakeIpcFactory(FakeGpu* g, bool one);
};

}  // namespace chorus::testing
