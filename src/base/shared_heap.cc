#include "base/shared_heap.h"

#include <fcntl.h>
#include <pthread.h>
#include <sys/mman.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <iterator>
#include <mutex>
#include <new>

#include "base/config.h"

namespace chorus {
namespace {

constexpr size_t kMinHeapBytes = size_t{1} << 30;
constexpr size_t kMaxHeapBytes = size_t{1} << 42;

size_t RoundUpToPages(size_t bytes) {
  return (bytes + SharedHeap::kPageBytes - 1) & ~(SharedHeap::kPageBytes - 1);
}

// As large as the host's memory: a heap cannot usefully hold more, and the
// range costs only address space until pages are touched.
size_t HeapBytes() {
  const long pages = ::sysconf(_SC_PHYS_PAGES);
  size_t bytes = pages > 0 ? static_cast<size_t>(pages) * SharedHeap::kPageBytes : kMinHeapBytes;
  bytes = (bytes + kMinHeapBytes - 1) & ~(kMinHeapBytes - 1);
  return bytes < kMinHeapBytes ? kMinHeapBytes : bytes > kMaxHeapBytes ? kMaxHeapBytes : bytes;
}

bool FillId(uint8_t* id) {
  const int fd = ::open("/dev/urandom", O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  size_t got = 0;
  while (got < SharedHeap::kIdBytes) {
    const ssize_t n = ::read(fd, id + got, SharedHeap::kIdBytes - got);
    if (n <= 0) break;
    got += static_cast<size_t>(n);
  }
  ::close(fd);
  return got == SharedHeap::kIdBytes;
}

// The heaps live in static storage and are never destroyed: blocks may be
// freed from atexit handlers and other libraries' destructors. `made`
// counts them and only grows; Owning reads it without the lock.
struct Heaps {
  std::mutex mutex;  // making a heap; held across fork (BeforeFork/AfterFork)
  alignas(SharedHeap) unsigned char storage[SharedHeap::kMaxHeaps][sizeof(SharedHeap)];
  SharedHeap* made[SharedHeap::kMaxHeaps] = {};
  std::atomic<int> count{0};
  std::atomic<SharedHeap*> current{nullptr};
  bool disabled = false;  // CHORUS_SHARED_HEAP=0 or the system refused: never again
  bool fork_handlers = false;
};

Heaps& AllHeaps() {
  static Heaps* heaps = new Heaps();  // never destroyed
  return *heaps;
}

}  // namespace

SharedHeap::SharedHeap(int fd, uint8_t* base, size_t bytes) : fd_(fd), base_(base), bytes_(bytes) {
  free_[kPageBytes] = bytes - kPageBytes;
}

SharedHeap* SharedHeap::Process() {
  Heaps& heaps = AllHeaps();
  if (SharedHeap* heap = heaps.current.load(std::memory_order_acquire)) return heap;
  std::lock_guard<std::mutex> lock(heaps.mutex);
  if (SharedHeap* heap = heaps.current.load(std::memory_order_acquire)) return heap;
  const int index = heaps.count.load(std::memory_order_relaxed);
  if (heaps.disabled || index == kMaxHeaps) return nullptr;
  SharedHeap* heap = Create(heaps.storage[index]);
  if (heap == nullptr) {
    heaps.disabled = true;
    return nullptr;
  }
  heaps.made[index] = heap;
  heaps.count.store(index + 1, std::memory_order_release);
  heaps.current.store(heap, std::memory_order_release);
  if (!heaps.fork_handlers) {
    ::pthread_atfork(&SharedHeap::BeforeFork, &SharedHeap::AfterFork, &SharedHeap::AfterFork);
    heaps.fork_handlers = true;
  }
  return heap;
}

SharedHeap* SharedHeap::Owning(const void* pointer) {
  Heaps& heaps = AllHeaps();
  const int count = heaps.count.load(std::memory_order_acquire);
  for (int i = 0; i < count; ++i) {
    if (heaps.made[i]->Contains(pointer)) return heaps.made[i];
  }
  return nullptr;
}

SharedHeap* SharedHeap::Create(void* storage) {
  if (EnvValue("CHORUS_SHARED_HEAP") == "0") return nullptr;
  const int fd = ::memfd_create("chorus-shared-heap", MFD_CLOEXEC);
  if (fd < 0) return nullptr;
  // Address space limits (ulimit -v) may refuse the whole host's size.
  for (size_t bytes = HeapBytes(); bytes >= kMinHeapBytes; bytes /= 2) {
    if (::ftruncate(fd, static_cast<off_t>(bytes)) != 0) break;
    void* base = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_NORESERVE, fd, 0);
    if (base == MAP_FAILED) continue;
    auto* bytes_at = static_cast<uint8_t*>(base);
    if (!FillId(bytes_at)) {
      ::munmap(base, bytes);
      break;
    }
    return new (storage) SharedHeap(fd, bytes_at, bytes);
  }
  ::close(fd);
  return nullptr;
}

void* SharedHeap::Allocate(size_t bytes) {
  if (bytes == 0 || bytes > bytes_) return nullptr;
  const size_t need = RoundUpToPages(bytes);
  std::lock_guard<std::mutex> lock(mutex_);
  if (retired_.load(std::memory_order_relaxed)) return nullptr;
  // A retained block of about this size first: its pages are resident.
  auto best = retained_.end();
  for (auto it = retained_.begin(); it != retained_.end(); ++it) {
    if (it->second >= need && it->second - need <= need / 8 && (best == retained_.end() || it->second < best->second)) {
      best = it;
    }
  }
  uintptr_t offset = 0;
  size_t taken = need;
  if (best != retained_.end()) {
    offset = best->first;
    taken = best->second;
    retained_bytes_ -= taken;
    retained_.erase(best);
  } else if (!TakeFree(need, &offset)) {
    // Fragmented by retained blocks: give them back and look again.
    ReleaseRetained();
    if (!TakeFree(need, &offset)) return nullptr;
  }
  live_[offset] = taken;
  live_bytes_ += taken;
  return base_ + offset;
}

bool SharedHeap::TakeFree(size_t bytes, uintptr_t* offset) {
  for (auto it = free_.begin(); it != free_.end(); ++it) {
    if (it->second < bytes) continue;
    *offset = it->first;
    const size_t rest = it->second - bytes;
    free_.erase(it);
    if (rest > 0) free_[*offset + bytes] = rest;
    return true;
  }
  return false;
}

void SharedHeap::Release(uintptr_t offset, size_t bytes) {
  ::fallocate(fd_, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, static_cast<off_t>(offset), static_cast<off_t>(bytes));
  auto next = free_.lower_bound(offset);
  if (next != free_.end() && offset + bytes == next->first) {
    bytes += next->second;
    next = free_.erase(next);
  }
  if (next != free_.begin()) {
    auto previous = std::prev(next);
    if (previous->first + previous->second == offset) {
      previous->second += bytes;
      return;
    }
  }
  free_[offset] = bytes;
}

void SharedHeap::ReleaseRetained() {
  for (const auto& block : retained_) Release(block.first, block.second);
  retained_.clear();
  retained_bytes_ = 0;
}

bool SharedHeap::Free(void* pointer) {
  if (!Contains(pointer)) return false;
  const uintptr_t offset = reinterpret_cast<uintptr_t>(pointer) - base();
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = live_.find(offset);
  if (it == live_.end()) return false;
  const size_t bytes = it->second;
  live_.erase(it);
  live_bytes_ -= bytes;
  if (retired_.load(std::memory_order_relaxed)) {
    // Our private copy goes; the file's pages may still be another
    // process's view (the other side of the fork), so they stay.
    ::madvise(pointer, bytes, MADV_DONTNEED);
    return true;
  }
  if (retained_bytes_ + bytes <= kRetainedBytes) {
    retained_[offset] = bytes;
    retained_bytes_ += bytes;
  } else {
    Release(offset, bytes);
  }
  return true;
}

size_t SharedHeap::BlockBytes(const void* pointer) const {
  if (!Contains(pointer)) return 0;
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = live_.find(reinterpret_cast<uintptr_t>(pointer) - base());
  return it == live_.end() ? 0 : it->second;
}

size_t SharedHeap::live_bytes() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return live_bytes_;
}

