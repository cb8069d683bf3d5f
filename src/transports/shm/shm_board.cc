#include "transports/shm/shm_board.h"

#include <sched.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <type_traits>
#include <utility>

#include "base/spin_wait.h"
#include "transports/shm/shm_futex.h"
#include "transports/shm/shm_names.h"
#include "transports/shm/shm_tsan.h"

namespace chorus {
namespace shm {
namespace {

using Clock = std::chrono::steady_clock;
// While sleeping for a peer, wake this often to see whether it died (its
// death wakes nobody; its shutdown does).
constexpr std::chrono::microseconds kSleepSlice(5000);
constexpr std::chrono::milliseconds kLivenessInterval(5);
// Yields before a wait may sleep, however little time they took: when ranks
// outnumber CPUs one yield can run another rank for longer than the whole
// yield budget, and a futex sleep then costs every round a wake-up (4
// processes on 2 cores, 8 B: 80-110 us per call with the time budget alone).
constexpr uint32_t kYieldsBeforeSleep = 64;
// With a core per rank, the board spins at least kMinSpin and yields until at
// least kMinYield before it sleeps, longer than the transport's policy: a
// board wait is one small call whose peer is on its way, and under other
// jobs' load a rank that yields after 10 us gives its slice away and comes
// back after its peer has (2 ranks not pinned, 8 B, perf/compare busbw vs
// Open MPI: 0.6x with 10 us, 1.1-2.3x with 200 us); a sleeping rank is
// woken onto its waker's CPU, stacking the ranks on one core.
constexpr std::chrono::microseconds kMinSpin(200);
constexpr std::chrono::microseconds kMinYield(2000);

}  // namespace

ShmBoard::ShmBoard(int rank, std::vector<Member> members, WaitPolicy policy, const SharedHeap* own_heap)
    : rank_(rank),
      nranks_(static_cast<int>(members.size())),
      members_(std::move(members)),
      own_area_(members_[rank].area),
      own_header_(members_[rank].header),
      own_pid_(members_[rank].pid),
      policy_(policy),
      own_heap_(own_heap) {}

bool ShmBoard::PeersReadInPlace(const void* pointer, size_t bytes) const {
  const bool in_heap = own_heap_ != nullptr && own_heap_->Shares(pointer, bytes);
  for (int peer = 0; peer < nranks_; ++peer) {
    if (peer == rank_ || members_[peer].pid == own_pid_) continue;
    if (!in_heap || !members_[peer].maps_our_heap) return false;
  }
  return true;
}

const uint8_t* ShmBoard::PeerMemory(int peer, uint64_t address, size_t bytes) const {
  const Member& member = members_[peer];
  if (member.pid == own_pid_) return reinterpret_cast<const uint8_t*>(static_cast<uintptr_t>(address));
  return member.heap != nullptr ? member.heap->Translate(address, bytes) : nullptr;
}

void ShmBoard::Publish(uint64_t round, size_t bytes) {
  BoardSlot& slot = own_area_->slots[round & 1];
  slot.bytes = static_cast<uint32_t>(bytes);
  slot.cpu.store(::sched_getcpu(), std::memory_order_relaxed);
  // seq_cst store, then seq_cst loads of the peers' `sleeping` flags: pairs
  // with SleepOnce (Dekker), so a peer either sees our round or we see that
  // it sleeps and wake it. (A release store without the fence measured the
  // same, 2 ranks pinned, and could miss a wake-up.)
  TsanBoardRelease(own_header_, round);
  slot.round.store(round, std::memory_order_seq_cst);
  for (int peer = 0; peer < nranks_; ++peer) {
    if (peer == rank_) continue;
    SegmentHeader* header = members_[peer].header;
    if (header->sleeping.load(std::memory_order_seq_cst) != 0) WakeOwner(header);
  }
}

namespace {

// Copies one line's data: `left` bytes remain of the payload. Every copy
// has a fixed size, so the compiler inlines each as a move or two: a whole
// line as three vector moves, the last part of a payload as two
// overlapping moves of the largest size that fits (a call to memcpy, or a
// loop of 8-byte moves for every line, cost 10-25 % of a 64 B-2 KiB board
// allreduce).
inline void CopyLineData(void* dst, const void* src, size_t left) {
  auto* to = static_cast<uint8_t*>(dst);
  const auto* from = static_cast<const uint8_t*>(src);
  auto pair = [&](auto size) {  // left is in [size, 2 * size]
    std::memcpy(to, from, size);
    std::memcpy(to + left - size, from + left - size, size);
  };
  if (left >= kBoardLineDataBytes) {
    std::memcpy(to, from, kBoardLineDataBytes);
  } else if (left >= 32) {
    pair(std::integral_constant<size_t, 32>());
  } else if (left >= 16) {
    pair(std::integral_constant<size_t, 16>());
  } else if (left >= 8) {
    pair(std::integral_constant<size_t, 8>());
  } else if (left >= 4) {
    pair(std::integral_constant<size_t, 4>());
  } else if (left > 0) {
    to[0] = from[0];
    to[left / 2] = from[left / 2];
    to[left - 1] = from[left - 1];
  }
}

}  // namespace

void ShmBoard::PublishLines(uint64_t round, const void* src, size_t bytes) {
  BoardLine* lines = own_area_->slots[round & 1].lines;
  const uint64_t stamp = BoardLineStamp(round, bytes);
  const auto* from = static_cast<const uint8_t*>(src);
  for (size_t at = 0; at < bytes; at += kBoardLineDataBytes, ++lines) {
    CopyLineData(lines->data, from + at, bytes - at);
    lines->stamp.store(stamp, std::memory_order_release);
  }
  Publish(round, bytes);
}

Status ShmBoard::AwaitLines(int peer, uint64_t round, size_t bytes, const std::atomic<bool>* abort, int timeout_ms,
                            uint8_t* out) {
  const BoardSlot& slot = members_[peer].area->slots[round & 1];
  const uint64_t stamp = BoardLineStamp(round, bytes);
  const size_t count = (bytes + kBoardLineDataBytes - 1) / kBoardLineDataBytes;
  auto take = [&](size_t line) {
    const size_t at = line * kBoardLineDataBytes;
    CopyLineData(out + at, slot.lines[line].data, bytes - at);
  };
  size_t line = 0;
  // With a core to spare and the peer not on ours, take lines as they land
  // for a while (a fruitless stretch of polls ends it).
  if (count > 0 && !YieldsAtOnce(members_[peer], round)) {
    for (uint32_t fruitless = 0; line < count && fruitless < kPollsBetweenChecks;) {
      if (slot.lines[line].stamp.load(std::memory_order_acquire) == stamp) {
        take(line++);
        fruitless = 0;
      } else {
        CpuPause();
        ++fruitless;
      }
    }
    if (line == count) return Status::Ok();
  }
  // The round word is stored after every line: once it is there, so are they.
  const uint8_t* ignored = nullptr;
  CHORUS_RETURN_IF_ERROR(Await(peer, round, bytes, abort, timeout_ms, &ignored));
  for (; line < count; ++line) {
    if (slot.lines[line].stamp.load(std::memory_order_acquire) != stamp) {
      return InternalError("shm board: ", members_[peer].label, " published round ", round, " without line ", line,
                           " of its ", bytes, "-byte payload (corrupt board)");
    }
    take(line);
  }
  return Status::Ok();
}

bool ShmBoard::YieldsAtOnce(const Member& member, uint64_t round) const {
  if (policy_.budget.spin.count() == 0) return true;
  const int peer_cpu = member.area->slots[(round - 1) & 1].cpu.load(std::memory_order_relaxed);
  return peer_cpu >= 0 && peer_cpu == ::sched_getcpu();
}

Status ShmBoard::Ready(int peer, uint64_t round, size_t bytes, const uint8_t** payload) const {
  const BoardSlot& slot = members_[peer].area->slots[round & 1];
  if (slot.bytes != bytes) {
    return InvalidUsage("shm board: ", members_[peer].label, " published ", slot.bytes, " bytes in round ", round,
                        " where rank ", rank_, " expects ", bytes, " (the ranks called different operations)");
  }
  *payload = slot.payload;
  TsanBoardAcquire(members_[peer].header, round);
  return Status::Ok();
}

void ShmBoard::SleepOnce(const BoardSlot& slot, uint64_t round, int64_t timeout_us) {
  const uint32_t word = own_header_->futex_word.load(std::memory_order_acquire);
  own_header_->sleeping.store(1, std::memory_order_seq_cst);
  if (slot.round.load(std::memory_order_seq_cst) != round && own_header_->closed.load(std::memory_order_acquire) == 0) {
    FutexWait(&own_header_->futex_word, word, timeout_us);
  }
  own_header_->sleeping.store(0, std::memory_order_relaxed);
}

Status ShmBoard::AwaitSlow(int peer, uint64_t round, size_t bytes, const std::atomic<bool>* abort, int timeout_ms,
                           const uint8_t** payload) {
  const Member& member = members_[peer];
  const BoardSlot& slot = member.area->slots[round & 1];
  auto published = [&] { return slot.round.load(std::memory_order_acquire) == round; };
  // Cores to spare: poll a stretch with no clock read (the peer is usually
  // a fraction of a microsecond away). Ranks outnumber CPUs, or the peer
  // last published from this very CPU (unpinned ranks that the scheduler
  // stacked on one core while others' work holds the rest): yield at once,
  // since the peer cannot run while we spin.
  const bool cores_to_spare = policy_.budget.spin.count() > 0;
  bool yielding = YieldsAtOnce(member, round);
  const Clock::duration spin =
      cores_to_spare ? std::max<Clock::duration>(policy_.budget.spin, kMinSpin) : Clock::duration::zero();
  const Clock::duration yield_until =
      cores_to_spare ? std::max<Clock::duration>(policy_.budget.yield_until, kMinYield) : policy_.budget.yield_until;
  uint32_t polls = yielding ? 1 : kPollsBetweenChecks;
  Clock::time_point start, end, next_liveness_check;
  bool clock_started = false;
  uint32_t yields = 0;
  while (true) {
    for (uint32_t i = 0; i < polls; ++i) {
      if (published()) return Ready(peer, round, bytes, payload);
      if (yielding) {
        ::sched_yield();
        ++yields;
      } else {
        CpuPause();
      }
    }
    const Clock::time_point now = Clock::now();
    if (!clock_started) {
      clock_started = true;
      start = now;
      end = now + std::chrono::milliseconds(timeout_ms);
      // Not at once: ProcessGone reads /proc (~15 us), and most waits that
      // get this far still end within microseconds.
      next_liveness_check = now + kLivenessInterval;
    }
    if (abort != nullptr && abort->load(std::memory_order_relaxed)) {
      return RemoteError("shm board: rank ", rank_, " aborted while waiting for ", member.label, " in round ", round);
    }
    if (own_header_->closed.load(std::memory_order_acquire) != 0) {
      return InvalidUsage("shm board: rank ", rank_, "'s shm transport was shut down");
    }
    // A peer closed with a notice for us (shm_layout.h): it concerns us even
    // though we wait for another member, who may never come.
    if (own_header_->notice.load(std::memory_order_acquire) != 0) {
      return RemoteError("shm board: rank ", rank_, " was sent a close notice while waiting for ", member.label,
                         " in round ", round);
    }
    // What the peer published before it shut down or exited still counts.
    if (member.header->closed.load(std::memory_order_acquire) != 0) {
      if (published()) return Ready(peer, round, bytes, payload);
      return RemoteError(member.label, " shut down its shm transport before publishing round ", round);
    }
    if (now >= next_liveness_check) {
      next_liveness_check = now + kLivenessInterval;
      if (member.pid != own_pid_ && ProcessGone(member.pid)) {
        if (published()) return Ready(peer, round, bytes, payload);
        return RemoteError(member.label, " died before publishing round ", round);
      }
    }
    if (now >= end) {
      return TimeoutError("shm board: rank ", rank_, " waited ", timeout_ms, " ms for ", member.label,
                          " to publish round ", round);
    }
    const Clock::duration waited = now - start;
    if (waited < spin && !yielding) {
      polls = kPollsBetweenChecks;
    } else if (waited < yield_until || yields < kYieldsBeforeSleep) {
      yielding = true;
      polls = 1;
    } else {
      const auto left = std::chrono::duration_cast<std::chrono::microseconds>(end - now);
      SleepOnce(slot, round, std::min(left, kSleepSlice).count() + 1);
      yielding = false;
      polls = 1;
    }
  }
}

}  // namespace shm
}  // namespace chorus
