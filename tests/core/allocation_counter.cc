// Replaces the global operator new and delete (every form) to count each
// thread's allocations. Only for test binaries that list this file: a
// replacement applies to the whole program.
#include "allocation_counter.h"

#include <cstddef>
#include <cstdlib>
#include <new>

namespace {

thread_local long thread_allocations = 0;

void* CountedAllocate(size_t bytes, size_t alignment) {
  ++thread_allocations;
  if (bytes == 0) bytes = 1;
  void* p = nullptr;
  if (alignment <= alignof(std::max_align_t)) {
    p = std::malloc(bytes);
  } else if (posix_memalign(&p, alignment, bytes) != 0) {
    p = nullptr;
  }
  return p;
}

}  // namespace

namespace chorus::testing {

long ThreadAllocations() { return thread_allocations; }
void ResetThreadAllocations() { thread_allocations = 0; }

}  // namespace chorus::testing

void* operator new(size_t bytes) {
  void* p = CountedAllocate(bytes, 0);
  if (p == nullptr) throw std::bad_alloc();
  return p;
}
void* operator new[](size_t bytes) { return operator new(bytes); }
void* operator new(size_t bytes, std::align_val_t alignment) {
  void* p = CountedAllocate(bytes, static_cast<size_t>(alignment));
  if (p == nullptr) throw std::bad_alloc();
  return p;
}
void* operator new[](size_t bytes, std::align_val_t alignment) { return operator new(bytes, alignment); }
void* operator new(size_t bytes, const std::nothrow_t&) noexcept { return CountedAllocate(bytes, 0); }
void* operator new[](size_t bytes, const std::nothrow_t&) noexcept { return CountedAllocate(bytes, 0); }
void operator delete(void* p) noexcept { std::free(p); }
void operator delete[](void* p) noexcept { std::free(p); }
void operator delete(void* p, size_t) noexcept { std::free(p); }
void operator delete[](void* p, size_t) noexcept { std::free(p); }
void operator delete(void* p, std::align_val_t) noexcept { std::free(p); }
void operator delete[](void* p, std::align_val_t) noexcept { std::free(p); }
void operator delete(void* p, size_t, std::align_val_t) noexcept { std::free(p); }
void operator delete[](void* p, size_t, std::align_val_t) noexcept { std::free(p); }