size_t SharedHeap::retained_bytes() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return retained_bytes_;
}

// Runs in the parent before fork: no other thread may make a heap or
// change the current one's blocks while both sides remap them, and its
// retained pages need not outlive it. (Retired heaps change only by Free,
// which remaps nothing.)
void SharedHeap::BeforeFork() {
  Heaps& heaps = AllHeaps();
  heaps.mutex.lock();
  SharedHeap* heap = heaps.current.load(std::memory_order_relaxed);
  if (heap == nullptr) return;
  heap->mutex_.lock();
  heap->ReleaseRetained();
}

// In the parent and in the child after fork: the current heap retires and
// the next Process() makes a fresh one.
void SharedHeap::AfterFork() {
  Heaps& heaps = AllHeaps();
  SharedHeap* heap = heaps.current.load(std::memory_order_relaxed);
  if (heap != nullptr) {
    heap->Retire();
    heap->mutex_.unlock();
    heaps.current.store(nullptr, std::memory_order_release);
  }
  heaps.mutex.unlock();
}

void SharedHeap::Retire() {
  if (retired_.load(std::memory_order_relaxed)) return;
  retired_.store(true, std::memory_order_relaxed);
  for (const auto& block : live_) {
    void* at = base_ + block.first;
    if (::mmap(at, block.second, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_FIXED | MAP_NORESERVE, fd_,
               static_cast<off_t>(block.first)) == MAP_FAILED) {
      // Parent and child would go on sharing the block: not what fork means.
      std::fprintf(stderr, "chorus: cannot remap a shared-heap block of %zu bytes copy-on-write at fork\n",
                   block.second);
      std::abort();
    }
  }
}

}  // namespace chorus
