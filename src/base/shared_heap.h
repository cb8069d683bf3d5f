// SharedHeap: this process's host memory that ranks in other processes on
// this host read in place. One memfd backs one reserved address range,
// mapped shared; a peer opens the same file through /proc/<pid>/fd, maps it
// read-only, and finds a block at the same offset. A message sent from such
// a block then costs the receiver one copy (or one combine) straight out of
// the sender's memory instead of two through a ring: what threads of one
// process get from sharing an address space (chorusMemAlloc; under
// libchorus_mpi.so, large malloc blocks).
//
// Blocks are whole pages. Freed blocks stay resident up to kRetainedBytes,
// reused for later blocks of about their size (a training loop's
// temporaries of one size then cost no page faults, as with malloc's own
// heap); past that their pages go back to the system (fallocate punches
// them out of the file).
//
// fork: the heap is shared memory, so a child would see its parent's
// writes and the parent its child's. At fork both remap their live blocks
// copy-on-write (MAP_PRIVATE of the file), which is what fork promises:
// each keeps its own copy, pages shared until written. From then on that
// heap is retired in both: it allocates nothing more and Shares() is false,
// so a peer never reads a block that is no longer the one it mapped; its
// blocks stay valid until freed, and the file keeps the pages live at the
// fork until the process exits. The next Process() in either makes a fresh
// heap (at most kMaxHeaps per process), which communicators made from then
// on publish.
//
// Process-wide by nature, as the C heap is: the heaps live in static
// storage and are never destroyed (blocks may be freed by atexit handlers).
#pragma once

#include <sys/types.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <map>
#include <mutex>

namespace chorus {

class SharedHeap {
 public:
  static constexpr size_t kPageBytes = 4096;
  static constexpr size_t kIdBytes = 16;
  // Freed blocks kept resident for reuse before pages go back.
  static constexpr size_t kRetainedBytes = size_t{128} << 20;

  // Heaps one process may make (one more after each fork).
  static constexpr int kMaxHeaps = 8;

  // The process's current heap, made at the first call and again after a
  // fork. Null when CHORUS_SHARED_HEAP is 0, the system refuses (no memfd,
  // address space limit) or kMaxHeaps were made.
  static SharedHeap* Process();
  // The heap, current or retired, whose range holds `pointer`; null: none.
  static SharedHeap* Owning(const void* pointer);

  // `bytes` rounded up to whole pages, page-aligned, contents undefined;
  // null when retired, full or bytes is 0. Thread-safe, as are the rest.
  void* Allocate(size_t bytes);
  // False when `pointer` is not the start of a live block (nothing done).
  bool Free(void* pointer);
  // The block's usable bytes; 0 when `pointer` is not the start of a live block.
  size_t BlockBytes(const void* pointer) const;
  // Whether [pointer, pointer + bytes) lies in this heap and peers that
  // mapped it read what this process wrote there (not retired by a fork).
  bool Shares(const void* pointer, size_t bytes) const {
    const uintptr_t start = reinterpret_cast<uintptr_t>(pointer);
    return start >= data_begin() && start < end() && bytes <= end() - start &&
           !retired_.load(std::memory_order_relaxed);
  }
  bool Contains(const void* pointer) const {
    const uintptr_t start = reinterpret_cast<uintptr_t>(pointer);
    return start >= base() && start < end();
  }
  bool retired() const { return retired_.load(std::memory_order_relaxed); }

  // What a peer needs to map it: the file descriptor, where this process
  // mapped the file, its length, and the random id its first page holds.
  int fd() const { return fd_; }
  uintptr_t base() const { return reinterpret_cast<uintptr_t>(base_); }
  size_t bytes() const { return bytes_; }
  const uint8_t* id() const { return base_; }
  // Blocks start past the first page (the id).
  uintptr_t data_begin() const { return base() + kPageBytes; }
  uintptr_t end() const { return base() + bytes_; }

  // Live blocks' bytes, freed-but-resident bytes (tests, reports).
  size_t live_bytes() const;
  size_t retained_bytes() const;

  SharedHeap(const SharedHeap&) = delete;
  SharedHeap& operator=(const SharedHeap&) = delete;

 private:
  SharedHeap(int fd, uint8_t* base, size_t bytes);
  static SharedHeap* Create(void* storage);
  static void BeforeFork();
  static void AfterFork();
  void Retire();
  void Release(uintptr_t offset, size_t bytes);  // punches, then joins the free extents
  void ReleaseRetained();                        // every retained block, Released
  bool TakeFree(size_t bytes, uintptr_t* offset);

  const int fd_;
  uint8_t* const base_;
  const size_t bytes_;
  std::atomic<bool> retired_{false};
  mutable std::mutex mutex_;
  std::map<uintptr_t, size_t> live_;      // offset -> bytes
  std::map<uintptr_t, size_t> free_;      // offset -> bytes, joined, holes in the file
  std::map<uintptr_t, size_t> retained_;  // offset -> bytes, freed but resident
  size_t live_bytes_ = 0;
  size_t retained_bytes_ = 0;
};

}  // namespace chorus
