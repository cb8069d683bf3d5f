// BoardAllReduce: how the `oneshot` allreduce runs when every rank of the
// communicator is on this host over shared memory and the buffer fits a
// board slot (transports/shm/shm_board.h). Each rank copies its input into
// its own slot, publishes it, and folds all slots in rank order,
// ((x_0 op x_1) op x_2) ..., straight into its output with the reduction
// kernels: the same folds as the oneshot schedule, so every rank, and the
// general path, get bit-identical results. No executor, no rings, no tags,
// no allocation.
//
// Every rank must take the same path for the same call (a rank on the
// board waits for slots that a rank in the executor never fills), so the
// communicator decides with UsesBoard from what is identical on all ranks:
// the call's shape, the algorithm choice (config or tuner, a function of
// the shape) and the communicator's hosts; never from the stream, timing or
// queue state. Launches keep the communicator's ticket order, and every
// board call is a round taken by every rank, which is what the board's
// double buffering needs.
#pragma once

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>

#include "base/status.h"
#include "core/operation.h"
#include "transports/shm/shm_board.h"

namespace chorus {

// Largest allreduce (bytes) that takes the board: the whole slot.
constexpr size_t kBoardAllReduceMaxBytes = shm::kBoardPayloadBytes;

class BoardAllReduce {
 public:
  explicit BoardAllReduce(shm::ShmBoard* board) : board_(board) {}

  // Whether an allreduce of this size can run here (the algorithm choice is
  // the caller's).
  bool Fits(size_t bytes) const { return bytes <= kBoardAllReduceMaxBytes; }

  // One allreduce (Sum/Prod/Min/Max, Avg and PreMulSum as the communicator
  // resolved them into `op`): one board round.
  Status Run(const Operation& op, const std::atomic<bool>& abort, int timeout_ms);
  // Board rounds so far (tests).
  uint64_t rounds() const { return round_; }

 private:
  shm::ShmBoard* board_;
  uint64_t round_ = 0;  // rounds so far; alike on every rank
};

// The board decision of the last few call shapes, so that a repeated call
// skips the algorithm choice: a few compares and no lock (one launch of a
// communicator runs at a time).
class BoardDecisions {
 public:
  // 1: the board, 0: the general path, -1: not seen recently.
  int Find(const Operation& op) const {
    for (const Entry& entry : entries_) {
      if (entry.known && entry.Matches(op)) return entry.board ? 1 : 0;
    }
    return -1;
  }
  void Remember(const Operation& op, bool board) {
    Entry& entry = entries_[next_];
    next_ = (next_ + 1) % entries_.size();
    entry = Entry{op.args.count, op.args.dtype, op.args.op, op.algorithm, op.args.in_place, true, board};
  }

 private:
  struct Entry {
    size_t count;
    DataType dtype;
    ReduceOp reduce;
    Algorithm requested;
    bool in_place;
    bool known;
    bool board;
    bool Matches(const Operation& op) const {
      return count == op.args.count && dtype == op.args.dtype && reduce == op.args.op && requested == op.algorithm &&
             in_place == op.args.in_place;
    }
  };
  std::array<Entry, 8> entries_{};
  size_t next_ = 0;
};

}  // namespace chorus
