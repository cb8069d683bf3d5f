// Workspace: memory an operation borrows for scratch and staging, kept by the
// communicator between operations so that the hot path does not allocate
// (and page-fault) on every call. One operation uses it at a time.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>

namespace chorus {

class Workspace {
 public:
  // Returns at least `bytes` of uninitialised memory, valid until the next
  // call. Alignment: 64 bytes.
  uint8_t* Reserve(size_t bytes) {
    if (bytes > capacity_) {
      buffer_.reset();
      capacity_ = bytes;
      buffer_.reset(static_cast<uint8_t*>(::operator new[](capacity_, std::align_val_t(64))));
    }
    return buffer_.get();
  }

 private:
  struct AlignedDelete {
    void operator()(uint8_t* p) const { ::operator delete[](p, std::align_val_t(64)); }
  };
  std::unique_ptr<uint8_t[], AlignedDelete> buffer_;
  size_t capacity_ = 0;
};

}  // namespace chorus
