// Workspace: memory an operation borrows for scratch and staging, kept by the
// communicator between operations so that the hot path does not allocate
// (and page-fault) on every call. One operation uses it at a time.
//
// A staging workspace may start with page-locked memory
// (core/host_allocator.h), reserved when it is made: at communicator
// creation, on the caller's thread. Never later: a page-locked allocation or
// release may wait for the whole GPU, and a CUDA stream linked to the very
// operation that would be allocating (chorusStreamFromCuda) waits for that
// operation: a deadlock. Growth past the reservation is pageable memory.
#pragma once

#include <cstddef>
#include <cstdint>

#include "core/host_allocator.h"

namespace chorus {

class Workspace {
 public:
  // Pageable memory, allocated on demand.
  Workspace() = default;
  // `reserve` bytes of `allocator`'s memory now, unless `allocator` is the
  // pageable one (then on demand, as above) or has none to give.
  Workspace(HostAllocator& allocator, size_t reserve) {
    if (&allocator == &PageableAllocator() || reserve == 0) return;
    void* memory = allocator.Allocate(reserve);
    if (memory == nullptr) return;  // page-locked memory is limited: pageable on demand still works
    owner_ = &allocator;
    buffer_ = static_cast<uint8_t*>(memory);
    capacity_ = reserve;
  }
  ~Workspace() { Release(); }
  Workspace(const Workspace&) = delete;
  Workspace& operator=(const Workspace&) = delete;
  Workspace(Workspace&& other) noexcept : owner_(other.owner_), buffer_(other.buffer_), capacity_(other.capacity_) {
    other.buffer_ = nullptr;
    other.capacity_ = 0;
  }

  // Returns at least `bytes` of uninitialised memory, valid until the next
  // call. Alignment: 64 bytes.
  uint8_t* Reserve(size_t bytes) {
    if (bytes > capacity_) Grow(bytes);
    return buffer_;
  }

  // The allocator of the memory held now; null while none is held.
  const HostAllocator* holder() const { return buffer_ != nullptr ? owner_ : nullptr; }

 private:
  void Grow(size_t bytes) {
    Release();
    owner_ = &PageableAllocator();
    buffer_ = static_cast<uint8_t*>(owner_->Allocate(bytes));
    capacity_ = bytes;
  }
  void Release() {
    if (buffer_ != nullptr) owner_->Free(buffer_);
    buffer_ = nullptr;
    capacity_ = 0;
  }

  HostAllocator* owner_ = nullptr;  // of buffer_
  uint8_t* buffer_ = nullptr;
  size_t capacity_ = 0;
};

}  // namespace chorus
