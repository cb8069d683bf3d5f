// RegistrationCache: memory registrations (Transport::RegisterMemory) kept
// for reuse, after libfabric's util MR cache. Registering pins pages and
// makes keys, which costs far more than a transfer of a small buffer, and
// training loops send the same buffers every step.
//
// - Keyed by address range and kind; Acquire reuses any cached registration
//   of the same kind that covers the whole request ([ptr, ptr + bytes)), so a
//   slice of a registered buffer costs nothing. Overlapping but not covering
//   requests get a registration of their own (no merging).
// - Reference counted: Acquire takes a reference, Release drops it. An
//   entry with references is never deregistered.
// - Unreferenced entries stay cached in LRU order and are evicted (oldest
//   first) when the cache holds more than `max_entries` entries or
//   `max_bytes` registered bytes. Entries in use may keep it above the caps.
// - Not handled: the user freeing or remapping memory that is cached (a new
//   buffer at the same address would reuse a stale registration).
//   libfabric watches munmap/brk through its memory monitors for that; here
//   the owner must call Invalidate (or Clear) for a range it frees, and a
//   transport that needs registration must say so in its docs.
//
// Not thread-safe: one per transport, used by the thread that drives it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <list>
#include <map>

#include "base/status.h"
#include "transports/transport.h"

namespace chorus {

struct RegistrationCacheLimits {
  size_t max_entries = 64;
  size_t max_bytes = size_t{1} << 30;
};

class RegistrationCache {
 public:
  struct Entry;
  // A held registration: handle() covers the acquired range until Release.
  class Lease {
   public:
    Lease() = default;
    MemoryHandle handle() const;
    bool valid() const { return entry_ != nullptr; }

   private:
    friend class RegistrationCache;
    explicit Lease(Entry* entry) : entry_(entry) {}
    Entry* entry_ = nullptr;
  };

  RegistrationCache(Transport* transport, RegistrationCacheLimits limits = RegistrationCacheLimits());
  // Deregisters everything; every lease must have been released.
  ~RegistrationCache();
  RegistrationCache(const RegistrationCache&) = delete;
  RegistrationCache& operator=(const RegistrationCache&) = delete;

  // A registration covering [ptr, ptr + bytes) (bytes > 0), cached or new.
  Status Acquire(void* ptr, size_t bytes, MemoryKind kind, Lease* lease);
  void Release(Lease* lease);
  // Deregisters the unreferenced entries overlapping [ptr, ptr + bytes)
  // (memory about to be freed); referenced ones are left (a caller bug).
  void Invalidate(void* ptr, size_t bytes);

  size_t entries() const { return by_start_.size(); }
  size_t registered_bytes() const { return registered_bytes_; }

  struct Entry {
    uintptr_t start = 0;
    size_t bytes = 0;
    MemoryKind kind = MemoryKind::kHost;
    MemoryHandle handle;
    int references = 0;
    std::list<Entry*>::iterator lru;  // valid while references == 0
  };

 private:
  Entry* FindCovering(uintptr_t start, size_t bytes, MemoryKind kind);
  void EvictOverLimits();
  void Remove(std::multimap<uintptr_t, Entry>::iterator it);

  Transport* transport_;
  RegistrationCacheLimits limits_;
  std::multimap<uintptr_t, Entry> by_start_;
  std::list<Entry*> unused_;  // unreferenced entries, least recently used first
  size_t registered_bytes_ = 0;
  size_t longest_ = 0;  // bounds the backward search for a covering entry
};

}  // namespace chorus
