// PeerHeapView: a peer process's shared heap (base/shared_heap.h), mapped
// read-only here, so that a receiver copies or combines a large message
// straight out of the sender's block (PullMethod::kHeap): one pass, as
// between threads, instead of two copies through the ring.
//
// Opened through /proc/<pid>/fd/<fd>, which needs what reading the peer's
// /proc entries needs (same user, not in another pid namespace); the id in
// the heap's first page proves it is the file the peer's segment names.
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <cstdint>
#include <memory>

namespace chorus {
namespace shm {

struct SegmentHeader;

class PeerHeapView {
 public:
  ~PeerHeapView();
  PeerHeapView(const PeerHeapView&) = delete;
  PeerHeapView& operator=(const PeerHeapView&) = delete;

  // The heap `peer` published in its segment header, mapped; null when it
  // published none or this process cannot open or map it (the ring serves).
  static std::unique_ptr<PeerHeapView> Map(pid_t pid, const SegmentHeader& peer);

  // Where [address, address + bytes) of the peer's address space is
  // readable here; null when that range is not inside its heap.
  const uint8_t* Translate(uint64_t address, size_t bytes) const;

 private:
  PeerHeapView(const uint8_t* view, uint64_t base, size_t bytes) : view_(view), base_(base), bytes_(bytes) {}

  const uint8_t* view_;
  uint64_t base_;  // where the peer mapped it
  size_t bytes_;
};

}  // namespace shm
}  // namespace chorus
