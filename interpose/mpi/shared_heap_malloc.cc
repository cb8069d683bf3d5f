// malloc, free and their kin for the whole process: blocks of
// CHORUS_MPI_HEAP_MIN_BYTES (64 KiB) or more come from Chorus's shared heap
// (chorusMemAlloc), every other block from the C library's own allocator.
// Ranks on one host then read an unmodified program's large MPI buffers in
// place (one copy a message instead of two through the shared-memory ring),
// as ranks that are threads of one process do.
//
// Off (everything from the C library) with CHORUS_MPI=0 or
// CHORUS_SHARED_HEAP=0, in sanitizer builds (their runtimes own malloc), and
// for good once the heap refuses a block (it is full, or the process forked:
// base/shared_heap.h keeps fork's copy-on-write semantics and retires the
// heap). Blocks that existed before stay valid and are freed where they came
// from: a pointer outside the bounds of every block the heaps handed out is
// the C library's at once; inside them, chorusMemFree says whether it is a
// heap block (quietly, allocating nothing), and if not the C library frees
// it (a process that forked has heaps at several ranges, with the C
// library's memory between them).
//
// The heap is used only once this library's constructor ran, so that
// libchorus is initialised; allocations before that are the C library's.
#include <dlfcn.h>
#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <atomic>

#include "chorus/chorus.h"

#if !defined(__SANITIZE_ADDRESS__) && !defined(__SANITIZE_THREAD__)

extern "C" {
void* __libc_malloc(size_t size);
void __libc_free(void* pointer);
void* __libc_calloc(size_t count, size_t size);
void* __libc_realloc(void* pointer, size_t size);
void* __libc_memalign(size_t alignment, size_t size);
}

namespace {

constexpr size_t kDefaultMinBytes = 64 << 10;
constexpr size_t kHeapAlignment = 4096;  // heap blocks are whole pages
// Smaller blocks never: they would waste most of a page (and the test
// keeps the C library's fast path for them to one compare).
constexpr size_t kNeverBelowBytes = 4096;
// Larger zeroed blocks stay with the C library: fresh pages from mmap are
// zero for free, and a program may touch few of them.
constexpr size_t kMaxCallocBytes = size_t{64} << 20;

enum State : int { kNotYet, kOn, kOff };
std::atomic<int> state{kNotYet};
std::atomic<bool> constructed{false};
size_t min_bytes = kDefaultMinBytes;  // written once, before state turns kOn
// Bounds of every block the heap handed out: a pointer outside them is the C library's.
std::atomic<uintptr_t> low{UINTPTR_MAX};
std::atomic<uintptr_t> high{0};

bool IsZero(const char* value) { return value != nullptr && strcmp(value, "0") == 0; }

// "65536", "64K", "1M"; malformed or zero: the default.
size_t ParseBytes(const char* text) {
  if (text == nullptr || *text == '\0') return kDefaultMinBytes;
  char* end = nullptr;
  unsigned long long value = strtoull(text, &end, 10);
  if (*end == 'K' || *end == 'k') value <<= 10, ++end;
  else if (*end == 'M' || *end == 'm') value <<= 20, ++end;
  else if (*end == 'G' || *end == 'g') value <<= 30, ++end;
  return (*end != '\0' || value == 0) ? kDefaultMinBytes : static_cast<size_t>(value);
}

bool HeapOn() {
  const int now = state.load(std::memory_order_acquire);
  if (now != kNotYet) return now == kOn;
  if (!constructed.load(std::memory_order_acquire)) return false;
  int decided = kOn;
  if (IsZero(getenv("CHORUS_MPI")) || IsZero(getenv("CHORUS_SHARED_HEAP"))) decided = kOff;
  min_bytes = ParseBytes(getenv("CHORUS_MPI_HEAP_MIN_BYTES"));
  int expected = kNotYet;
  state.compare_exchange_strong(expected, decided, std::memory_order_acq_rel);
  return state.load(std::memory_order_acquire) == kOn;
}

bool InHeap(const void* pointer) {
  const uintptr_t at = reinterpret_cast<uintptr_t>(pointer);
  return at >= low.load(std::memory_order_relaxed) && at < high.load(std::memory_order_relaxed);
}

void* HeapAllocate(size_t size) {
  void* pointer = nullptr;
  if (chorusMemAlloc(&pointer, size) != chorusSuccess) {
    state.store(kOff, std::memory_order_release);
    return nullptr;
  }
  const uintptr_t start = reinterpret_cast<uintptr_t>(pointer);
  uintptr_t seen = low.load(std::memory_order_relaxed);
  while (start < seen && !low.compare_exchange_weak(seen, start, std::memory_order_relaxed)) {
  }
  seen = high.load(std::memory_order_relaxed);
  while (start + size > seen && !high.compare_exchange_weak(seen, start + size, std::memory_order_relaxed)) {
  }
  return pointer;
}

// A block for `size` bytes with `alignment` (a power of two) from the heap
// when it takes it, else null (the caller asks the C library).
void* TryHeap(size_t size, size_t alignment) {
  if (size < kNeverBelowBytes || alignment > kHeapAlignment || !HeapOn() || size < min_bytes) return nullptr;
  return HeapAllocate(size);
}

size_t HeapBlockBytes(const void* pointer) {
  size_t bytes = 0;
  if (!InHeap(pointer) || chorusMemGetSize(pointer, &bytes) != chorusSuccess) return 0;
  return bytes;
}

bool ValidAlignment(size_t alignment) {
  return alignment >= sizeof(void*) && (alignment & (alignment - 1)) == 0;
}

__attribute__((constructor)) void MarkConstructed() { constructed.store(true, std::memory_order_release); }

}  // namespace

