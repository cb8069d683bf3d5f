#include "core/board_allreduce.h"

#include <cstring>

#include "kernels/reduce.h"

namespace chorus {

Status BoardAllReduce::Run(const Operation& op, const std::atomic<bool>& abort, int timeout_ms) {
  const CollectiveArgs& args = op.args;
  const size_t bytes = args.count * DataTypeSize(args.dtype);
  const uint64_t round = ++round_;
  uint8_t* outbox = board_->OutboxFor(round);
  if (op.premultiply) {
    ScaleKernel(outbox, op.send, args.count, args.dtype, op.scalar);
  } else {
    std::memcpy(outbox, op.send, bytes);
  }
  board_->Publish(round, bytes);

  // In rank order, as the oneshot schedule folds (dst = first op second).
  const uint8_t* first = nullptr;
  const uint8_t* next = nullptr;
  CHORUS_RETURN_IF_ERROR(board_->Await(0, round, bytes, &abort, timeout_ms, &first));
  CHORUS_RETURN_IF_ERROR(board_->Await(1, round, bytes, &abort, timeout_ms, &next));
  ReduceKernel(op.recv, first, next, args.count, args.dtype, args.op);
  for (int rank = 2; rank < board_->nranks(); ++rank) {
    CHORUS_RETURN_IF_ERROR(board_->Await(rank, round, bytes, &abort, timeout_ms, &next));
    ReduceKernel(op.recv, op.recv, next, args.count, args.dtype, args.op);
  }
  if (op.average) DivideKernel(op.recv, args.count, args.dtype, board_->nranks());
  return Status::Ok();
}

}  // namespace chorus
