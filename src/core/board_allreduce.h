// BoardAllReduce: how the `oneshot` and `direct` allreduces run when every
// rank of the communicator is on this host over shared memory and the
// buffer is at most kBoardAllReduceMaxBytes (transports/shm/shm_board.h).
// The buffer goes through the board in pieces of at most one slot.
//   one-shot (one round per piece): each rank copies its piece into its own
//     slot, publishes it, and folds all slots in rank order,
//     ((x_0 op x_1) op x_2) ..., straight into its output. Pieces of 49
//     bytes to LinesMaxBytes(p) go in the slot's line mode (shm_layout.h):
//     each peer's lines are taken as they land.
//   two-phase (two rounds per piece, the board form of `direct`): each rank
//     publishes its piece, folds its 1/p slice of it from all slots in rank
//     order into its next slot, publishes that, and copies every rank's
//     folded slice into its output: 2 (p-1)/p of the piece read per rank
//     instead of (p-1) pieces, for one more round.
//   read in place (two ranks with a core each, 8 KiB-64 MiB): each rank
//     announces where its input is and whether its peer can read it there
//     (a rank of the same process always; another process when the input
//     is a block of this process's shared heap that the peer mapped,
//     base/shared_heap.h); when both can, each folds both inputs, read in
//     place, straight into its output, and a second round says it is done
//     reading (its peer may then return and change its input). When either
//     cannot (ordinary memory of another process, in place, PreMulSum),
//     both run the call's schedule after the first round.
// All fold every element in rank order, as the oneshot schedule does, so
// every rank, every plan and the general path get bit-identical results.
// No executor, no rings, no tags, no allocation.
//
// Every rank must take the same path for the same call (a rank on the
// board waits for slots that a rank in the executor never fills), so the
// communicator's selection table decides with BoardRanges from what is
// identical on all ranks: the call's shape, the algorithm choice (config or tuner, a
// function of the shape and of a model every rank shares), the
// communicator's hosts and the transport's shares_cores (decided alike on
// every rank of a host); never from the stream, timing or queue state.
// Launches keep the communicator's ticket order, and every board call takes
// the same rounds on every rank, which is what the board's double buffering
// needs.
#pragma once

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "algorithms/algorithm.h"
#include "base/status.h"
#include "core/native_provider.h"
#include "core/operation.h"
#include "transports/shm/shm_board.h"

namespace chorus {

// Largest allreduce (bytes) that takes the board, where ranks share cores
// (docs/design-notes.md, "Mid-size allreduce on one host"): 4 slots.
constexpr size_t kBoardAllReduceMaxBytes = 1024 * 1024;
// Largest with a core per rank.
constexpr size_t kBoardSpareCoresMaxBytes = 8 * 1024;
// Up to here a `direct` choice stays in the executor (the board's
// two-phase needs more than a few cache lines per slice to pay its round).
constexpr size_t kBoardTinyBytes = 4096;
// Where ranks share cores and the tuner chose: one-shot up to here,
// two-phase above (measured crossover 16-64 KiB on 4 and 8 ranks).
constexpr size_t kBoardOneShotMaxBytes = 32 * 1024;
// Where ranks share cores and the tuner chose: below kBoardManyRanks ranks
// the board only up to kBoardFewRanksMaxBytes (then the tuner's choice, as
// with a core per rank).
constexpr int kBoardManyRanks = 6;
constexpr size_t kBoardFewRanksMaxBytes = 64 * 1024;
// Two ranks with a core each, past kBoardSpareCoresMaxBytes: read in place
// up to here (as far as measured). Each rank reads all of its peer's input
// instead of half of it twice, with no second phase waiting on the peer's
// fresh output: 2 processes, inputs in the shared heap, 2.3-8.4x Open MPI
// from 16 KiB to 64 MiB against 1.3-2.0x by the ring; ranks as threads
// rewriting their inputs before every call (every line fresh in the
// writer's cache), 128 KiB 12.1 against 18.3 us, 32 MiB 5.5 against 5.9 ms.
constexpr size_t kBoardReadInPlaceMaxBytes = 64 * 1024 * 1024;

// The board's plans; as a NativePlan (core/native_provider.h), their values.
enum class BoardPlan : uint8_t { kNone = kNoNativePlan, kOneShot, kTwoPhase, kReadInPlace };
constexpr NativePlan ToNativePlan(BoardPlan plan) { return static_cast<NativePlan>(plan); }
constexpr BoardPlan ToBoardPlan(NativePlan plan) {
  return plan == ToNativePlan(BoardPlan::kOneShot)        ? BoardPlan::kOneShot
         : plan == ToNativePlan(BoardPlan::kTwoPhase)     ? BoardPlan::kTwoPhase
         : plan == ToNativePlan(BoardPlan::kReadInPlace)  ? BoardPlan::kReadInPlace
                                                          : BoardPlan::kNone;
}

// The board's ranges on `nranks` ranks (shares_cores: they outnumber the
// host's CPUs; forced: the algorithm was pinned by the call or
// CHORUS_ALGO), in order: the first that matches decides. Where ranks
// share cores and nothing was forced, the board runs whatever the schedule
// would be (one-shot up to kBoardOneShotMaxBytes, two-phase above; below
// kBoardManyRanks ranks only up to kBoardFewRanksMaxBytes), which measured
// faster than every schedule there; otherwise a resolved oneshot runs
// one-shot and direct two-phase (above kBoardTinyBytes), with a core per
// rank only up to kBoardSpareCoresMaxBytes. A pure function of what every
// rank shares.
std::vector<NativeRange> BoardRanges(int nranks, bool forced, bool shares_cores);
// Whether and how an allreduce of `bytes` whose schedule resolved to
// `chosen` runs on the board: the first of BoardRanges that matches.
BoardPlan ChooseBoardPlan(size_t bytes, int nranks, Algorithm chosen, bool forced, bool shares_cores);
// Board rounds one allreduce of `count` elements of `element_bytes` takes
// (kReadInPlace: when served; a call it hands to the schedule takes 1).
uint64_t BoardRoundsFor(size_t count, size_t element_bytes, BoardPlan plan);

// The board as the selection table's native provider: allreduce only, in
// BoardRanges.
class BoardAllReduce final : public NativeProvider {
 public:
  explicit BoardAllReduce(shm::ShmBoard* board) : board_(board) {}

