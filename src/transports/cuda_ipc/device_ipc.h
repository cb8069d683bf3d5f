// DeviceIpc: what the CUDA IPC transport needs of a GPU runtime, so that the
// transport's protocol is tested without a GPU (tests/transports/
// fake_device_ipc.h serves host memory that faults when touched directly).
// The CUDA implementation is cuda_device_ipc.h.
#pragma once

#include <cstddef>
#include <cstdint>

#include "base/memory_kind.h"
#include "base/status.h"

namespace chorus {

// An exported allocation, as another process opens it (cudaIpcMemHandle_t
// is 64 opaque bytes).
struct IpcHandle {
  uint8_t bytes[64] = {};
};

// Where a buffer lies, for a peer process: its allocation's handle, an
// identity of that allocation that is never reused while this process lives
// (so that a peer may keep the allocation mapped between calls), and the
// buffer's offset into it.
struct ExportedBuffer {
  IpcHandle handle;
  uint64_t allocation_id = 0;
  uint64_t offset = 0;
};

class DeviceIpc {
 public:
  virtual ~DeviceIpc() = default;

  // The device memory kind this runtime moves (kCudaDevice).
  virtual MemoryKind kind() const = 0;
  // Identifies this address space: peers with the same token (ranks that
  // are threads of one process) use each other's pointers as they are.
  virtual uint64_t ProcessToken() const = 0;
  // Exports the allocation holding `pointer` (memory of kind()).
  virtual Status Export(const void* pointer, ExportedBuffer* out) = 0;
  // Maps a peer process's export; `base` is its allocation's first byte here.
  virtual Status Open(const IpcHandle& handle, void** base) = 0;
  // Unmaps what Open returned.
  virtual void Close(void* base) = 0;
  // dst[0, bytes) = src[0, bytes), each side memory of kind(), a mapped
  // peer's, or host memory; complete when it returns.
  virtual Status Copy(void* dst, const void* src, size_t bytes) = 0;
};

}  // namespace chorus
