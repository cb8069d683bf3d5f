// UserRegistrations: the buffers a user registered with a communicator
// (chorusCommRegister), each registered once with the transport for as long
// as the user keeps it, as NCCL's ncclCommRegister. A launch whose buffer
// lies inside one hands its handle to the transport (verbs then moves the
// bytes straight from and into it) and holds the registration until the
// launch ends, so a deregistration that races a launch takes effect after.
//
// Unlike the RegistrationCache, nothing here can go stale: the user
// promises the memory stays allocated until it is deregistered.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <vector>

#include "base/memory_kind.h"
#include "base/status.h"
#include "transports/transport.h"

namespace chorus {

class UserRegistrations {
 public:
  // One registered range; deregistered from the transport when the last
  // holder lets go.
  class Registration {
   public:
    Registration(Transport* transport, const void* base, size_t bytes, MemoryHandle handle)
        : transport_(transport), base_(static_cast<const uint8_t*>(base)), bytes_(bytes), handle_(handle) {}
    ~Registration() { transport_->DeregisterMemory(handle_); }
    Registration(const Registration&) = delete;
    Registration& operator=(const Registration&) = delete;
    bool Covers(const void* pointer, size_t bytes) const;
    MemoryHandle handle() const { return handle_; }

   private:
    Transport* transport_;
    const uint8_t* base_;
    size_t bytes_;
    MemoryHandle handle_;
  };

  // `transport` must outlive every registration (the communicator's).
  explicit UserRegistrations(Transport* transport) : transport_(transport) {}

  // Registers [pointer, pointer + bytes) of `kind` with the transport where
  // it takes that kind (elsewhere the handle is null and costs nothing).
  // `*key` names it: the registration's address, unique among live ones of
  // every communicator, only ever compared.
  Status Add(void* pointer, size_t bytes, MemoryKind kind, const void** key);
  // InvalidArgument when `key` names no registration of this communicator.
  Status Remove(const void* key);
  // A registration covering [pointer, pointer + bytes) whole, or null.
  std::shared_ptr<const Registration> Find(const void* pointer, size_t bytes) const;
  // No registration at all: launches skip the lookup without a lock.
  bool empty() const { return count_.load(std::memory_order_acquire) == 0; }

 private:
  Transport* const transport_;
  mutable std::mutex mutex_;
  std::vector<std::shared_ptr<const Registration>> entries_;  // few, in registration order
  std::atomic<size_t> count_{0};
};

}  // namespace chorus
