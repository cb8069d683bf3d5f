#include "core/communicator.h"

#include <algorithm>
#include <chrono>
#include <thread>

#include "base/log.h"
#include "base/spin_wait.h"
#include "core/executor.h"
#include "core/trace_signal.h"
#include "core/reduction_scaling.h"

namespace chorus {

namespace {
// CHORUS_CHECK's exchanges; collective tags stay far below (sequence << 8)
// and point-to-point tags above (1 << 63, core/launch_binding.h).
constexpr uint64_t kCallCheckTag = 1ull << 62;

// The operations of one launch, for range-for.
struct OperationRange {
  const Operation* first;
  const Operation* last;
  const Operation* begin() const { return first; }
  const Operation* end() const { return last; }
};

// Turn waits poll this long before sleeping (base/spin_wait.h).
constexpr SpinBudget kTurnPoll{std::chrono::microseconds(2), std::chrono::microseconds(50)};

}  // namespace

Communicator::Communicator(int rank, int nranks, const CommOptions& options)
    : rank_(rank), nranks_(nranks), options_(options), binding_(rank, nranks, engines()) {}

void Communicator::AdoptTransport(std::unique_ptr<Transport> transport) {
  transport_ = std::move(transport);
  cores_shared_ = transport_->capabilities().shares_cores;
  if (transport_->capabilities().needs_memory_registration) binding_.RegisterWith(transport_.get());
  user_registrations_ = std::make_unique<UserRegistrations>(transport_.get());
  binding_.UseUserRegistrations(user_registrations_.get());
}

Communicator::~Communicator() {
  if (trace_signal_id_ != 0) UnregisterTraceDump(trace_signal_id_);
  if (transport_) transport_->Shutdown();
}

void Communicator::StartRecording(uint64_t comm_hash) {
  if (options_.trace_buffer == 0) return;
  TraceIdentity identity;
  identity.rank = rank_;
  identity.nranks = nranks_;
  identity.comm_hash = comm_hash;
  recorder_ = std::make_unique<FlightRecorder>(identity, options_.trace_buffer, options_.trace_file);
  if (!options_.trace_file.empty()) {
    InstallTraceSignalHandler();
    trace_signal_id_ = RegisterTraceDump([this] { recorder_->DumpToPatternFile("signal", LaunchesWaitingTurn()); });
  }
}

uint64_t Communicator::LaunchesWaitingTurn() const {
  const uint64_t issued = next_ticket_.load(std::memory_order_relaxed);
  const uint64_t running = running_ticket_.load(std::memory_order_relaxed);
  return issued > running + 1 ? issued - running - 1 : 0;
}

Status Communicator::RegisterBuffer(void* pointer, size_t bytes, const void** handle) {
  if (user_registrations_ == nullptr) return InvalidUsage("the communicator has no transport");
  return user_registrations_->Add(pointer, bytes, ClassifyBuffer(pointer), handle);
}

Status Communicator::DeregisterBuffer(const void* handle) {
  if (user_registrations_ == nullptr) return InvalidUsage("the communicator has no transport");
  return user_registrations_->Remove(handle);
}

Status Communicator::DumpTrace(const std::string& path, const char* reason) const {
  if (recorder_ == nullptr) return InvalidUsage("the flight recorder is off (CHORUS_TRACE_BUFFER=0)");
  const std::string target = path.empty() ? recorder_->ExpandPattern(recorder_->file_pattern()) : path;
  if (target.empty()) return InvalidArgument("no path given and CHORUS_TRACE_FILE is not set");
  return recorder_->Dump(target, reason, LaunchesWaitingTurn());
}

uint64_t Communicator::IssueTicket() { return next_ticket_.fetch_add(1, std::memory_order_relaxed); }

Status Communicator::AwaitTurn(uint64_t ticket) {
  auto due = [&] { return running_ticket_.load(std::memory_order_acquire) == ticket || stop_.load(); };
  // The launch ahead of us is usually a small one on another thread; with
  // more ranks than CPUs it may need this core: then no polling.
  if (SpinThenYield(cores_shared_ ? kNoPolling : kTurnPoll, due)) return Status::Ok();
  // Earlier operations are each bounded by the timeout, so waiting one more
  // timeout for them means the communicator is stuck.
  std::unique_lock<std::mutex> lock(order_mutex_);
  Deadline deadline = Deadline::AfterMs(options_.timeout_ms);
  // Counted so that a launch that ends takes the lock only for sleepers:
  // either it sees us here or we see its ticket (both seq_cst).
  turn_sleepers_.fetch_add(1, std::memory_order_seq_cst);
  std::atomic_thread_fence(std::memory_order_seq_cst);
  const bool became_due = order_cv_.wait_until(lock, deadline.time_point(), due);
  turn_sleepers_.fetch_sub(1, std::memory_order_relaxed);
  if (became_due) return Status::Ok();
  Status status = TimeoutError("rank ", rank_, ": operation never became due (an earlier one is stuck)");
  Fail(status);
  return status;
}

Status Communicator::Launch(uint64_t ticket, const Operation* ops, size_t nops) {
  CHORUS_RETURN_IF_ERROR(AwaitTurn(ticket));
  Status status;
  bool mismatch = false;
  if (recorder_ != nullptr) recorder_->BeginLaunch(ops, nops);
  if (aborted_.load()) {
    status = RemoteError("rank ", rank_, ": communicator was aborted");
  } else if (revoked_by() >= 0) {
    status = RevokedError();
  } else if (failed_.load(std::memory_order_acquire)) {
    status = async_error().WithContext("communicator is in an error state after an earlier failure");
  } else {
    std::unique_lock<std::timed_mutex> transport_lock(transport_mutex_);
    // A peer's revocation that reached this rank while it was idle.
    if (AdoptRevocationNotice()) {
      status = RevokedError();
    } else {
      if (checker_ != nullptr) status = checker_->Check(ops, nops, check_exchange_, &mismatch);
      if (status.ok()) {
        if (recorder_ != nullptr) recorder_->MarkStarted(/*read_clock=*/checker_ != nullptr);
        status = RunOperations(ops, nops);
      }
      // Failed because this rank or a peer revoked the communicator.
      if (!status.ok() && !mismatch && !aborted_.load() && AdoptRevocationNotice()) status = RevokedError();
    }
    if (revoked_by() >= 0) SpreadRevocation();
  }
  if (recorder_ != nullptr) recorder_->EndLaunch(status, status.ok() ? nullptr : &waiting_);
  if (mismatch) {
    // Rejected alike on every rank before anything moved: the communicator
    // stays usable.
    CHORUS_WARN("COLL", "rank ", rank_, ": ", status.message());
  } else if (!status.ok()) {
    // A failure found outside this launch (the heartbeat) shut the
    // transports down under it: report that cause, not the shutdown.
    if (status.code() == chorusRemoteError && options_.heartbeat_ms > 0) AwaitOutsideCause();
    status = failed_.load(std::memory_order_acquire) ? async_error() : Diagnose(status);
    Fail(status);
  }
  running_ticket_.fetch_add(1, std::memory_order_seq_cst);
  if (turn_sleepers_.load(std::memory_order_seq_cst) != 0) {
    // A waiter checks `due` and sleeps atomically under the lock: taking it
    // once means none is between the two, so the notify reaches it.
    { std::lock_guard<std::mutex> lock(order_mutex_); }
    order_cv_.notify_all();
  }
  return status;
}

void Communicator::AwaitOutsideCause() {
  // A peer that found a rank silent tells us (heartbeat notice) just before
  // its connections close; the closure may reach this launch first.
  constexpr int kGraceMs = 100;
  const Deadline grace = Deadline::AfterMs(std::min(kGraceMs, options_.heartbeat_ms));
  while (!failed_.load(std::memory_order_acquire) && !grace.Expired()) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
}

Status Communicator::Diagnose(const Status& status) {
  // The heartbeat names a silent peer itself; an abort, a revocation or a
  // refused call says what happened already.
  const bool lost_peer = status.code() == chorusTimeout || status.code() == chorusRemoteError;
  if (!diagnose_ || !lost_peer || options_.heartbeat_ms > 0 || aborted_.load() || revoked_by() >= 0) return status;
  // Peers waiting on us fail now rather than after the diagnosis.
  if (transport_) transport_->Shutdown();
  return Status(status.code(), status.message() + diagnose_(waiting_));
}

void Communicator::StartCheckingCalls() {
  checker_ = std::make_unique<CallChecker>(rank_, nranks_);
  check_exchange_ = [this](const uint8_t* mine, size_t bytes, uint8_t* all) {
    return ShareCheckBytes(mine, bytes, all);
  };
}

Status Communicator::ShareCheckBytes(const uint8_t* mine, size_t bytes, uint8_t* all) {
  // Every rank has the board or none, so every rank exchanges alike.
  if (board_allreduce_ != nullptr) return board_allreduce_->ShareRound(mine, bytes, all, stop_, options_.timeout_ms);
  CollectiveArgs args;
  args.coll = Collective::kAllGather;
  args.count = bytes;
  args.dtype = chorusUint8;
  args.nranks = nranks_;
  args.rank = rank_;
  std::shared_ptr<const Schedule> schedule;
  CHORUS_RETURN_IF_ERROR(schedules_.Get(args, Algorithm::kDirect, &schedule));
  binding_.Begin();
  binding_.AddTagged(std::move(schedule), mine, all, kCallCheckTag | ++check_exchanges_);
  return ExecuteSchedules(transport_.get(), rank_, binding_.bound(), ExecutorOptionsOfComm(), stop_,
                          Deadline::AfterMs(options_.timeout_ms));
}

ExecutorOptions Communicator::ExecutorOptionsOfComm() {
  ExecutorOptions executor_options;
  executor_options.chunk_bytes = options_.chunk_bytes;
  executor_options.device_chunk_bytes = options_.device_chunk_bytes;
  executor_options.staging = &staging_;
  executor_options.context = &executor_context_;
  executor_options.close_notice = &close_notice_;
  return executor_options;
}

void Communicator::BuildSelection() {
  SelectionInputs inputs;
  inputs.nranks = nranks_;
  inputs.topology = &topology_;
  inputs.model = tuner_;
  inputs.algorithms = options_.algorithms;
  // Every rank has the board or none; cores_shared_ is decided alike on
  // every rank of the host (the affinity masks), and a board communicator
  // is on one host.
  inputs.native = native_provider();
  inputs.shares_cores = cores_shared_;
  selection_ = SelectionTable(inputs);
  selections_.Clear();
}

SelectionCache::Entry* Communicator::Resolve(const Operation& op) {
  // The selection depends only on the call's shape and on what is fixed
  // after creation: once per shape.
  const CollectiveArgs& args = op.args;
  if (SelectionCache::Entry* entry = selections_.Find(args, op.algorithm)) return entry;
  const bool log = CurrentLogLevel() >= LogLevel::kInfo && logged_choices_.size() < 256;
  std::vector<std::pair<Algorithm, double>> candidates;
  const Selection selection = selection_.Select(args, op.algorithm, log ? &candidates : nullptr);
  if (log && selection.source == ScheduleSource::kCostModel) {
    std::pair<int, size_t> key(static_cast<int>(args.coll), args.count * DataTypeSize(args.dtype));
    if (std::find(logged_choices_.begin(), logged_choices_.end(), key) == logged_choices_.end()) {
      logged_choices_.push_back(key);
      std::string others;
      for (size_t i = 1; i < candidates.size(); ++i) {
        others += StrCat(", ", AlgorithmName(candidates[i].first), " ", candidates[i].second * 1e6, " us");
      }
      CHORUS_INFO("TUNE", "rank ", rank_, " ", CollectiveName(args.coll), " ", key.second, " B on ", nranks_,
                  " ranks: ", AlgorithmName(selection.algorithm), ", predicted ", selection.predicted_s * 1e6, " us",
                  others);
    }
  }
  return selections_.Remember(args, op.algorithm, selection);
}

Status Communicator::ScheduleFor(const Operation& op, const CollectiveArgs& args,
                                 std::shared_ptr<const Schedule>* schedule) {
  SelectionCache::Entry* entry = Resolve(op);
  if (entry->schedule == nullptr) {
    CHORUS_RETURN_IF_ERROR(schedules_.Get(args, entry->selection.algorithm, &entry->schedule));
  }
  *schedule = entry->schedule;
  return Status::Ok();
}

Status Communicator::RunOperations(const Operation* ops, size_t nops) {
  if (recorder_ != nullptr) waiting_.Clear();
  // A lone allreduce may run on the board instead (core/board_allreduce.h).
  const NativeProvider* native = native_provider();
  if (nops == 1 && native != nullptr && ops[0].kind == Operation::Kind::kCollective && ops[0].args.count > 0) {
    const NativePlan plan = Resolve(ops[0])->selection.NativePlanFor(ops[0].grouped);
    if (plan != kNoNativePlan) {
      if (recorder_ != nullptr) recorder_->SetStaticPath(0, native->PlanName(plan));
      bool served = true;
      Status status = RunNative(ops[0], plan, &served);
      if (!status.ok() && native->stuck_peer() >= 0) waiting_.AddRecv(native->stuck_peer());
      if (!status.ok() || served) return status;
    }
  }
  // Collectives first, then point-to-point: every rank orders a launch the
  // same way, so messages between two ranks meet in the same order.
  binding_.Begin();
  for (const Operation& op : OperationRange{ops, ops + nops}) {
    // Empty collectives reach here only to be checked (CHORUS_CHECK).
    if (op.kind != Operation::Kind::kCollective || op.args.count == 0) continue;
    CollectiveArgs args = op.args;
    args.topology = &topology_;
    std::shared_ptr<const Schedule> schedule;
    CHORUS_RETURN_IF_ERROR(ScheduleFor(op, args, &schedule));
    if (recorder_ != nullptr) recorder_->SetPath(static_cast<size_t>(&op - ops), schedule->algorithm.c_str());
    CHORUS_TRACE("COLL", "rank ", rank_, " ", CollectiveName(args.coll), " count ", args.count, " ",
                 DataTypeName(args.dtype), " algo ", schedule->algorithm, " steps ", schedule->steps.size());
    CHORUS_RETURN_IF_ERROR(binding_.AddCollective(op, std::move(schedule)));
  }
  binding_.PlaceScratch();
  CHORUS_RETURN_IF_ERROR(binding_.AddPointToPoint(ops, nops));

  if (!binding_.empty()) {
    ExecutorOptions executor_options = ExecutorOptionsOfComm();
    executor_options.waiting = &waiting_;
    executor_options.engines = &engines();
    CHORUS_RETURN_IF_ERROR(binding_.RegisterBuffers(&executor_options));
    Status executed = ExecuteSchedules(transport_.get(), rank_, binding_.bound(), executor_options, stop_,
                                       Deadline::AfterMs(options_.timeout_ms));
    binding_.ReleaseBuffers();
    CHORUS_RETURN_IF_ERROR(executed);
  }

  // Avg = Sum / nranks on the ranks that hold a result.
  for (const Operation& op : OperationRange{ops, ops + nops}) {
    if (op.kind != Operation::Kind::kCollective || !op.average || op.args.count == 0) continue;
    const CollectiveArgs& args = op.args;
    if (args.coll == Collective::kReduce && args.rank != args.root) continue;
    const size_t count = RecvBufferBytes(args) / DataTypeSize(args.dtype);
    CHORUS_RETURN_IF_ERROR(FinishResultOn(engines(), op.recv_kind, op, op.recv, count, nranks_));
  }
  return Status::Ok();
}

Status Communicator::RunNative(const Operation& op, NativePlan plan, bool* served) {
  NativeProvider* native = native_provider();
  if (IsCpuAccessible(op.send_kind) && IsCpuAccessible(op.recv_kind)) {
    return native->Run(op, plan, stop_, options_.timeout_ms, served);
  }
  // A provider's CPU code reads and writes the buffers directly, so memory
  // the CPU cannot touch goes through a host copy moved by its engine.
  // Staging, rather than leaving the provider, keeps every rank on the path
  // the call's shape chose whatever memory each rank passes: a rank on the
  // board waits for slots that a rank in the executor never fills. One
  // buffer, in place: what suits an allreduce, the only collective a
  // provider runs so far.
  if (op.args.coll != Collective::kAllReduce) return InternalError("native staging is for allreduce only");
  const size_t bytes = RecvBufferBytes(op.args);
  uint8_t* host = native_staging_.Reserve(bytes);
  Operation staged = op;
  staged.send = host;
  staged.recv = host;
  staged.send_kind = staged.recv_kind = MemoryKind::kHost;
  staged.args.in_place = true;
  CHORUS_RETURN_IF_ERROR(engines().For(op.send_kind)->Copy(host, op.send, bytes));
  CHORUS_RETURN_IF_ERROR(native->Run(staged, plan, stop_, options_.timeout_ms, served));
  return *served ? engines().For(op.recv_kind)->Copy(op.recv, host, bytes) : Status::Ok();
}

void Communicator::Fail(const Status& status) {
  bool first = false;
  {
    std::lock_guard<std::mutex> lock(error_mutex_);
    first = first_error_.ok();
    if (first) first_error_ = status;
    failed_.store(true, std::memory_order_release);
  }
  // The first failure is what a hang investigation needs; later launches
  // fail at once and add nothing.
  if (first && recorder_ != nullptr) {
    recorder_->DumpToPatternFile(status.code() == chorusTimeout ? "timeout" : "error", LaunchesWaitingTurn());
  }
  // Close every connection so that peers waiting on us fail now, not at
  // their deadline.
  if (transport_) transport_->Shutdown();
  if (first) CHORUS_WARN("COLL", status.message());
}

Status Communicator::async_error() const {
  std::lock_guard<std::mutex> lock(error_mutex_);
  return first_error_;
}

void Communicator::Abort() {
  // Before the abort makes the running launch fail: its state is the
  // interesting one.
  if (recorder_ != nullptr && !aborted_.load()) recorder_->DumpToPatternFile("abort", LaunchesWaitingTurn());
  aborted_.store(true);
  stop_.store(true);
  if (transport_) {
    transport_->Wakeup();
    transport_->Shutdown();
  }
  order_cv_.notify_all();
}

// The close notice's reason for a revocation (transport.h: transports only
// carry it).
constexpr uint32_t kRevokeNotice = 0x52564b45;  // "RVKE"

Status Communicator::RevokedError() const {
  const int origin = revoked_by();
  if (origin == rank_) return Status(chorusRevoked, StrCat("rank ", rank_, ": the communicator was revoked by this rank"));
  return Status(chorusRevoked, StrCat("rank ", rank_, ": the communicator was revoked by rank ", origin));
}

bool Communicator::AdoptRevocationNotice() {
  if (revoked_by() >= 0) return true;
  CloseNotice notice;
  if (!transport_ || !transport_->ReceivedNotice(&notice) || notice.reason != kRevokeNotice) return false;
  if (notice.origin < 0 || notice.origin >= nranks_) return false;
  MarkRevoked(notice.origin);
  return true;
}

void Communicator::MarkRevoked(int origin) {
  int none = -1;
  revoked_by_.compare_exchange_strong(none, origin, std::memory_order_acq_rel);
  CloseNotice notice;
  notice.origin = revoked_by();
  notice.reason = kRevokeNotice;
  close_notice_.store(EncodeCloseNotice(notice));
  // The running launch stops within a round of its executor (or board)
  // loop; launches waiting for their turn fail at once.
  stop_.store(true);
  if (transport_) transport_->Wakeup();
  { std::lock_guard<std::mutex> lock(order_mutex_); }
  order_cv_.notify_all();
}

void Communicator::SpreadRevocation() {
  CloseNotice notice;
  if (transport_ && DecodeCloseNotice(close_notice_.load(), &notice)) transport_->ShutdownWithNotice(notice);
}

Status Communicator::Revoke() {
  MarkRevoked(rank_);
  // Polled rather than try_lock_for: GCC 12's ThreadSanitizer does not see
  // the pthread_mutex_clocklock that try_lock_for uses and then reports the
  // unlock as one of an unlocked mutex. A revoke is rare; 1 ms steps cost
  // nothing that matters.
  std::unique_lock<std::timed_mutex> transport_lock(transport_mutex_, std::defer_lock);
  const Deadline deadline = Deadline::AfterMs(options_.timeout_ms);
  while (!transport_lock.try_lock()) {
    if (deadline.Expired()) {
      return TimeoutError("rank ", rank_, ": the running operation did not stop within the timeout");
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  SpreadRevocation();
  transport_lock.unlock();
  Fail(RevokedError());  // first error, unless the communicator had failed before
  return Status::Ok();
}

void Communicator::BeginPending() { pending_.fetch_add(1, std::memory_order_relaxed); }

void Communicator::EndPending() {
  // No WaitIdle asleep: one atomic decrement, no lock (every small call
  // passes here). Otherwise decrement and notify under the lock: once
  // WaitIdle sees 0 the communicator may be destroyed, so pending_cv_ must
  // not be touched after the unlock.
  uint64_t state = pending_.load(std::memory_order_relaxed);
  while (state < kIdleWaiter) {
    if (pending_.compare_exchange_weak(state, state - 1, std::memory_order_acq_rel)) return;
  }
  std::lock_guard<std::mutex> lock(pending_mutex_);
  pending_.fetch_sub(1, std::memory_order_acq_rel);
  pending_cv_.notify_all();
}

Status Communicator::WaitIdle() {
  std::unique_lock<std::mutex> lock(pending_mutex_);
  // Each pending operation is bounded by the timeout; allow two of them.
  Deadline deadline = Deadline::AfterMs(2ll * options_.timeout_ms + 1000);
  pending_.fetch_add(kIdleWaiter, std::memory_order_seq_cst);  // from now on EndPending notifies
  auto launches = [&] { return pending_.load(std::memory_order_acquire) % kIdleWaiter; };
  const bool idle = pending_cv_.wait_until(lock, deadline.time_point(), [&] { return launches() == 0; });
  pending_.fetch_sub(kIdleWaiter, std::memory_order_relaxed);
  if (!idle) return TimeoutError("rank ", rank_, ": ", launches(), " operation(s) still pending at the deadline");
  return Status::Ok();
}

}  // namespace chorus