extern "C" {

__attribute__((visibility("default"))) void* malloc(size_t size) {
  if (void* pointer = TryHeap(size, 1)) return pointer;
  return __libc_malloc(size);
}

__attribute__((visibility("default"))) void free(void* pointer) {
  if (pointer == nullptr) return;
  if (InHeap(pointer) && chorusMemFree(pointer) == chorusSuccess) return;
  __libc_free(pointer);
}

__attribute__((visibility("default"))) void* calloc(size_t count, size_t size) {
  size_t bytes = 0;
  if (__builtin_mul_overflow(count, size, &bytes)) {
    errno = ENOMEM;
    return nullptr;
  }
  if (bytes <= kMaxCallocBytes) {
    if (void* pointer = TryHeap(bytes, 1)) return memset(pointer, 0, bytes);
  }
  return __libc_calloc(count, size);
}

__attribute__((visibility("default"))) void* realloc(void* pointer, size_t size) {
  if (pointer == nullptr) return malloc(size);
  const size_t old_bytes = HeapBlockBytes(pointer);
  if (old_bytes == 0) return __libc_realloc(pointer, size);
  if (size == 0) {
    free(pointer);
    return nullptr;
  }
  if (size <= old_bytes && size >= old_bytes / 2) return pointer;
  void* moved = malloc(size);
  if (moved == nullptr) return nullptr;
  memcpy(moved, pointer, size < old_bytes ? size : old_bytes);
  free(pointer);
  return moved;
}

__attribute__((visibility("default"))) int posix_memalign(void** out, size_t alignment, size_t size) {
  if (!ValidAlignment(alignment)) return EINVAL;
  void* pointer = TryHeap(size, alignment);
  if (pointer == nullptr) pointer = __libc_memalign(alignment, size);
  if (pointer == nullptr) return ENOMEM;
  *out = pointer;
  return 0;
}

__attribute__((visibility("default"))) void* aligned_alloc(size_t alignment, size_t size) {
  if ((alignment & (alignment - 1)) != 0 || alignment == 0) {
    errno = EINVAL;
    return nullptr;
  }
  if (void* pointer = TryHeap(size, alignment)) return pointer;
  return __libc_memalign(alignment, size);
}

__attribute__((visibility("default"))) void* memalign(size_t alignment, size_t size) {
  if (void* pointer = TryHeap(size, alignment)) return pointer;
  return __libc_memalign(alignment, size);
}

__attribute__((visibility("default"))) size_t malloc_usable_size(void* pointer) {
  if (pointer == nullptr) return 0;
  if (const size_t bytes = HeapBlockBytes(pointer)) return bytes;
  using UsableSize = size_t (*)(void*);
  static const UsableSize libc_usable_size = reinterpret_cast<UsableSize>(dlsym(RTLD_NEXT, "malloc_usable_size"));
  return libc_usable_size != nullptr ? libc_usable_size(pointer) : 0;
}

}  // extern "C"

#endif  // !sanitizers
