#include "core/board_allreduce.h"

#include <algorithm>
#include <cstring>

#include "core/reduction_scaling.h"
#include "kernels/reduce.h"

namespace chorus {
namespace {

// Slices of a two-phase piece start on cache lines (every dtype's size
// divides 64), so no two ranks write one line of their outputs' slices.
constexpr size_t kSliceAlignBytes = 64;

struct Slice {
  size_t first = 0;  // element within the piece
  size_t count = 0;
};

Slice SliceOf(size_t piece_count, size_t element_bytes, int nranks, int rank) {
  const size_t unit = std::max<size_t>(1, kSliceAlignBytes / element_bytes);
  const size_t per_rank = (piece_count + nranks - 1) / nranks;
  const size_t stride = (per_rank + unit - 1) / unit * unit;
  Slice slice;
  slice.first = std::min(piece_count, stride * static_cast<size_t>(rank));
  slice.count = std::min(piece_count, slice.first + stride) - slice.first;
  return slice;
}

// dst[0, count) = every rank's operand folded in rank order, as the oneshot
// schedule folds ((x_0 op x_1) op x_2 ...), then divided for Avg.
// `operand(rank, scratch, &at)` points `at` at rank's `count` elements,
// waiting for them where it must; scratch is one of two buffers it may
// fill (the second operand's is reused for every rank after it).
template <typename Operand>
Status FoldOperands(const Operation& op, int nranks, uint8_t* dst, size_t count, uint8_t* scratch0,
                    uint8_t* scratch1, Operand&& operand) {
  const CollectiveArgs& args = op.args;
  const uint8_t* x = nullptr;
  const uint8_t* y = nullptr;
  CHORUS_RETURN_IF_ERROR(operand(0, scratch0, &x));
  CHORUS_RETURN_IF_ERROR(operand(1, scratch1, &y));
  ReduceKernel(dst, x, y, count, args.dtype, args.op);
  for (int rank = 2; rank < nranks; ++rank) {
    CHORUS_RETURN_IF_ERROR(operand(rank, scratch1, &y));
    ReduceKernel(dst, dst, y, count, args.dtype, args.op);
  }
  FinishResult(op, dst, count, nranks);
  return Status::Ok();
}

// Where this rank's operand of a one-shot fold can be read: its input
// itself (nullptr: no, its slot's copy), unless the input must be scaled
// first, or the fold could overwrite it before its turn: in place past
// ranks 0 and 1 (the kernels allow only exact aliasing, which ranks 0 and
// 1 have), or overlapping the output at another address.
const uint8_t* OwnInputIfReadable(const Operation& op, const uint8_t* input, const uint8_t* out, size_t bytes,
                                  int self) {
  const bool overlaps = input < out + bytes && out < input + bytes;
  if (op.premultiply || (overlaps && (self >= 2 || input != out))) return nullptr;
  return input;
}

}  // namespace

std::vector<NativeRange> BoardRanges(int nranks, bool forced, bool shares_cores) {
  std::vector<NativeRange> ranges;
  if (nranks < 2) return ranges;
  size_t rest = 0;  // the rows below start above this
  if (!forced && shares_cores) {
    // Ranks outnumber CPUs: every message of the executor's schedules costs
    // a context switch, and one or two board rounds per slot beat every
    // schedule and Open MPI (3-8 processes on 2 cores, docs/design-notes.md,
    // "Mid-size allreduce on one host"); one-shot up to kBoardOneShotMaxBytes,
    // two-phase above, where one-shot's (p-1)-fold reads cost more than a
    // round. Fewer than kBoardManyRanks ranks: the tuner's ring or hd
    // measured 10-25% faster past kBoardFewRanksMaxBytes.
    const size_t limit = nranks >= kBoardManyRanks ? kBoardAllReduceMaxBytes : kBoardFewRanksMaxBytes;
    ranges.push_back({0, std::min(kBoardOneShotMaxBytes, limit), Algorithm::kAuto, ToNativePlan(BoardPlan::kOneShot)});
    if (limit > kBoardOneShotMaxBytes) {
      ranges.push_back({kBoardOneShotMaxBytes + 1, limit, Algorithm::kAuto, ToNativePlan(BoardPlan::kTwoPhase)});
    }
    if (limit == kBoardAllReduceMaxBytes) return ranges;
    rest = limit + 1;
  }
  // A core per rank: the executor's pipelined schedules win from 16 KiB
  // (2 ranks: the board took 1.3-2.3x as long, forced oneshot or direct).
  const size_t last = shares_cores ? kBoardAllReduceMaxBytes : kBoardSpareCoresMaxBytes;
  ranges.push_back({rest, last, Algorithm::kOneShot, ToNativePlan(BoardPlan::kOneShot)});
  ranges.push_back({std::max(rest, kBoardTinyBytes + 1), last, Algorithm::kDirect, ToNativePlan(BoardPlan::kTwoPhase)});
  if (!forced && !shares_cores && nranks == 2) {
    ranges.push_back({kBoardSpareCoresMaxBytes + 1, kBoardReadInPlaceMaxBytes, Algorithm::kAuto,
                      ToNativePlan(BoardPlan::kReadInPlace)});
  }
  return ranges;
}

BoardPlan ChooseBoardPlan(size_t bytes, int nranks, Algorithm chosen, bool forced, bool shares_cores) {
  const std::vector<NativeRange> ranges = BoardRanges(nranks, forced, shares_cores);
  const NativeRange* range = FindNativeRange(ranges, bytes, chosen);
  return range != nullptr ? ToBoardPlan(range->plan) : BoardPlan::kNone;
}

const char* BoardAllReduce::PlanName(NativePlan plan) const {
  switch (ToBoardPlan(plan)) {
    case BoardPlan::kOneShot: return "board-oneshot";
    case BoardPlan::kTwoPhase: return "board-twophase";
    case BoardPlan::kReadInPlace: return "board-read-in-place";
    case BoardPlan::kNone: break;
  }
  return "none";
}

std::vector<NativeRange> BoardAllReduce::Ranges(Collective coll, const NativeRangeInputs& inputs) const {
  if (coll != Collective::kAllReduce) return {};
  return BoardRanges(inputs.nranks, inputs.forced, inputs.shares_cores);
}

uint64_t BoardRoundsFor(size_t count, size_t element_bytes, BoardPlan plan) {
  if (plan == BoardPlan::kNone) return 0;
  if (plan == BoardPlan::kReadInPlace) return 2;
  const size_t piece = shm::ShmBoard::capacity() / element_bytes;
  const uint64_t pieces = count == 0 ? 1 : (count + piece - 1) / piece;
  return plan == BoardPlan::kTwoPhase ? 2 * pieces : pieces;
}

void BoardAllReduce::PublishInput(const Operation& op, uint64_t round, size_t first, size_t count) {
  const CollectiveArgs& args = op.args;
  const size_t size = DataTypeSize(args.dtype);
  uint8_t* outbox = board_->OutboxFor(round);
  const uint8_t* input = static_cast<const uint8_t*>(op.send) + first * size;
  ScaledInput(op, outbox, input, count);
  board_->Publish(round, count * size);
}

Status BoardAllReduce::OneShotPiece(const Operation& op, size_t first, size_t count, const std::atomic<bool>& abort,
                                    int timeout_ms) {
  const CollectiveArgs& args = op.args;
  const size_t bytes = count * DataTypeSize(args.dtype);
  const uint64_t round = ++round_;
  if (UsesLines(bytes)) return OneShotLines(op, first, count, round, abort, timeout_ms);
  PublishInput(op, round, first, count);
  const size_t size = DataTypeSize(args.dtype);
  uint8_t* out = static_cast<uint8_t*>(op.recv) + first * size;
  // Our operand from the input where it may be, not from the slot: the
  // peers take the slot's line to read the round, and a load would wait for
  // it to come back (2 ranks, 8 B: 0.36 against 0.30 us per call).
  const uint8_t* own =
      OwnInputIfReadable(op, static_cast<const uint8_t*>(op.send) + first * size, out, bytes, board_->rank());
  return FoldInRankOrder(op, out, 0, count, round, bytes, abort, timeout_ms, own);
}

bool BoardAllReduce::UsesLines(size_t bytes) const {
  // Up to the slot's first line the payload travels with the round word.
  return bytes > shm::kBoardInlineBytes && bytes <= LinesMaxBytes(board_->nranks(), board_->shares_cores());
}

Status BoardAllReduce::OneShotLines(const Operation& op, size_t first, size_t count, uint64_t round,
                                    const std::atomic<bool>& abort, int timeout_ms) {
  const CollectiveArgs& args = op.args;
  const size_t size = DataTypeSize(args.dtype);
  const size_t bytes = count * size;
  const uint8_t* input = static_cast<const uint8_t*>(op.send) + first * size;
  uint8_t* out = static_cast<uint8_t*>(op.recv) + first * size;
  const int self = board_->rank();
  // This rank's operand is its input itself where it may be, else a copy.
  alignas(64) uint8_t own[shm::kBoardLinesMaxBytes];
  const uint8_t* mine = OwnInputIfReadable(op, input, out, bytes, self);
  if (mine == nullptr) {
    ScaledInput(op, own, input, count);
    mine = own;
  }
  board_->PublishLines(round, mine, bytes);
  alignas(64) uint8_t a[shm::kBoardLinesMaxBytes];
  alignas(64) uint8_t b[shm::kBoardLinesMaxBytes];
  return FoldOperands(op, board_->nranks(), out, count, a, b,
                      [&](int rank, uint8_t* scratch, const uint8_t** at) -> Status {
                        if (rank == self) {
                          *at = mine;
                          return Status::Ok();
                        }
                        *at = scratch;
                        Status status = board_->AwaitLines(rank, round, bytes, &abort, timeout_ms, scratch);
                        if (!status.ok()) stuck_peer_ = rank;
                        return status;
                      });
}

Status BoardAllReduce::FoldInRankOrder(const Operation& op, uint8_t* dst, size_t offset, size_t count, uint64_t round,
                                       size_t round_bytes, const std::atomic<bool>& abort, int timeout_ms,
                                       const uint8_t* own) {
  return FoldOperands(op, board_->nranks(), dst, count, nullptr, nullptr,
                      [&](int rank, uint8_t*, const uint8_t** at) -> Status {
                        if (own != nullptr && rank == board_->rank()) {
                          *at = own;
                          return Status::Ok();
                        }
                        const uint8_t* payload = nullptr;
                        CHORUS_RETURN_IF_ERROR(AwaitPeer(rank, round, round_bytes, &abort, timeout_ms, &payload));
                        *at = payload + offset;
                        return Status::Ok();
                      });
}

Status BoardAllReduce::TwoPhasePiece(const Operation& op, size_t first, size_t count, const std::atomic<bool>& abort,
                                     int timeout_ms) {
  const CollectiveArgs& args = op.args;
  const size_t size = DataTypeSize(args.dtype);
  const int nranks = board_->nranks();
  const size_t bytes = count * size;
  // Round 1: the piece; fold this rank's slice of it from every slot into
  // this rank's round-2 slot. That slot still holds round 0 (two rounds
  // back), which a peer may be reading until it publishes round 1: wait for
  // every peer first, then fold.
  const uint64_t inputs = ++round_;
  PublishInput(op, inputs, first, count);
  const Slice mine = SliceOf(count, size, nranks, board_->rank());
  const uint8_t* next = nullptr;
  for (int rank = 0; rank < nranks; ++rank) {
    CHORUS_RETURN_IF_ERROR(AwaitPeer(rank, inputs, bytes, &abort, timeout_ms, &next));
  }
  const uint64_t folded = ++round_;
  uint8_t* fold = board_->OutboxFor(folded);
  CHORUS_RETURN_IF_ERROR(FoldInRankOrder(op, fold, mine.first * size, mine.count, inputs, bytes, abort, timeout_ms));
  // Round 2: every rank's folded slice, copied into place. (This rank's
  // round-1 reads all came before it publishes round 2, which is what lets
  // peers overwrite their round-1 slots afterwards.)
  board_->Publish(folded, mine.count * size);
  uint8_t* out = static_cast<uint8_t*>(op.recv) + first * size;
  for (int step = 0; step < nranks; ++step) {
    const int rank = (board_->rank() + step) % nranks;  // own slice first: no wait
    const Slice slice = SliceOf(count, size, nranks, rank);
    const uint8_t* payload = fold;
    if (rank != board_->rank()) {
      CHORUS_RETURN_IF_ERROR(AwaitPeer(rank, folded, slice.count * size, &abort, timeout_ms, &payload));
    }
    std::memcpy(out + slice.first * size, payload, slice.count * size);
  }
  return Status::Ok();
}

Status BoardAllReduce::ShareRound(const uint8_t* mine, size_t bytes, uint8_t* all, const std::atomic<bool>& abort,
                                  int timeout_ms) {
  if (bytes > shm::ShmBoard::capacity()) return InternalError("board round of ", bytes, " bytes exceeds a slot");
  const uint64_t round = ++round_;
  std::memcpy(board_->OutboxFor(round), mine, bytes);
  board_->Publish(round, bytes);
  for (int rank = 0; rank < board_->nranks(); ++rank) {
    const uint8_t* payload = nullptr;
    CHORUS_RETURN_IF_ERROR(AwaitPeer(rank, round, bytes, &abort, timeout_ms, &payload));
    std::memcpy(all + static_cast<size_t>(rank) * bytes, payload, bytes);
  }
  return Status::Ok();
}

Status BoardAllReduce::AwaitPeer(int peer, uint64_t round, size_t bytes, const std::atomic<bool>* abort,
                                 int timeout_ms, const uint8_t** payload) {
  Status status = board_->Await(peer, round, bytes, abort, timeout_ms, payload);
  if (!status.ok()) stuck_peer_ = peer;
  return status;
}

// Round 1 of a read in place: where a rank's input is (an address in its
// process), and whether its peers can read it there.
struct InPlaceInput {
  uint64_t address;
  uint64_t readable;
};

Status BoardAllReduce::ReadInPlace(const Operation& op, const std::atomic<bool>& abort, int timeout_ms,
                                   bool* served) {
  const CollectiveArgs& args = op.args;
  const size_t bytes = args.count * DataTypeSize(args.dtype);
  const auto* input = static_cast<const uint8_t*>(op.send);
  auto* out = static_cast<uint8_t*>(op.recv);
  const int self = board_->rank();
  const int nranks = board_->nranks();
  // In place, a rank's output would overwrite the input its peer reads.
  const bool overlaps = input < out + bytes && out < input + bytes;
  const InPlaceInput mine = {reinterpret_cast<uintptr_t>(input),
                             !op.premultiply && !overlaps && board_->PeersReadInPlace(input, bytes) ? 1u : 0u};
  const uint64_t announced = ++round_;
  std::memcpy(board_->OutboxFor(announced), &mine, sizeof(mine));
  board_->Publish(announced, sizeof(mine));
  auto announcement = [&](int rank, InPlaceInput* theirs) -> Status {
    const uint8_t* payload = nullptr;
    CHORUS_RETURN_IF_ERROR(AwaitPeer(rank, announced, sizeof(InPlaceInput), &abort, timeout_ms, &payload));
    std::memcpy(theirs, payload, sizeof(*theirs));
    return Status::Ok();
  };
  bool every = true;
  for (int rank = 0; rank < nranks; ++rank) {
    InPlaceInput theirs = {};
    CHORUS_RETURN_IF_ERROR(announcement(rank, &theirs));
    every &= theirs.readable != 0;
  }
  *served = every;
  if (!every) return Status::Ok();
  // The announcements stay in the slots until round announced + 2, which
  // no peer publishes before this rank's round 2.
  Status folded = FoldOperands(op, nranks, out, args.count, nullptr, nullptr,
                               [&](int rank, uint8_t*, const uint8_t** at) -> Status {
                                 if (rank == self) {
                                   *at = input;
                                   return Status::Ok();
                                 }
                                 InPlaceInput theirs = {};
                                 CHORUS_RETURN_IF_ERROR(announcement(rank, &theirs));
                                 *at = board_->PeerMemory(rank, theirs.address, bytes);
                                 if (*at != nullptr) return Status::Ok();
                                 return InternalError("rank ", rank, "'s input of ", bytes,
                                                      " bytes is not readable here although it said so");
                               });
  // Round 2, whatever the fold did: no rank returns (its caller may then
  // change its input) while a peer still reads it.
  const uint64_t done = ++round_;
  board_->Publish(done, 0);
  for (int rank = 0; rank < nranks; ++rank) {
    const uint8_t* payload = nullptr;
    if (rank != self) CHORUS_RETURN_IF_ERROR(AwaitPeer(rank, done, 0, &abort, timeout_ms, &payload));
  }
  return folded;
}

Status BoardAllReduce::Run(const Operation& op, BoardPlan plan, const std::atomic<bool>& abort, int timeout_ms,
                           bool* served) {
  stuck_peer_ = -1;
  *served = true;
  if (plan == BoardPlan::kReadInPlace) return ReadInPlace(op, abort, timeout_ms, served);
  const CollectiveArgs& args = op.args;
  const size_t piece = shm::ShmBoard::capacity() / DataTypeSize(args.dtype);
  size_t first = 0;
  do {
    const size_t count = std::min(piece, args.count - first);
    if (plan == BoardPlan::kTwoPhase) {
      CHORUS_RETURN_IF_ERROR(TwoPhasePiece(op, first, count, abort, timeout_ms));
    } else {
      CHORUS_RETURN_IF_ERROR(OneShotPiece(op, first, count, abort, timeout_ms));
    }
    first += count;
  } while (first < args.count);
  return Status::Ok();
}

}  // namespace chorus
