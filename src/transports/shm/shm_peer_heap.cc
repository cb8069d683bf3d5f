#include "transports/shm/shm_peer_heap.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstring>
#include <string>

#include "base/shared_heap.h"
#include "transports/shm/shm_layout.h"

namespace chorus {
namespace shm {

PeerHeapView::~PeerHeapView() { ::munmap(const_cast<uint8_t*>(view_), bytes_); }

std::unique_ptr<PeerHeapView> PeerHeapView::Map(pid_t pid, const SegmentHeader& peer) {
  if (peer.heap_bytes <= SharedHeap::kPageBytes || peer.heap_fd < 0) return nullptr;
  const std::string path = "/proc/" + std::to_string(pid) + "/fd/" + std::to_string(peer.heap_fd);
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return nullptr;
  void* view = ::mmap(nullptr, peer.heap_bytes, PROT_READ, MAP_SHARED | MAP_NORESERVE, fd, 0);
  ::close(fd);
  if (view == MAP_FAILED) return nullptr;
  std::unique_ptr<PeerHeapView> mapped(new PeerHeapView(static_cast<const uint8_t*>(view), peer.heap_base,
                                                        peer.heap_bytes));
  // The fd number could name another file by now (or a file of the same
  // size): only the id proves it is the heap.
  if (std::memcmp(view, peer.heap_id, SharedHeap::kIdBytes) != 0) return nullptr;
  return mapped;
}

const uint8_t* PeerHeapView::Translate(uint64_t address, size_t bytes) const {
  if (address < base_ + SharedHeap::kPageBytes || address - base_ > bytes_ || bytes > bytes_ - (address - base_)) {
    return nullptr;
  }
  return view_ + (address - base_);
}

}  // namespace shm
}  // namespace chorus
