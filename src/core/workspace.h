// Workspace: memory an operation borrows for scratch and staging, kept by the
// communicator between operations so that the hot path does not allocate
// (and page-fault) on every call. One operation uses it at a time. Its host
// memory comes from a HostAllocator (core/host_allocator.h): staging
// workspaces ask for page-locked memory where a GPU is present, and fall
// back to pageable memory when that cannot be had.
#pragma once

#include <cstddef>
#include <cstdint>

#include "core/host_allocator.h"

namespace chorus {

class Workspace {
 public:
  explicit Workspace(HostAllocator& allocator = PageableAllocator()) : allocator_(&allocator) {}
  ~Workspace() { Release(); }
  Workspace(const Workspace&) = delete;
  Workspace& operator=(const Workspace&) = delete;
  Workspace(Workspace&& other) noexcept
      : allocator_(other.allocator_), owner_(other.owner_), buffer_(other.buffer_), capacity_(other.capacity_) {
    other.buffer_ = nullptr;
    other.capacity_ = 0;
  }

  // Returns at least `bytes` of uninitialised memory, valid until the next
  // call. Alignment: 64 bytes.
  uint8_t* Reserve(size_t bytes) {
    if (bytes > capacity_) Grow(bytes);
    return buffer_;
  }

  // The allocator of the memory held now (the preferred one, or the
  // pageable fallback); null before the first Reserve.
  const HostAllocator* holder() const { return buffer_ != nullptr ? owner_ : nullptr; }

 private:
  void Grow(size_t bytes) {
    Release();
    owner_ = allocator_;
    void* memory = allocator_->Allocate(bytes);
    if (memory == nullptr) {  // page-locked memory is limited: pageable still works, slower
      owner_ = &PageableAllocator();
      memory = owner_->Allocate(bytes);
    }
    buffer_ = static_cast<uint8_t*>(memory);
    capacity_ = bytes;
  }
  void Release() {
    if (buffer_ != nullptr) owner_->Free(buffer_);
    buffer_ = nullptr;
    capacity_ = 0;
  }

  HostAllocator* allocator_;  // preferred
  HostAllocator* owner_;      // of buffer_
  uint8_t* buffer_ = nullptr;
  size_t capacity_ = 0;
};

}  // namespace chorus
