#include "transports/cuda_ipc/pull_acks.h"

#include <unistd.h>

#include <cstring>
#include <thread>

#include "transports/shm/shm_names.h"
#include "transports/shm/shm_tsan.h"  // CHORUS_SHM_TSAN, __tsan_acquire/release
#include "transports/socket/socket.h"  // FillRandom

namespace chorus {
namespace {

constexpr uint64_t kMagic = 0x63686f7275736963ull;  // "chorusic"
constexpr size_t kLine = 64;
constexpr const char* kMacLabel = "cuda-ipc-acks";

}  // namespace

struct PullAcks::Header {
  uint64_t magic;
  int32_t rank;
  int32_t nranks;
  uint8_t nonce[16];
  uint8_t mac[16];
  std::atomic<uint32_t> mapped;  // peers that mapped this segment
};


PullAcks::PullAcks(const uint8_t secret[16], int rank, int nranks) : rank_(rank), nranks_(nranks) {
  std::memcpy(secret_, secret, sizeof(secret_));
  peers_.resize(nranks);
}

size_t PullAcks::Bytes(int nranks) { return kLine * (1 + static_cast<size_t>(nranks)); }

std::atomic<uint64_t>* PullAcks::Slot(void* segment, int rank) const {
  return reinterpret_cast<std::atomic<uint64_t>*>(static_cast<uint8_t*>(segment) + kLine * (1 + rank));
}

Status PullAcks::Create(const uint8_t secret[16], int rank, int nranks, std::unique_ptr<PullAcks>* out) {
  static_assert(sizeof(Header) <= kLine, "the header fits one line");
  std::unique_ptr<PullAcks> acks(new PullAcks(secret, rank, nranks));
  CHORUS_RETURN_IF_ERROR(
      shm::ShmSegment::Create(shm::SegmentPrefix(secret, rank, ::getpid()), Bytes(nranks), &acks->own_)
          .WithContext("CUDA IPC acknowledgements"));
  auto* header = new (acks->own_->data()) Header();
  header->magic = kMagic;
  header->rank = rank;
  header->nranks = nranks;
  CHORUS_RETURN_IF_ERROR(FillRandom(header->nonce, sizeof(header->nonce)));
  shm::SegmentMac(secret, kMacLabel, header->nonce, rank, header->mac);
  for (int r = 0; r < nranks; ++r) new (acks->Slot(acks->own_->data(), r)) std::atomic<uint64_t>(0);
  *out = std::move(acks);
  return Status::Ok();
}

Status PullAcks::OpenPeer(int peer, const std::string& name) {
  std::unique_ptr<shm::ShmSegment> segment;
  CHORUS_RETURN_IF_ERROR(shm::ShmSegment::Open(name, Bytes(nranks_), &segment)
                             .WithContext(StrCat("CUDA IPC acknowledgements of rank ", peer)));
  auto* header = static_cast<Header*>(segment->data());
  uint8_t expected[16];
  shm::SegmentMac(secret_, kMacLabel, header->nonce, peer, expected);
  if (header->magic != kMagic || header->rank != peer || header->nranks != nranks_ ||
      std::memcmp(expected, header->mac, sizeof(expected)) != 0) {
    return InternalError("CUDA IPC: segment ", name, " published by rank ", peer,
                         " is not that rank's of this communicator");
  }
  header->mapped.fetch_add(1, std::memory_order_acq_rel);
  peers_[peer] = std::move(segment);
  return Status::Ok();
}

Status PullAcks::AwaitMapped(int peers, Deadline deadline) {
  const auto* header = static_cast<const Header*>(own_->data());
  while (header->mapped.load(std::memory_order_acquire) < static_cast<uint32_t>(peers)) {
    if (deadline.Expired()) {
      return Status(chorusTimeout, StrCat("CUDA IPC: only ", header->mapped.load(), " of ", peers,
                                          " peers mapped rank ", rank_, "'s acknowledgements before the deadline"));
    }
    std::this_thread::sleep_for(std::chrono::microseconds(50));
  }
  own_->Unlink();
  return Status::Ok();
}

// ThreadSanitizer pairs release and acquire by address, and the two sides of
// a counter see it through different mappings (ranks that are threads of
// one process): as for shm's rings (shm/shm_tsan.h), both name it by what
// every mapping shares, the segment's MAC and the slot. Nothing without TSan.
#ifdef CHORUS_SHM_TSAN
namespace {
void* TsanCell(const void* segment, int slot) {
  alignas(8) static uint64_t cells[4096];
  uint64_t key = 0;
  std::memcpy(&key, static_cast<const uint8_t*>(segment) + offsetof(PullAcks::Header, mac), sizeof(key));
  key = (key + static_cast<uint64_t>(slot)) * 0x9E3779B97F4A7C15ull;
  return &cells[key >> (64 - 12)];
}
}  // namespace
#endif

uint64_t PullAcks::Finished(int peer) const {
  const uint64_t finished = Slot(own_->data(), peer)->load(std::memory_order_acquire);
#ifdef CHORUS_SHM_TSAN
  __tsan_acquire(TsanCell(own_->data(), peer));
#endif
  return finished;
}

void PullAcks::Acknowledge(int peer, uint64_t sequence) {
#ifdef CHORUS_SHM_TSAN
  __tsan_release(TsanCell(peers_[peer]->data(), rank_));
#endif
  Slot(peers_[peer]->data(), rank_)->store(sequence, std::memory_order_release);
}

}  // namespace chorus
