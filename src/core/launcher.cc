#include "core/launcher.h"

#include <thread>

namespace chorus {
namespace {

// The calling thread's group. Group semantics are per thread by definition
// (as in NCCL), so this is thread-local, not shared state.
struct GroupState {
  int depth = 0;
  std::vector<PendingCall> calls;
};

GroupState& ThisThreadGroup() {
  thread_local GroupState group;
  return group;
}

struct CommLaunch {
  chorusComm* comm = nullptr;
  uint64_t ticket = 0;
  std::vector<Operation> ops;
};

// Runs `count` operations of `comm` under `ticket` and ends the pending
// mark that was taken when the ticket was issued.
Status RunOnComm(chorusComm* comm, uint64_t ticket, const Operation* ops, size_t count) {
  Status status = comm->impl->Launch(ticket, ops, count);
  if (!status.ok()) Report(comm, status);
  comm->impl->EndPending();
  return status;
}

Status RunLaunch(CommLaunch& launch) {
  return RunOnComm(launch.comm, launch.ticket, launch.ops.data(), launch.ops.size());
}

// Runs the launches of one stream: concurrently when several communicators
// take part (one thread may drive all ranks of a process, NCCL-style).
Status RunLaunches(std::vector<CommLaunch>& launches) {
  if (launches.size() == 1) return RunLaunch(launches[0]);
  std::vector<Status> results(launches.size());
  std::vector<std::thread> threads;
  threads.reserve(launches.size());
  for (size_t i = 0; i < launches.size(); ++i) {
    threads.emplace_back([&, i] { results[i] = RunLaunch(launches[i]); });
  }
  for (std::thread& thread : threads) thread.join();
  for (const Status& status : results) {
    if (!status.ok()) return status;
  }
  return Status::Ok();
}

}  // namespace

Status LaunchTogether(const std::vector<PendingCall>& calls) {
  // Partition by stream, then by communicator, keeping call order.
  std::vector<chorusStream*> streams;
  for (const PendingCall& call : calls) {
    bool seen = false;
    for (chorusStream* stream : streams) seen |= stream == call.stream;
    if (!seen) streams.push_back(call.stream);
  }
  Status first;
  for (chorusStream* stream : streams) {
    auto launches = std::make_shared<std::vector<CommLaunch>>();
    for (const PendingCall& call : calls) {
      if (call.stream != stream) continue;
      CommLaunch* target = nullptr;
      for (CommLaunch& launch : *launches) {
        if (launch.comm == call.comm) target = &launch;
      }
      if (target == nullptr) {
        launches->push_back(CommLaunch{call.comm, call.comm->impl->IssueTicket(), {}});
        call.comm->impl->BeginPending();
        target = &launches->back();
      }
      target->ops.push_back(call.op);
      target->ops.back().grouped = true;
      if (stream != nullptr && call.comm->impl->records()) target->ops.back().enqueued_ns = FlightRecorder::NowNs();
    }
    if (stream == nullptr) {
      Status status = RunLaunches(*launches);
      if (first.ok()) first = status;
    } else {
      bool cores_shared = false;  // any of its communicators' ranks outnumber the CPUs
      for (const CommLaunch& launch : *launches) {
        cores_shared |= launch.comm->impl->cores_shared();
        stream->stream.PlaceWorker(launch.comm->impl->helper_cpus());
      }
      stream->stream.Enqueue([launches] { return RunLaunches(*launches); }, cores_shared);
    }
  }
  return first;
}

Status Submit(const PendingCall& call) {
  GroupState& group = ThisThreadGroup();
  if (group.depth > 0) {
    group.calls.push_back(call);
    return Status::Ok();
  }
  // A single call is its own launch: no partitioning, and nothing allocated
  // on the NULL stream (the small-message latency path).
  chorusComm* comm = call.comm;
  const uint64_t ticket = comm->impl->IssueTicket();
  comm->impl->BeginPending();
  if (call.stream == nullptr) return RunOnComm(comm, ticket, &call.op, 1);
  call.stream->stream.PlaceWorker(comm->impl->helper_cpus());
  Operation op = call.op;
  if (comm->impl->records()) op.enqueued_ns = FlightRecorder::NowNs();
  call.stream->stream.Enqueue([comm, ticket, op] { return RunOnComm(comm, ticket, &op, 1); },
                              comm->impl->cores_shared());
  return Status::Ok();
}

Status GroupStart() {
  ++ThisThreadGroup().depth;
  return Status::Ok();
}

Status GroupEnd() {
  GroupState& group = ThisThreadGroup();
  if (group.depth == 0) return InvalidUsage("chorusGroupEnd without a matching chorusGroupStart");
  if (--group.depth > 0) return Status::Ok();
  std::vector<PendingCall> calls;
  calls.swap(group.calls);
  return LaunchTogether(calls);
}

}  // namespace chorus
