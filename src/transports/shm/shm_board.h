// ShmBoard: every local rank publishes a payload of up to a slot per round
// in a slot of its own segment, and every local peer reads it there, in
// place: one copy in, no copy out, no ring, no per-pair state. Sizes may
// differ per rank within a round (the reader names the size it expects).
// Transports know nothing of collectives; a round is just a number the
// caller counts.
//
// Rounds. The caller numbers rounds 1, 2, 3, ... alike on every rank, and
// EVERY rank of the board takes part in EVERY round (publishes once, may
// read any peer). Round r lives in slots[r % 2]. The two slots need no
// acknowledgements: a rank that starts round r+2 (overwriting its round r
// slot) has finished round r+1, so it has seen every peer's round r+1 slot;
// a peer publishes round r+1 only after it finished round r, i.e. after its
// last read of our round r slot. A reader therefore never sees its round
// overwritten while it reads, and a slot holding a round != r means "not
// yet" (it holds r - 2 or nothing).
//
// Waiting (Await) polls the peer's round with no clock read until it has
// polled kPollsBetweenChecks times; then it checks, every so often, the
// deadline, the abort flag, its own shutdown, a close notice sent to it, the
// peer's shutdown flag and (from 5 ms on) whether the peer's process is gone. It spins, then
// yields, then sleeps on the futex of its own segment, which Publish bumps
// when a peer says it sleeps: with a core per rank longer than the
// transport's wait policy says (shm_board.cc), and when ranks outnumber
// CPUs, or the peer last published from this very CPU, it never spins.
//
// Threading: Publish and Await from one thread at a time (the rank's
// launch); the board is owned by its ShmTransport and valid while it lives.
#pragma once

#include <sys/types.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "base/shared_heap.h"
#include "base/status.h"
#include "transports/shm/shm_layout.h"
#include "transports/shm/shm_peer_heap.h"
#include "transports/shm/shm_tsan.h"
#include "transports/shm/shm_wait_policy.h"

namespace chorus {
namespace shm {

class ShmBoard {
 public:
  // One local rank as seen from here (for this rank: its own segment).
  struct Member {
    BoardArea* area = nullptr;
    SegmentHeader* header = nullptr;
    pid_t pid = 0;
    std::string label;  // "peer 3 (pid 1234)"
    // Reading its buffers in place (ReadablePeerMemory): its shared heap
    // mapped here (another process; null: not mapped), and whether it
    // mapped ours. A rank of this process reads any buffer of ours.
    const PeerHeapView* heap = nullptr;
    bool maps_our_heap = false;
  };
  // Polls between two reads of the clock (and of the flags) while spinning.
  static constexpr uint32_t kPollsBetweenChecks = 64;

  // `own_heap`: this process's shared heap, as published in our segment
  // (null: none).
  ShmBoard(int rank, std::vector<Member> members, WaitPolicy policy, const SharedHeap* own_heap = nullptr);

  int rank() const { return rank_; }
  int nranks() const { return nranks_; }
  // Ranks outnumber the CPUs they may run on (the transport's shares_cores,
  // alike on every rank of the host): waits yield instead of spinning.
  bool shares_cores() const { return policy_.yield_when_idle; }
  static constexpr size_t capacity() { return kBoardPayloadBytes; }

  // Where this rank writes its payload for `round` before Publish.
  uint8_t* OutboxFor(uint64_t round) { return own_area_->slots[round & 1].payload; }
  // Makes this rank's `bytes`-byte payload of `round` visible (release) and
  // wakes peers that sleep waiting for it.
  void Publish(uint64_t round, size_t bytes);

  // Line mode (shm_layout.h), for payloads of up to kBoardLinesMaxBytes;
  // every rank of a round must use the same mode (callers decide by size).
  // Copies `bytes` from `src` into this rank's lines of `round`, each
  // stamped after its data, then publishes as Publish does (the round word
  // last: sleepers, the size check and the slow path go by it).
  void PublishLines(uint64_t round, const void* src, size_t bytes);
  // Copies `peer`'s line-mode payload of `round` into `out` line by line as
  // the lines land; past a short spin, waits as Await does (and fails as
  // it does).
  Status AwaitLines(int peer, uint64_t round, size_t bytes, const std::atomic<bool>* abort, int timeout_ms,
                    uint8_t* out);

  // Whether every peer reads [pointer, pointer + bytes) of this rank in
  // place: peers in this process always; the others when it lies in this
  // process's shared heap and they mapped it.
  bool PeersReadInPlace(const void* pointer, size_t bytes) const;
  // Where `peer`'s [address, address + bytes) (an address in its process)
  // is readable here, or null: itself for a rank of this process, through
  // its shared heap mapped here for another.
  const uint8_t* PeerMemory(int peer, uint64_t address, size_t bytes) const;

  // Waits until `peer`'s slot holds `round` and points *payload at it: valid
  // until the peer publishes round + 2, which it cannot before this rank
  // publishes round + 1 (the invariant above). Fails when
  // the peer published another size than `bytes`, shut down or died first,
  // this rank's transport shut down, *abort became true, or timeout_ms
  // passed (the clock starts at the first check, not at the call).
  Status Await(int peer, uint64_t round, size_t bytes, const std::atomic<bool>* abort, int timeout_ms,
               const uint8_t** payload) {
    const BoardSlot& slot = members_[peer].area->slots[round & 1];
    if (slot.round.load(std::memory_order_acquire) == round && slot.bytes == bytes) {
      *payload = slot.payload;
      TsanBoardAcquire(members_[peer].header, round);
      return Status::Ok();
    }
    return AwaitSlow(peer, round, bytes, abort, timeout_ms, payload);
  }

 private:
  Status AwaitSlow(int peer, uint64_t round, size_t bytes, const std::atomic<bool>* abort, int timeout_ms,
                   const uint8_t** payload);
  Status Ready(int peer, uint64_t round, size_t bytes, const uint8_t** payload) const;
  // A wait for `member`'s `round` that should not spin: ranks outnumber
  // CPUs, or the peer last published from this very CPU.
  bool YieldsAtOnce(const Member& member, uint64_t round) const;
  void SleepOnce(const BoardSlot& slot, uint64_t round, int64_t timeout_us);

  const int rank_;
  const int nranks_;
  std::vector<Member> members_;  // by rank
  BoardArea* const own_area_;
  SegmentHeader* const own_header_;
  const pid_t own_pid_;
  const WaitPolicy policy_;
  const SharedHeap* const own_heap_;
};

}  // namespace shm
}  // namespace chorus
