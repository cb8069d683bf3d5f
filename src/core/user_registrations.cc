#include "core/user_registrations.h"

#include <algorithm>

namespace chorus {

bool UserRegistrations::Registration::Covers(const void* pointer, size_t bytes) const {
  const auto* p = static_cast<const uint8_t*>(pointer);
  return p >= base_ && bytes <= bytes_ && static_cast<size_t>(p - base_) <= bytes_ - bytes;
}

Status UserRegistrations::Add(void* pointer, size_t bytes, MemoryKind kind, const void** key) {
  if (pointer == nullptr) return InvalidArgument("buffer is NULL");
  if (bytes == 0) return InvalidArgument("size is 0");
  const auto address = reinterpret_cast<uintptr_t>(pointer);
  if (address + bytes < address) return InvalidArgument("the range wraps around the address space");
  // Pinned host memory is host memory to a transport; a device kind it
  // does not take is staged through host memory and needs no registration.
  const MemoryKind registered = IsCpuAccessible(kind) ? MemoryKind::kHost : kind;
  MemoryHandle handle;
  CHORUS_RETURN_IF_ERROR(transport_->RegisterMemory(pointer, bytes, registered, &handle));
  auto registration = std::make_shared<const Registration>(transport_, pointer, bytes, handle);
  *key = registration.get();
  std::lock_guard<std::mutex> lock(mutex_);
  entries_.push_back(std::move(registration));
  count_.store(entries_.size(), std::memory_order_release);
  return Status::Ok();
}

Status UserRegistrations::Remove(const void* key) {
  std::shared_ptr<const Registration> removed;  // deregistered after the lock, if last
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = std::find_if(entries_.begin(), entries_.end(), [key](const auto& entry) { return entry.get() == key; });
  if (it == entries_.end()) {
    return InvalidArgument("handle ", key, " is no registration of this communicator (deregistered already?)");
  }
  removed = std::move(*it);
  entries_.erase(it);
  count_.store(entries_.size(), std::memory_order_release);
  return Status::Ok();
}

std::shared_ptr<const UserRegistrations::Registration> UserRegistrations::Find(const void* pointer,
                                                                               size_t bytes) const {
  std::lock_guard<std::mutex> lock(mutex_);
  for (const auto& entry : entries_) {
    if (entry->Covers(pointer, bytes)) return entry;
  }
  return nullptr;
}

}  // namespace chorus
