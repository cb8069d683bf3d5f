#include "transports/shm/shm_transport.h"

#include <sched.h>
#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <new>

#include "base/spin_wait.h"
#include "transports/host_identity.h"
#include "transports/shm/shm_futex.h"
#include "transports/shm/shm_tsan.h"
#include "transports/shm/shm_wake_socket.h"
#include "transports/shm/shm_names.h"
#include "transports/shm/shm_peer.h"
#include "transports/socket/socket.h"

namespace chorus {
namespace {

using std::chrono::microseconds;

// While requests are pending, sleeps are this short so a dead peer is
// noticed; this is also how often pids are polled.
constexpr int64_t kPendingSleepSliceUs = 5000;
constexpr auto kLivenessInterval = microseconds(kPendingSleepSliceUs);
// Idle Progress(0) calls between two reads of the clock in CheckPeers.
constexpr uint32_t kClockEveryIdlePolls = 64;
// How long Shutdown waits for a peer still copying out of our buffers: a
// peer process may be dead, so briefly; a peer thread of this process is
// alive by definition and its memcpy would fault on a freed buffer, so it
// gets as long as a slow (sanitised, oversubscribed) copy can take.
constexpr auto kPullDrainLimit = std::chrono::seconds(1);
constexpr auto kSameProcessPullDrainLimit = std::chrono::seconds(60);


}  // namespace

Status CreateShmTransport(const TransportOptions& options, std::unique_ptr<Transport>* transport,
                          const ShmTuning& requested) {
  ShmTuning tuning = requested;
  if (tuning.ring_bytes == 0) tuning.ring_bytes = shm::AutoRingBytes(options.nranks);
  if (options.nranks < 1 || options.rank < 0 || options.rank >= options.nranks) {
    return InvalidArgument("shm transport: rank ", options.rank, " out of range for ", options.nranks, " ranks");
  }
  const size_t min_ring = 2 * (sizeof(shm::RecordHeader) + shm::kMaxRecordPayload);
  if (tuning.ring_bytes < min_ring || tuning.ring_bytes % shm::kCacheLine != 0) {
    return InvalidArgument("shm transport: ring_bytes must be a multiple of 64 and at least ", min_ring, ", got ",
                           tuning.ring_bytes);
  }
  if (tuning.combine_piece_bytes == 0 || tuning.combine_piece_bytes % kCombinePieceAlign != 0) {
    return InvalidArgument("shm transport: combine_piece_bytes must be a positive multiple of ", kCombinePieceAlign,
                           ", got ", tuning.combine_piece_bytes);
  }
  std::unique_ptr<ShmTransport> created(new ShmTransport(options, tuning));
  CHORUS_RETURN_IF_ERROR(created->CreateSegment());
  *transport = std::move(created);
  return Status::Ok();
}

ShmTransport::ShmTransport(const TransportOptions& options, const ShmTuning& tuning)
    : options_(options), tuning_(tuning), pid_(::getpid()), host_(HostIdentity()) {}

ShmTransport::~ShmTransport() { Shutdown(); }

TransportCapabilities ShmTransport::capabilities() const {
  TransportCapabilities capabilities;
  capabilities.same_host_only = true;
  capabilities.combine_on_receive = true;
  capabilities.shares_cores = wait_policy_.yield_when_idle;
  return capabilities;
}

Status ShmTransport::CreateSegment() {
  const size_t bytes = shm::SegmentBytes(options_.nranks, tuning_.ring_bytes);
  const std::string prefix = shm::SegmentPrefix(options_.secret, options_.rank, pid_);
  Status status = shm::ShmSegment::Create(prefix, bytes, &segment_);
  if (!status.ok()) {
    return Status(status.code(), StrCat("shm transport: rank ", options_.rank, " needs ", options_.nranks,
                                        " rings of ", tuning_.ring_bytes, " bytes: ", status.message(),
                                        "; lower CHORUS_SHM_RING_BYTES, enlarge /dev/shm (docker run --shm-size) "
                                        "or set CHORUS_TRANSPORT=tcp"));
  }
  auto* created = new (segment_->data()) shm::SegmentHeader();
  created->magic = shm::kSegmentMagic;
  created->version = shm::kLayoutVersion;
  created->nranks = static_cast<uint32_t>(options_.nranks);
  created->owner_rank = options_.rank;
  created->owner_pid = pid_;
  created->ring_bytes = tuning_.ring_bytes;
  created->segment_bytes = bytes;
  created->owner_view_address = reinterpret_cast<uintptr_t>(segment_->data());
  created->owner_cpus = CurrentCpuMask();
  heap_ = tuning_.pull_from_heap ? SharedHeap::Process() : nullptr;
  if (heap_ != nullptr) {
    created->heap_fd = heap_->fd();
    created->heap_base = heap_->base();
    created->heap_bytes = heap_->bytes();
    std::memcpy(created->heap_id, heap_->id(), sizeof(created->heap_id));
  }
  CHORUS_RETURN_IF_ERROR(FillRandom(created->nonce, sizeof(created->nonce)));
  shm::SegmentMac(options_.secret, "shm-owner", created->nonce, options_.rank, created->owner_mac);
  for (int sender = 0; sender < options_.nranks; ++sender) {
    new (shm::RingControlOf(segment_->data(), tuning_.ring_bytes, sender)) shm::RingControl();
  }
  new (shm::BoardAreaOf(segment_->data(), options_.nranks, tuning_.ring_bytes)) shm::BoardArea();
  local_address_ = StrCat("shm1 ", pid_, " ", tuning_.ring_bytes, " ", segment_->name(), " ", host_);
  return Status::Ok();
}

Endpoint* ShmTransport::endpoint(int peer) {
  if (!connected_ || peer < 0 || peer >= options_.nranks || peers_[peer] == nullptr) return nullptr;
  return &peers_[peer]->endpoint;
}

shm::PullMethod ShmTransport::pull_method(int peer) const {
  if (!connected_ || peer < 0 || peer >= options_.nranks || peers_[peer] == nullptr) return shm::PullMethod::kNone;
  return peers_[peer]->pull_method;
}

Status ShmTransport::Fail(Status status) {
  if (error_.ok()) error_ = status;
  // Peers waiting on us learn at once, and learn a notice we were given.
  CloseNotice notice;
  if (ReceivedNotice(&notice)) {
    ShutdownWithNotice(notice);
  } else {
    Shutdown();
  }
  return error_;
}

Status ShmTransport::Post(int peer, TransferRequest* request, bool is_send) {
  if (!error_.ok()) return error_;
  if (shut_down_.load()) return Fail(InvalidUsage("shm transport was shut down"));
  if (request == nullptr) return InvalidArgument("shm transport: null request");
  if (request->buffer == nullptr && request->bytes > 0) {
    return InvalidArgument("shm transport: null buffer for a ", request->bytes, "-byte message");
  }
  Peer& target = *peers_[peer];
  if (is_send) {
    target.outbound->Push(request);
  } else {
    target.inbound->Push(request);
  }
  return Status::Ok();
}

Status ShmTransport::PumpPeer(Peer& peer, bool* progressed) {
  peer.outbound->Pump(progressed);
  Status status = peer.inbound->Pump(progressed);
  if (!status.ok()) return Fail(status);
  return Status::Ok();
}

Status ShmTransport::PumpAll(bool* progressed) {
  for (Peer* peer : connected_peers_) {
    if (peer->idle()) continue;
    CHORUS_RETURN_IF_ERROR(PumpPeer(*peer, progressed));
  }
  return Status::Ok();
}

// Fails requests pending on a peer that shut down or died, after taking
// what it published first (setting *progressed when that completed any).
// The closed flags
// are read every call; the clock (for the kill(pid, 0) interval) only every
// kClockEveryIdlePolls-th idle poll unless `force`: reading it on every
// Progress(0) was ~11% of an 8-byte allreduce.
Status ShmTransport::CheckPeers(bool force, bool* progressed) {
  bool check_liveness = false;
  if (force || ++idle_polls_ % kClockEveryIdlePolls == 0) {
    const Clock::time_point now = Clock::now();
    check_liveness = now >= next_liveness_check_;
    if (check_liveness) next_liveness_check_ = now + kLivenessInterval;
  }
  // A peer that closed with a notice wrote it into our segment: the
  // notice concerns us even when we wait for other peers.
  CloseNotice notice;
  if (ReceivedNotice(&notice)) {
    return Fail(RemoteError("rank ", notice.origin, " closed its connections with notice ", notice.reason));
  }
  for (Peer* peer : connected_peers_) {
    if (peer->idle()) continue;
    if (peer->header()->closed.load(std::memory_order_acquire) != 0) {
      // What it published before closing is still ours to take.
      CHORUS_RETURN_IF_ERROR(PumpPeer(*peer, progressed));
      if (!peer->idle()) return Fail(RemoteError(peer->label, " shut down its shm transport with requests pending"));
    }
    if (check_liveness && peer->pid != pid_ && shm::ProcessGone(peer->pid)) {
      // What it did before exiting (consume our last records) still counts:
      // a peer that finished and exited is not a failure.
      CHORUS_RETURN_IF_ERROR(PumpPeer(*peer, progressed));
      if (!peer->idle()) return Fail(RemoteError(peer->label, " died"));
    }
  }
  return Status::Ok();
}

Status ShmTransport::Progress(int timeout_ms) {
  if (!error_.ok()) return error_;
  if (shut_down_.load()) return Fail(InvalidUsage("shm transport was shut down"));
  if (!connected_) return InvalidUsage("shm transport: Progress before Connect");
  bool progressed = false;
  CHORUS_RETURN_IF_ERROR(PumpAll(&progressed));
  if (progressed) return Status::Ok();
  CHORUS_RETURN_IF_ERROR(CheckPeers(/*force=*/false, &progressed));
  if (progressed) return Status::Ok();
  if (timeout_ms <= 0) {
    // The peer we wait for may need this core (ranks outnumber CPUs).
    if (wait_policy_.yield_when_idle) ::sched_yield();
    return Status::Ok();
  }
  return Wait(timeout_ms);
}

Status ShmTransport::Wait(int timeout_ms) {
  const Clock::time_point start = Clock::now();
  const Clock::time_point end = start + std::chrono::milliseconds(timeout_ms);
  // Two waits in a row that ended at their first yield: spinning only keeps
  // the peer off our core. One that goes on past its first yield spins again.
  constexpr uint32_t kStackedAfter = 2;
  const Clock::duration spin =
      ended_at_first_yield_ >= kStackedAfter ? Clock::duration::zero() : Clock::duration(wait_policy_.budget.spin);
  uint32_t yields = 0;
  while (true) {
    if (wakeup_requested_.exchange(false)) return Status::Ok();
    if (shut_down_.load()) return Fail(InvalidUsage("shm transport was shut down"));
    bool progressed = false;
    CHORUS_RETURN_IF_ERROR(PumpAll(&progressed));
    if (progressed) {
      if (wait_policy_.budget.spin.count() > 0) ended_at_first_yield_ = yields == 1 ? ended_at_first_yield_ + 1 : 0;
      return Status::Ok();
    }
    const Clock::time_point now = Clock::now();
    if (now >= end) return CheckPeers(/*force=*/true, &progressed);
    if (now - start < spin) {
      for (int i = 0; i < 32; ++i) CpuPause();
    } else if (now - start < wait_policy_.budget.yield_until) {
      ::sched_yield();
      ++yields;
    } else {
      ended_at_first_yield_ = 0;  // a long wait: the next one spins again
      CHORUS_RETURN_IF_ERROR(CheckPeers(/*force=*/true, &progressed));
      if (progressed) return Status::Ok();
      bool pending = false;
      for (Peer* peer : connected_peers_) pending = pending || !peer->idle();
      int64_t sleep_us = std::chrono::duration_cast<microseconds>(end - now).count();
      if (pending && sleep_us > kPendingSleepSliceUs) sleep_us = kPendingSleepSliceUs;
      CHORUS_RETURN_IF_ERROR(SleepOnce(sleep_us, &progressed));
      // Its last look may have completed a request: the caller must see it
      // now, since that request no longer counts as pending here.
      if (progressed) return Status::Ok();
    }
  }
}

Status ShmTransport::SleepOnce(int64_t timeout_us, bool* progressed) {
  shm::SegmentHeader* own = header();
  const uint32_t word = own->futex_word.load(std::memory_order_acquire);
  own->sleeping.store(1, std::memory_order_relaxed);
  // Pairs with WakeOwnerIfSleeping: either a peer sees our flag or we see
  // its work in this last look.
  std::atomic_thread_fence(std::memory_order_seq_cst);
  if (tuning_.before_last_look) tuning_.before_last_look();
  Status status = PumpAll(progressed);
  if (status.ok() && !*progressed && !wakeup_requested_.load() && !shut_down_.load()) {
    shm::FutexWait(&own->futex_word, word, timeout_us);
  }
  own->sleeping.store(0, std::memory_order_relaxed);
  return status;
}

Status ShmTransport::ArmWait(bool look_only, WaitArm* arm) {
  *arm = WaitArm();
  if (!error_.ok()) return error_;
  if (shut_down_.load()) return Fail(InvalidUsage("shm transport was shut down"));
  if (!connected_) return InvalidUsage("shm transport: ArmWait before Connect");
  if (!wake_socket_opened_) {
    wake_socket_opened_ = true;
    wake_socket_ = Socket(shm::OpenWakeSocket(*header()));
  }
  if (!wake_socket_.valid()) return Status::Ok();  // fd -1: the caller waits in Progress
  bool progressed = false;
  CHORUS_RETURN_IF_ERROR(CheckPeers(/*force=*/true, &progressed));
  if (look_only) {
    Status status = PumpAll(&progressed);
    arm->fd = wake_socket_.fd();
    arm->ready = !status.ok() || progressed || wakeup_requested_.exchange(false);
    return status;
  }
  shm::SegmentHeader* own = header();
  const uint32_t word = own->futex_word.load(std::memory_order_seq_cst);
  own->sleeping.store(shm::kSleepingOnWakeSocket, std::memory_order_seq_cst);
  // As SleepOnce: either a peer sees the flag (and sends to the socket) or
  // this last look sees its work; a WakeOwner that saw no flag moved the word.
  if (tuning_.before_last_look) tuning_.before_last_look();
  Status status = PumpAll(&progressed);
  arm->fd = wake_socket_.fd();
  arm->ready = !status.ok() || progressed || wakeup_requested_.exchange(false) || shut_down_.load() ||
               own->futex_word.load(std::memory_order_seq_cst) != word;
  // A peer that dies wakes nobody: with requests pending, look again after
  // a slice, as Wait does.
  bool pending = false;
  for (Peer* peer : connected_peers_) pending = pending || !peer->idle();
  if (pending) arm->max_sleep_ms = static_cast<int>(kPendingSleepSliceUs / 1000);
  return status;
}

void ShmTransport::DisarmWait() {
  if (segment_ != nullptr) header()->sleeping.store(0, std::memory_order_relaxed);
  if (wake_socket_.valid()) shm::DrainWakeSocket(wake_socket_.fd());
}

void ShmTransport::Wakeup() {
  wakeup_requested_.store(true);
  if (segment_ != nullptr) shm::WakeOwner(header());
}

void ShmTransport::ShutdownWithNotice(const CloseNotice& notice) {
  {
    // Before our closed flag, so that a peer that sees it finds the notice;
    // also after an earlier Shutdown, since the peers' segments stay mapped.
    std::lock_guard<std::mutex> lock(shutdown_mutex_);
    for (Peer* peer : connected_peers_) {
      uint64_t none = 0;
      peer->header()->notice.compare_exchange_strong(none, EncodeCloseNotice(notice), std::memory_order_seq_cst);
      shm::WakeOwner(peer->header());
    }
  }
  Shutdown();
}

bool ShmTransport::ReceivedNotice(CloseNotice* notice) const {
  if (segment_ == nullptr) return false;
  return DecodeCloseNotice(header()->notice.load(std::memory_order_acquire), notice);
}

void ShmTransport::Shutdown() {
  std::lock_guard<std::mutex> lock(shutdown_mutex_);
  if (shut_down_.exchange(true) || segment_ == nullptr) return;
  header()->closed.store(1, std::memory_order_seq_cst);
  segment_->Unlink();
  // Remove what dead ranks of this communicator left behind: one that died
  // before anyone mapped its segment (set-up never finished), or after its
  // peers mapped it but before it unlinked its name (set-up finished here).
  // Only segments whose creator is gone go; one readdir of /dev/shm.
  shm::UnlinkSegmentsOfDeadRanks(options_.secret);
  for (Peer* peer : connected_peers_) shm::WakeOwner(peer->header());
  shm::WakeOwner(header());
  // A peer may be copying out of one of our buffers right now; once we
  // return, the caller may free it. Bounded: the peer may be dead.
  const Clock::time_point start = Clock::now();
  for (Peer* peer : connected_peers_) {
    const Clock::time_point give_up = start + (peer->pid == ::getpid() ? kSameProcessPullDrainLimit : kPullDrainLimit);
    const shm::RingControl* ring = shm::RingControlOf(peer->segment->data(), peer->ring_bytes, options_.rank);
    while (ring->pulling.load(std::memory_order_seq_cst) != 0 && Clock::now() < give_up) ::sched_yield();
    shm::TsanAcquireShared(ring, &ring->pulling);
  }
}

}  // namespace chorus
