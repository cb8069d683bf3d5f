// ShmSegment: one POSIX shared-memory object, mapped. The creator names it
// with a caller's prefix and 128 random bits (O_EXCL, mode 0600), backs
// every page at creation (a full /dev/shm is an error, not a later SIGBUS)
// and unlinks it as soon as every peer has mapped it; the mappings stay
// valid after the unlink. While the name exists the creator holds flock
// LOCK_EX on it: the kernel's proof that the creator lives (shm_names.h).
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "base/status.h"

namespace chorus {
namespace shm {

class ShmSegment {
 public:
  ~ShmSegment();
  ShmSegment(const ShmSegment&) = delete;
  ShmSegment& operator=(const ShmSegment&) = delete;

  // Creates and maps a fresh zero-filled segment of `bytes` named
  // `prefix` + 32 random hex digits; nothing is left behind on failure.
  // First removes the orphaned segments of dead processes (shm_names.h).
  static Status Create(const std::string& prefix, size_t bytes, std::unique_ptr<ShmSegment>* out);
  // Maps an existing segment; fails unless it is exactly `expected_bytes`.
  static Status Open(const std::string& name, size_t expected_bytes, std::unique_ptr<ShmSegment>* out);

  void* data() const { return data_; }
  size_t size() const { return size_; }
  const std::string& name() const { return name_; }

  // Removes the name (not the mapping). Idempotent; any thread.
  void Unlink();

 private:
  ShmSegment(std::string name, void* data, size_t size, bool linked, int lock_fd);

  std::string name_;
  void* data_;
  size_t size_;
  std::atomic<bool> linked_;  // we created the name and have not unlinked it
  int lock_fd_;               // holds the creator's lock while linked_; closed by Unlink
};

// The "/dev/shm has ..." part of the error when reserving `needed` bytes
// failed for lack of space; `known`: the free and total figures were read
// (just after the failure, so others may have changed them).
std::string DescribeShortage(size_t needed, bool known, uint64_t free_bytes, uint64_t total_bytes);

// MAC(secret, label || nonce || rank): SipHash-2-4-128.
void SegmentMac(const uint8_t secret[16], const char* label, const uint8_t nonce[16], int32_t rank, uint8_t out[16]);

}  // namespace shm
}  // namespace chorus
