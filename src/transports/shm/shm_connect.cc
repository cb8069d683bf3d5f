// ShmTransport::Connect: map every same-host peer's segment, prove the
// secret both ways, probe whether we can read each peer's memory, then wait
// until every peer has mapped our segment and unlink its name.
#include <sys/uio.h>
#include <unistd.h>

#include <cstdint>
#include <cstring>
#include <thread>

#include "transports/shm/shm_futex.h"
#include "transports/shm/shm_names.h"
#include "transports/shm/shm_peer_check.h"
#include "transports/shm/shm_peer.h"
#include "transports/shm/shm_transport.h"

namespace chorus {

Status ShmTransport::MapPeer(int rank, const std::string& address, std::unique_ptr<Peer>* out) {
  shm::PeerAddress parsed;
  if (!shm::ParsePeerAddress(address, &parsed)) {
    return InvalidArgument("shm transport: peer ", rank, " has a malformed address '", address, "'");
  }
  auto peer = std::make_unique<Peer>(this, rank);
  peer->pid = parsed.pid;
  peer->ring_bytes = parsed.ring_bytes;
  peer->label = StrCat("peer ", rank, " (pid ", parsed.pid, ")");
  if (parsed.host != host_) {
    return InvalidUsage("shm transport: ", peer->label, " is on host '", parsed.host, "', not on this host '", host_,
                        "'");
  }
  if (!shm::RingBytesValid(parsed.ring_bytes)) {
    return InvalidArgument("shm transport: ", peer->label, " announces a bad ring size ", parsed.ring_bytes);
  }
  const size_t bytes = shm::SegmentBytes(options_.nranks, parsed.ring_bytes);
  CHORUS_RETURN_IF_ERROR(shm::ShmSegment::Open(parsed.name, bytes, &peer->segment)
                             .WithContext(StrCat("shm transport: mapping the segment of ", peer->label)));
  const shm::SegmentHeader* theirs = peer->header();
  if (!shm::SegmentHeaderValid(*theirs, parsed, options_.nranks, rank, options_.secret)) {
    return InvalidUsage("shm transport: the segment of ", peer->label,
                        " failed authentication (wrong secret, communicator or version)");
  }
  // Our proof, checked by the owner before it talks to us.
  shm::SegmentMac(options_.secret, "shm-sender", theirs->nonce, options_.rank,
                  shm::RingControlOf(peer->segment->data(), parsed.ring_bytes, options_.rank)->sender_mac);
  *out = std::move(peer);
  return Status::Ok();
}

// Can we copy large messages out of this peer's memory? Probed on its
// segment header, which we also see through our own mapping.
shm::PullMethod ShmTransport::ProbePull(const Peer& peer) const {
  if (!tuning_.single_copy) return shm::PullMethod::kNone;
  if (peer.pid == pid_ && !tuning_.cma_within_process) return shm::PullMethod::kMemcpy;
  if (peer.pid != pid_ && !tuning_.pull_from_processes) {
    return peer.heap != nullptr ? shm::PullMethod::kHeap : shm::PullMethod::kNone;
  }
  uint8_t probe[sizeof(shm::SegmentHeader::magic) * 4] = {};
  iovec local = {probe, sizeof(probe)};
  iovec remote = {reinterpret_cast<void*>(static_cast<uintptr_t>(peer.header()->owner_view_address)), sizeof(probe)};
  // EPERM (ptrace restrictions, seccomp) means: chunk through the ring.
  if (::process_vm_readv(peer.pid, &local, 1, &remote, 1, 0) != static_cast<ssize_t>(sizeof(probe))) {
    return shm::PullMethod::kNone;
  }
  return std::memcmp(probe, peer.segment->data(), sizeof(probe)) == 0 ? shm::PullMethod::kCma : shm::PullMethod::kNone;
}

Status ShmTransport::AwaitAttachments(int expected, const std::vector<std::unique_ptr<Peer>>& peers,
                                      Deadline deadline) {
  std::chrono::microseconds pause(20);
  auto next_liveness_check = Clock::now();
  while (header()->attached.load(std::memory_order_acquire) < static_cast<uint32_t>(expected)) {
    if (shut_down_.load()) return InvalidUsage("shm transport shut down while connecting");
    if (Clock::now() >= next_liveness_check) {
      // A peer that died before mapping our segment never will: fail now, not at the deadline.
      next_liveness_check = Clock::now() + std::chrono::milliseconds(5);
      for (const auto& peer : peers) {
        if (peer == nullptr || peer->pid == pid_ || !shm::ProcessGone(peer->pid)) continue;
        const shm::RingControl* control =
            shm::RingControlOf(segment_->data(), tuning_.ring_bytes, peer->endpoint.peer());
        uint8_t zero[shm::kMacBytes] = {};
        if (std::memcmp(control->sender_mac, zero, sizeof(zero)) == 0) {
          return RemoteError("shm transport: ", peer->label, " died before mapping the segment of rank ",
                             options_.rank);
        }
      }
    }
    if (deadline.Expired()) {
      // Who is missing: those whose proof is not in our segment yet.
      std::string missing;
      for (const auto& peer : peers) {
        if (peer == nullptr) continue;
        const shm::RingControl* control =
            shm::RingControlOf(segment_->data(), tuning_.ring_bytes, peer->endpoint.peer());
        uint8_t zero[shm::kMacBytes] = {};
        if (std::memcmp(control->sender_mac, zero, sizeof(zero)) == 0) missing += " " + peer->label;
      }
      return TimeoutError("shm transport: rank ", options_.rank, " timed out waiting for peers to map its segment:",
                          missing.empty() ? std::string(" (unknown)") : missing);
    }
    std::this_thread::sleep_for(pause);
    if (pause < std::chrono::milliseconds(1)) pause *= 2;
  }
  return Status::Ok();
}

Status ShmTransport::VerifySenders(const std::vector<std::unique_ptr<Peer>>& peers) const {
  const shm::SegmentHeader* own = header();
  for (const auto& peer : peers) {
    if (peer == nullptr) continue;
    const int rank = peer->endpoint.peer();
    uint8_t expected_mac[shm::kMacBytes];
    shm::SegmentMac(options_.secret, "shm-sender", own->nonce, rank, expected_mac);
    const shm::RingControl* control = shm::RingControlOf(segment_->data(), tuning_.ring_bytes, rank);
    if (std::memcmp(control->sender_mac, expected_mac, sizeof(expected_mac)) != 0) {
      return InvalidUsage("shm transport: ", peer->label, " mapped our segment without proving the secret");
    }
  }
  return Status::Ok();
}

shm::WaitPolicy ShmTransport::ChooseWaitPolicy(const std::vector<std::unique_ptr<Peer>>& peers) const {
  switch (tuning_.wait_mode) {
    case ShmWaitMode::kDedicatedCores:
      return shm::kDedicatedCoresPolicy;
    case ShmWaitMode::kSharedCores:
      return shm::kSharedCoresPolicy;
    default:
      break;
  }
  // Every local rank's mask; peers wrote theirs before publishing.
  std::vector<CpuMask> masks = {header()->owner_cpus};
  for (const auto& peer : peers) {
    if (peer != nullptr) masks.push_back(peer->header()->owner_cpus);
  }
  return RanksOutnumberCpus(masks) ? shm::kSharedCoresPolicy : shm::kDedicatedCoresPolicy;
}

Status ShmTransport::Connect(const std::vector<std::string>& addresses, Deadline deadline) {
  if (connected_) return InvalidUsage("shm transport: Connect called twice");
  Status status = ConnectPeers(addresses, deadline);
  // Nobody else will map our segment now: leave no name behind, nor the
  // names of peers that died before their segment was mapped.
  if (!status.ok()) {
    segment_->Unlink();
    shm::UnlinkSegmentsOfDeadRanks(options_.secret);
  }
  return status;
}

Status ShmTransport::ConnectPeers(const std::vector<std::string>& addresses, Deadline deadline) {
  if (shut_down_.load()) return InvalidUsage("shm transport was shut down");
  if (static_cast<int>(addresses.size()) != options_.nranks) {
    return InvalidArgument("shm transport: ", addresses.size(), " addresses for ", options_.nranks, " ranks");
  }
  std::vector<std::unique_ptr<Peer>> peers(options_.nranks);
  int expected = 0;
  for (int rank = 0; rank < options_.nranks; ++rank) {
    if (rank == options_.rank || addresses[rank].empty()) continue;
    CHORUS_RETURN_IF_ERROR(MapPeer(rank, addresses[rank], &peers[rank]));
    ++expected;
  }
  for (auto& peer : peers) {
    if (peer == nullptr) continue;
    if (peer->pid != pid_ && tuning_.single_copy && tuning_.pull_from_heap) {
      peer->heap = shm::PeerHeapView::Map(peer->pid, *peer->header());
    }
    peer->pull_method = ProbePull(*peer);
    const uint32_t pulls = peer->pull_method == shm::PullMethod::kNone   ? shm::kPullsNothing
                           : peer->pull_method == shm::PullMethod::kHeap ? shm::kPullsHeapBlocks
                                                                         : shm::kPullsAnyBuffer;
    shm::RingControlOf(segment_->data(), tuning_.ring_bytes, peer->endpoint.peer())
        ->receiver_can_pull.store(pulls, std::memory_order_relaxed);
  }
  // Our proof and pull flags are written; the release publishes them.
  for (auto& peer : peers) {
    if (peer != nullptr) peer->header()->attached.fetch_add(1, std::memory_order_acq_rel);
  }
  CHORUS_RETURN_IF_ERROR(AwaitAttachments(expected, peers, deadline));
  segment_->Unlink();
  CHORUS_RETURN_IF_ERROR(VerifySenders(peers));

  for (auto& peer : peers) {
    if (peer == nullptr || peer->pull_method != shm::PullMethod::kCma || !bounce_storage_.empty()) continue;
    bounce_storage_.resize(tuning_.combine_piece_bytes / shm::kCacheLine);
    bounce_ = {bounce_storage_.front().bytes, tuning_.combine_piece_bytes};
  }
  for (auto& peer : peers) {
    if (peer == nullptr) continue;
    const int rank = peer->endpoint.peer();
    void* theirs = peer->segment->data();
    const uint32_t they_pull =
        shm::RingControlOf(theirs, peer->ring_bytes, options_.rank)->receiver_can_pull.load(std::memory_order_relaxed);
    // Heap blocks only: they mapped our heap (if we have none, nothing).
    const bool heap_only = they_pull == shm::kPullsHeapBlocks;
    peer->maps_our_heap = heap_only && heap_ != nullptr;
    const bool pulls = they_pull == shm::kPullsAnyBuffer || (heap_only && heap_ != nullptr);
    peer->outbound = std::make_unique<shm::ShmOutbound>(
        shm::RingControlOf(theirs, peer->ring_bytes, options_.rank),
        shm::RingDataOf(theirs, peer->ring_bytes, options_.rank), peer->ring_bytes, peer->header(),
        pulls ? tuning_.single_copy_min_bytes : SIZE_MAX, heap_only ? heap_ : nullptr);
    peer->inbound = std::make_unique<shm::ShmInbound>(shm::RingControlOf(segment_->data(), tuning_.ring_bytes, rank),
                                                      shm::RingDataOf(segment_->data(), tuning_.ring_bytes, rank),
                                                      tuning_.ring_bytes, peer->header(), peer->pull_method, peer->pid,
                                                      peer->label, &stats_, &bounce_, peer->heap.get());
  }
  std::lock_guard<std::mutex> lock(shutdown_mutex_);
  if (shut_down_.load()) return InvalidUsage("shm transport shut down while connecting");
  wait_policy_ = ChooseWaitPolicy(peers);
  peers_ = std::move(peers);
  for (auto& peer : peers_) {
    if (peer != nullptr) connected_peers_.push_back(peer.get());
  }
  if (expected == options_.nranks - 1) board_ = MakeBoard();
  connected_ = true;
  return Status::Ok();
}

// Every rank is connected here (each maps every segment): the board of
// the whole communicator.
std::unique_ptr<shm::ShmBoard> ShmTransport::MakeBoard() {
  std::vector<shm::ShmBoard::Member> members(options_.nranks);
  for (int rank = 0; rank < options_.nranks; ++rank) {
    shm::ShmBoard::Member& member = members[rank];
    if (rank == options_.rank) {
      member.area = shm::BoardAreaOf(segment_->data(), options_.nranks, tuning_.ring_bytes);
      member.header = header();
      member.pid = pid_;
      member.label = StrCat("rank ", rank, " (pid ", pid_, ", this rank)");
    } else {
      const Peer& peer = *peers_[rank];
      member.area = shm::BoardAreaOf(peer.segment->data(), options_.nranks, peer.ring_bytes);
      member.header = peer.header();
      member.pid = peer.pid;
      member.label = peer.label;
      member.heap = peer.heap.get();
      member.maps_our_heap = peer.maps_our_heap;
    }
  }
  return std::make_unique<shm::ShmBoard>(options_.rank, std::move(members), wait_policy_, heap_);
}

}  // namespace chorus
