#include "lossy/compression_stages.h"

namespace chorus {

Status StagedCall::RunOrEnqueue(std::function<void()> work, bool skip_on_failure) {
  chorusComm* comm = comm_;
  if (stream_ == nullptr) {
    work();
    return Status::Ok();
  }
  // Pending work keeps the communicator alive until it ran (Destroy waits).
  comm->impl->BeginPending();
  stream_->stream.Enqueue([comm, skip_on_failure, work = std::move(work)] {
    Status status = comm->impl->async_error();
    if (status.ok() || !skip_on_failure) work();
    comm->impl->EndPending();
    return skip_on_failure ? status : Status::Ok();
  }, comm->impl->cores_shared());
  return Status::Ok();
}

Status StagedCall::Before(std::function<void()> work) { return RunOrEnqueue(std::move(work), false); }

Status StagedCall::After(std::function<void()> work) { return RunOrEnqueue(std::move(work), true); }

Status StagedCall::Launch(const std::vector<Operation>& ops) {
  std::vector<PendingCall> calls;
  calls.reserve(ops.size());
  for (const Operation& op : ops) calls.push_back(PendingCall{comm_, stream_, op});
  return LaunchTogether(calls);
}

Operation InternalCollective(chorusComm* comm, Collective coll, size_t count, DataType dtype, const void* send,
                             void* recv) {
  Operation op;
  op.kind = Operation::Kind::kCollective;
  op.args.coll = coll;
  op.args.count = count;
  op.args.dtype = dtype;
  op.args.op = ReduceOp::kSum;
  op.args.nranks = comm->impl->nranks();
  op.args.rank = comm->impl->rank();
  op.args.in_place = coll == Collective::kAllReduce && send == recv;
  op.send = send;
  op.recv = recv;
  return op;
}

}  // namespace chorus
