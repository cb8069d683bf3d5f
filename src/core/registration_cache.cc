#include "core/registration_cache.h"

#include <iterator>

namespace chorus {

MemoryHandle RegistrationCache::Lease::handle() const { return entry_ != nullptr ? entry_->handle : MemoryHandle(); }

RegistrationCache::RegistrationCache(Transport* transport, RegistrationCacheLimits limits)
    : transport_(transport), limits_(limits) {}

RegistrationCache::~RegistrationCache() {
  for (auto& [start, entry] : by_start_) transport_->DeregisterMemory(entry.handle);
}

RegistrationCache::Entry* RegistrationCache::FindCovering(uintptr_t start, size_t bytes, MemoryKind kind) {
  // Candidates start at or before `start`, and no earlier than the longest
  // entry could reach from.
  auto it = by_start_.upper_bound(start);
  while (it != by_start_.begin()) {
    --it;
    Entry& entry = it->second;
    if (start - entry.start > longest_) break;
    if (entry.kind == kind && entry.bytes >= bytes && start - entry.start <= entry.bytes - bytes) return &entry;
  }
  return nullptr;
}

Status RegistrationCache::Acquire(void* ptr, size_t bytes, MemoryKind kind, Lease* lease) {
  if (ptr == nullptr || bytes == 0) return InvalidArgument("registering memory needs a buffer and a size");
  const uintptr_t start = reinterpret_cast<uintptr_t>(ptr);
  if (bytes > UINTPTR_MAX - start) return InvalidArgument("registering memory: range wraps around the address space");
  Entry* entry = FindCovering(start, bytes, kind);
  if (entry == nullptr) {
    MemoryHandle handle;
    CHORUS_RETURN_IF_ERROR(transport_->RegisterMemory(ptr, bytes, kind, &handle));
    auto it = by_start_.emplace(start, Entry());
    entry = &it->second;
    entry->start = start;
    entry->bytes = bytes;
    entry->kind = kind;
    entry->handle = handle;
    registered_bytes_ += bytes;
    if (bytes > longest_) longest_ = bytes;
  } else if (entry->references == 0) {
    unused_.erase(entry->lru);
  }
  ++entry->references;
  *lease = Lease(entry);
  EvictOverLimits();
  return Status::Ok();
}

void RegistrationCache::Release(Lease* lease) {
  Entry* entry = lease->entry_;
  *lease = Lease();
  if (entry == nullptr || --entry->references > 0) return;
  entry->lru = unused_.insert(unused_.end(), entry);
  EvictOverLimits();
}

void RegistrationCache::Invalidate(void* ptr, size_t bytes) {
  const uintptr_t start = reinterpret_cast<uintptr_t>(ptr);
  const uintptr_t end = start + bytes;
  for (auto it = by_start_.begin(); it != by_start_.end();) {
    auto next = std::next(it);
    const Entry& entry = it->second;
    if (entry.references == 0 && entry.start < end && start < entry.start + entry.bytes) Remove(it);
    it = next;
  }
}

void RegistrationCache::EvictOverLimits() {
  while (!unused_.empty() && (by_start_.size() > limits_.max_entries || registered_bytes_ > limits_.max_bytes)) {
    Entry* victim = unused_.front();
    auto range = by_start_.equal_range(victim->start);
    for (auto it = range.first; it != range.second; ++it) {
      if (&it->second == victim) {
        Remove(it);
        break;
      }
    }
  }
}

void RegistrationCache::Remove(std::multimap<uintptr_t, Entry>::iterator it) {
  Entry& entry = it->second;
  if (entry.references == 0) unused_.erase(entry.lru);
  transport_->DeregisterMemory(entry.handle);
  registered_bytes_ -= entry.bytes;
  by_start_.erase(it);
}

}  // namespace chorus