  // One allreduce (Sum/Prod/Min/Max, Avg and PreMulSum as the communicator
  // resolved them into `op`) by `plan` (not kNone); *served false: every
  // rank runs the schedule instead (kReadInPlace only).
  Status Run(const Operation& op, BoardPlan plan, const std::atomic<bool>& abort, int timeout_ms, bool* served);

  // NativeProvider.
  const char* name() const override { return "board"; }
  const char* PlanName(NativePlan plan) const override;
  std::vector<NativeRange> Ranges(Collective coll, const NativeRangeInputs& inputs) const override;
  Status Run(const Operation& op, NativePlan plan, const std::atomic<bool>& abort, int timeout_ms,
             bool* served) override {
    return Run(op, ToBoardPlan(plan), abort, timeout_ms, served);
  }
  // The peer the last failed Run or ShareRound was waiting for (-1: none).
  int stuck_peer() const override { return stuck_peer_; }
  // One round in which every rank publishes `bytes` (at most a slot) and
  // copies every rank's payload, in rank order, into `all` (CHORUS_CHECK's
  // exchange, core/call_check.h). Every rank must take it.
  Status ShareRound(const uint8_t* mine, size_t bytes, uint8_t* all, const std::atomic<bool>& abort, int timeout_ms);
  // Board rounds so far (tests).
  uint64_t rounds() const { return round_; }
  // The largest piece that goes in line mode on a board of `nranks`: the
  // line area's 4 KiB for two ranks, 2 KiB beyond; none where ranks share
  // cores. Lines pay when a reader takes them as they land, which a rank
  // that yields at once does not: it waits for the round word and then
  // copies every line out before folding, where the slot is folded in
  // place. Measured on 2 cores (all_reduce_perf, interleaved): 2 processes
  // at 4 KiB 1.34-1.47 us by lines against 1.58-1.72 by the contiguous
  // slot; 4 processes sharing the cores at 1 KiB 3.2-4.4 against 2.7-4.2
  // us, at 2 KiB 4.1-5.9 against 3.8-4.3.
  static size_t LinesMaxBytes(int nranks, bool shares_cores) {
    if (shares_cores) return 0;
    return nranks == 2 ? shm::kBoardLinesMaxBytes : 2048;
  }

 private:
  Status OneShotPiece(const Operation& op, size_t first, size_t count, const std::atomic<bool>& abort,
                      int timeout_ms);
  // Line mode (shm_layout.h) for pieces past the slot's first line and up
  // to LinesMaxBytes(nranks): the same fold, the operands taken line by
  // line.
  bool UsesLines(size_t bytes) const;
  Status OneShotLines(const Operation& op, size_t first, size_t count, uint64_t round, const std::atomic<bool>& abort,
                      int timeout_ms);
  Status TwoPhasePiece(const Operation& op, size_t first, size_t count, const std::atomic<bool>& abort,
                       int timeout_ms);
  Status ReadInPlace(const Operation& op, const std::atomic<bool>& abort, int timeout_ms, bool* served);
  // Copies (PreMulSum: scales) input elements [first, first + count) into
  // this rank's slot of `round` and publishes it.
  void PublishInput(const Operation& op, uint64_t round, size_t first, size_t count);
  // dst[0, count) = the elements at byte `offset` of every rank's slot of
  // `round` (each `round_bytes` long), folded in rank order as the oneshot
  // schedule folds (dst = first op second), then divided for Avg. `own`:
  // this rank's operand, read there instead of its slot (nullptr: the slot).
  Status FoldInRankOrder(const Operation& op, uint8_t* dst, size_t offset, size_t count, uint64_t round,
                         size_t round_bytes, const std::atomic<bool>& abort, int timeout_ms,
                         const uint8_t* own = nullptr);

  // board_->Await, noting `peer` in stuck_peer_ when it fails.
  Status AwaitPeer(int peer, uint64_t round, size_t bytes, const std::atomic<bool>* abort, int timeout_ms,
                   const uint8_t** payload);

  shm::ShmBoard* board_;
  uint64_t round_ = 0;  // rounds so far; alike on every rank
  int stuck_peer_ = -1;
};

}  // namespace chorus
