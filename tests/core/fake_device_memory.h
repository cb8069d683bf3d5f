// A fake device for the tests of the staging paths, which run without a GPU:
// FakeDeviceMemory hands out addresses the CPU cannot touch (an mmap'ed
// PROT_NONE range: any direct load or store by a transport or the executor
// faults), and keeps the bytes in a separate host backing that only its
// engine and the test reach. FakeDeviceEngine is the LocalEngine of
// MemoryKind::kFakeDevice over it: it translates fake addresses to the
// backing (host operands pass through) and counts its calls.
// FakeDeviceUserMemory presents the memory's range to a communicator as
// kFakeDevice (CommOptions::user_memory), so that calls through the C API
// take the device paths without a GPU.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "core/local_engine.h"
#include "core/user_memory.h"

namespace chorus::testing {

class FakeDeviceMemory {
 public:
  explicit FakeDeviceMemory(size_t bytes);
  ~FakeDeviceMemory();
  FakeDeviceMemory(const FakeDeviceMemory&) = delete;
  FakeDeviceMemory& operator=(const FakeDeviceMemory&) = delete;

  // The fake device address of byte 0; dereferencing it faults.
  uint8_t* data() const { return base_; }
  size_t size() const { return size_; }
  bool Contains(const void* pointer) const;
  // The backing byte of a fake device address (which must be Contained).
  uint8_t* Backing(const void* pointer);
  void Upload(size_t offset, const void* host, size_t bytes);
  void Download(void* host, size_t offset, size_t bytes) const;

 private:
  uint8_t* base_ = nullptr;
  size_t size_ = 0;
  size_t mapped_ = 0;
  std::vector<uint8_t> backing_;
};

class FakeDeviceEngine final : public LocalEngine {
 public:
  explicit FakeDeviceEngine(FakeDeviceMemory* memory) : memory_(memory) {}

  struct Counts {
    size_t copies_to_device = 0;    // host -> device
    size_t copies_from_device = 0;  // device -> host
    size_t copies_on_device = 0;    // device -> device
    size_t copies_on_host = 0;      // host -> host: the executor should never ask
    size_t reduces = 0;
    size_t scales = 0;
    size_t bytes_to_device = 0;
    size_t bytes_from_device = 0;
  };
  const Counts& counts() const { return counts_; }

  MemoryKind kind() const override { return MemoryKind::kFakeDevice; }
  Status Copy(void* dst, const void* src, size_t bytes) override;
  Status Reduce(void* dst, const void* a, const void* b, size_t count, DataType dtype, ReduceOp op,
                const void* scale) override;
  Status Scale(void* dst, const void* src, size_t count, DataType dtype, const void* scale) override;

  // The host engine for CPU memory and this one for kFakeDevice.
  LocalEngines Table();

  // Other ranks' fake devices whose addresses this engine is handed too
  // (a peer's buffer mapped by the CUDA IPC transport, fake_device_ipc.h).
  void AddPeerMemory(FakeDeviceMemory* peer) { peers_.push_back(peer); }

 private:
  // The fake device (this engine's or a peer's) holding `pointer`, or null.
  FakeDeviceMemory* Holder(const void* pointer) const;
  void* Translate(const void* pointer) const;
  bool OnDevice(const void* pointer) const;

  FakeDeviceMemory* memory_;
  std::vector<FakeDeviceMemory*> peers_;
  Counts counts_;
};

// kFakeDevice inside `memory`, host elsewhere; `engine` serves kFakeDevice.
class FakeDeviceUserMemory final : public UserMemory {
 public:
  FakeDeviceUserMemory(const FakeDeviceMemory* memory, FakeDeviceEngine* engine)
      : memory_(memory), engines_(engine->Table()) {}
  // Without an engine for kFakeDevice: a build that cannot serve the kind.
  explicit FakeDeviceUserMemory(const FakeDeviceMemory* memory) : memory_(memory), engines_(DefaultLocalEngines()) {}

  MemoryKind Classify(const void* pointer) const override {
    return pointer != nullptr && memory_->Contains(pointer) ? MemoryKind::kFakeDevice : MemoryKind::kHost;
  }
  const LocalEngines& engines() const override { return engines_; }

 private:
  const FakeDeviceMemory* memory_;
  LocalEngines engines_;
};

}  // namespace chorus::testing
