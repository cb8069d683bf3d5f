// Where a Workspace (core/workspace.h) gets its host memory. Staging for
// device buffers wants page-locked memory: the GPU's copy engines reach it
// directly (asynchronous copies, no bounce through a driver buffer) and the
// CUDA engine's kernels read it in place (core/cuda_engine.cc copies a
// pageable operand to the device first). Page-locking costs milliseconds,
// which a Workspace pays only when it grows.
#pragma once

#include <cstddef>

namespace chorus {

class HostAllocator {
 public:
  virtual ~HostAllocator() = default;
  // At least `bytes`, 64-byte aligned; null when the memory cannot be had.
  virtual void* Allocate(size_t bytes) = 0;
  virtual void Free(void* pointer) = 0;
  // "pageable", "CUDA pinned": for messages.
  virtual const char* name() const = 0;
};

// operator new; never null (throws std::bad_alloc as new does).
HostAllocator& PageableAllocator();

// For staging: page-locked memory (cudaHostAlloc, portable to every device)
// in a CUDA build in a process that has a device; otherwise pageable.
HostAllocator& StagingAllocator();

}  // namespace chorus
