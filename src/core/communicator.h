// Communicator: one rank's membership in a group of ranks. It owns the
// transport, runs launches in issue order, remembers the first failure and
// keeps what is pending on streams. How it is assembled is
// core/communicator_builder.h; how a launch's operations are bound to
// memory, core/launch_binding.h.
//
// Words used alike in core:
//   call       what the user asked for: one chorusAllReduce, chorusSend, ...
//   operation  a validated call as the communicator runs it (core/operation.h)
//   launch     the operations of one group (or one call outside a group) on
//              one stream and communicator, run together under one ticket
//   schedule   the steps one rank takes for a collective under one algorithm
//              (algorithms/schedule.h), built once per call shape
//   selection  what runs a call shape: a schedule's algorithm or a native
//              provider such as the shm board (core/selection_table.h)
//   execution  the executor running a launch's bound schedules over the
//              transport (core/executor.h); the board runs some launches
//              without one (core/board_allreduce.h)
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "algorithms/algorithm.h"
#include "algorithms/topology.h"
#include "topology/host_topology.h"
#include "base/status.h"
#include "bootstrap/bootstrap.h"
#include "core/board_allreduce.h"
#include "core/call_check.h"
#include "core/executor.h"
#include "core/flight_recorder.h"
#include "core/launch_binding.h"
#include "core/operation.h"
#include "core/pointer_kind.h"
#include "core/reduction_ops.h"
#include "core/schedule_cache.h"
#include "core/selection_table.h"
#include "core/tuner.h"
#include "core/user_memory.h"
#include "core/user_registrations.h"
#include "core/workspace.h"
#include "transports/transport.h"
#include "transports/transport_registry.h"

namespace chorus {

struct CommOptions {
  int timeout_ms = 300000;
  size_t chunk_bytes = 512 * 1024;
  size_t device_chunk_bytes = 8 << 20;  // ExecutorOptions::device_chunk_bytes
  std::string algo_spec;
  std::string socket_ifname;
  // CHORUS_TRANSPORT: "auto", a name, or an ordered list (TransportRegistry::
  // ParseSelection), and the transports' own variables.
  std::string transport_selection = "auto";
  TransportVars transport_vars;
  // Where transports are looked up; null: BuiltinTransports(). Tests give
  // their own table to add a transport without touching the library.
  const TransportRegistry* transports = nullptr;
  // How user buffers are classified and which engine serves each kind
  // (core/user_memory.h); null: ClassifyPointer and DefaultLocalEngines().
  // Tests give their own to present host memory as a device.
  const UserMemory* user_memory = nullptr;
  bool use_tuner = true;  // CHORUS_TUNER=model: pick algorithms by the cost model
  std::string tune_file;  // CHORUS_TUNE_FILE
  bool check_calls = false;  // CHORUS_CHECK=1: core/call_check.h
  size_t trace_buffer = 256;  // CHORUS_TRACE_BUFFER: flight recorder entries; 0 = off
  std::string trace_file;     // CHORUS_TRACE_FILE: automatic dumps (core/flight_recorder.h)
  int heartbeat_ms = 0;       // CHORUS_HEARTBEAT_MS: bootstrap/heartbeat.h; 0 = off
  AlgorithmTable algorithms;
};

class Communicator {
 public:
  // Made by BuildCommunicator (core/communicator_builder.h).
  ~Communicator();

  int rank() const { return rank_; }
  int nranks() const { return nranks_; }
  const CommOptions& options() const { return options_; }
  const TunerModel& tuner() const { return tuner_; }
  // Allreduces run on the shm board so far (tests; core/board_allreduce.h).
  uint64_t board_rounds() const { return board_allreduce_ ? board_allreduce_->rounds() : 0; }
  // The transport's shares_cores: this host's ranks outnumber its CPUs, so
  // waits on this communicator's work (turns, host streams) do not poll.
  bool cores_shared() const { return cores_shared_; }
  const std::vector<int>& numa_of_rank() const { return numa_of_rank_; }
  const CpuList& helper_cpus() const { return helper_cpus_; }

  // CHORUS_CHECK: every later launch's collectives are checked across ranks
  // before data moves (core/call_check.h). Call before the communicator is
  // shared with other threads.
  void StartCheckingCalls();
  bool checks_calls() const { return checker_ != nullptr; }

  // The flight recorder (core/flight_recorder.h), when trace_buffer > 0:
  // records every later launch; dumps on failure, abort and, with a trace
  // file, SIGUSR1. `comm_hash` is alike on every rank. Call before the
  // communicator is shared with other threads.
  void StartRecording(uint64_t comm_hash);
  bool records() const { return recorder_ != nullptr; }
  // Dumps the recorder to `path` (empty: the expanded CHORUS_TRACE_FILE).
  Status DumpTrace(const std::string& path, const char* reason) const;

  // chorusCommRegister / chorusCommDeregister (core/user_registrations.h):
  // `*handle` names the registration.
  Status RegisterBuffer(void* pointer, size_t bytes, const void** handle);
  Status DeregisterBuffer(const void* handle);

  // What the first failure that timed out or lost a peer (not an abort, a
  // revocation or a mismatch; heartbeat off) adds to its message, given
  // what the launch still waited for: comm_factory.cc names the ranks that
  // no longer answer at all. Runs once, after the transport has closed. Call
  // before the communicator is shared with other threads.
  using FailureDiagnosis = std::function<std::string(const WaitingPeers& waiting)>;
  void SetFailureDiagnosis(FailureDiagnosis diagnose) { diagnose_ = std::move(diagnose); }

  // Reserves this call's place in the communicator's order. Calls run in
  // ticket order whatever thread or stream runs them.
  uint64_t IssueTicket();
  // Runs `ops` as one launch (a group, or a single call) when its ticket is
  // due. Never blocks past the deadline.
  Status Launch(uint64_t ticket, const Operation* ops, size_t nops);
  Status Launch(uint64_t ticket, const std::vector<Operation>& ops) { return Launch(ticket, ops.data(), ops.size()); }

  // Async bookkeeping: work enqueued on streams that still references us.
  void BeginPending();
  void EndPending();
  // Waits until no work is pending (bounded by the timeout).
  Status WaitIdle();

  // Makes every current and future operation fail promptly.
  void Abort();
  bool aborted() const { return aborted_.load(); }
  // chorusCommRevoke: makes every current and future operation fail with
  // chorusRevoked here and, through a close notice on the transport, on
  // every rank that a connection reaches. Idempotent; any thread. Fails
  // only when a running operation does not let go within the timeout.
  Status Revoke();
  // The rank whose revocation reached this one (itself included), or -1.
  int revoked_by() const { return revoked_by_.load(std::memory_order_acquire); }
  // chorusSuccess or the first failure of an operation.
  Status async_error() const;
  // A watcher outside any operation (the heartbeat) found the communicator
  // broken: fails it as a failed operation would, so that the running
  // operation fails now, naming this cause, and later ones at once.
  void FailFromOutside(const Status& status) { Fail(status); }

  // The kind of a user's buffer (null: host): ClassifyPointer unless
  // CommOptions::user_memory says otherwise.
  MemoryKind ClassifyBuffer(const void* pointer) const {
    return options_.user_memory != nullptr ? options_.user_memory->Classify(pointer) : ClassifyPointer(pointer);
  }
  // The engine of each kind ClassifyBuffer may answer.
  const LocalEngines& engines() const {
    return options_.user_memory != nullptr ? options_.user_memory->engines() : DefaultLocalEngines();
  }

  // The PreMulSum ops (core/reduction_ops.h).
  Status CreatePreMulSum(const PreMulSumOp& op, chorusRedOp_t* handle) {
    return reduction_ops_.CreatePreMulSum(op, handle);
  }
  Status DestroyPreMulSum(chorusRedOp_t handle) { return reduction_ops_.DestroyPreMulSum(handle); }
  // Resolves a public op for `dtype`: the kernel op plus Avg/PreMulSum flags.
  Status ResolveOp(chorusRedOp_t op, DataType dtype, Operation* operation) const {
    return reduction_ops_.Resolve(op, dtype, operation);
  }

 private:
  friend class CommunicatorBuilder;
  Communicator(int rank, int nranks, const CommOptions& options);
  // Takes the connected transport (the builder's last step before
  // calibration, which already launches on it).
  void AdoptTransport(std::unique_ptr<Transport> transport);
  // Waits until `ticket` is due (or the communicator aborted).
  Status AwaitTurn(uint64_t ticket);
  Status RunOperations(const Operation* ops, size_t nops);
  // The selection table's native provider (the board); null: none.
  NativeProvider* native_provider() const { return board_allreduce_.get(); }
  // A lone collective by the native provider's `plan`; buffers the CPU
  // cannot touch are staged. *served false: every rank runs the schedule
  // instead (NativeProvider::Run).
  Status RunNative(const Operation& op, NativePlan plan, bool* served);
  // Every rank's `bytes` in rank order (CallChecker's exchange): a board
  // round where the communicator has the board, else a direct allgather on
  // a tag of its own.
  Status ShareCheckBytes(const uint8_t* mine, size_t bytes, uint8_t* all);
  // What every launch of this communicator gives the executor: chunk sizes,
  // the staging workspace, the reusable context and the close notice.
  ExecutorOptions ExecutorOptionsOfComm();
  // (Re)builds the selection table from what is fixed after creation:
  // options, tuner model, hosts, board, shares_cores. The builder calls it
  // once connected and again after calibration.
  void BuildSelection();
  // What runs the collective `op` (count > 0): the entry of its shape in the
  // cache of recent shapes, else the table's selection, remembered.
  SelectionCache::Entry* Resolve(const Operation& op);
  // The schedule of a collective: the resolved entry's, built on first use.
  Status ScheduleFor(const Operation& op, const CollectiveArgs& args, std::shared_ptr<const Schedule>* schedule);
  void Fail(const Status& status);
  // With the heartbeat on, after a launch failed on a closed connection:
  // waits briefly for the heartbeat to report why (a silent rank).
  void AwaitOutsideCause();
  // `status` with what diagnose_ adds, where it applies.
  Status Diagnose(const Status& status);
  // The error of every operation once revoked, naming the revoking rank.
  Status RevokedError() const;
  // Adopts a revocation that a peer's close notice brought; true once revoked.
  bool AdoptRevocationNotice();
  // Records the revocation (the first origin wins) and stops running work.
  void MarkRevoked(int origin);
  // Tells the peers (transport_mutex_ held).
  void SpreadRevocation();
  // Launches issued but not yet due (a dump's "waiting_turn").
  uint64_t LaunchesWaitingTurn() const;

  const int rank_;
  const int nranks_;
  const CommOptions options_;
  std::unique_ptr<Transport> transport_;
  bool cores_shared_ = false;  // transport_->capabilities().shares_cores, fixed at Create
  // The user's registered buffers, released before the transport.
  std::unique_ptr<UserRegistrations> user_registrations_;
  ScheduleCache schedules_;
  // What runs each call shape (core/selection_table.h), and the last few
  // shapes' selections and schedules.
  SelectionTable selection_;
  SelectionCache selections_;
  // Page-locked up to these sizes where a GPU is present, reserved here at
  // creation (core/workspace.h says why never later): the executor's
  // staging of 4 directions x 8 slots x 512 KiB chunks, and the board's
  // host copies of device buffers.
  static constexpr size_t kPinnedStagingBytes = size_t{16} << 20;
  static constexpr size_t kPinnedNativeStagingBytes = size_t{1} << 20;
  Workspace staging_{StagingAllocator(), kPinnedStagingBytes};  // staging and receive-reduce chunks
  Workspace native_staging_{StagingAllocator(), kPinnedNativeStagingBytes};  // device buffers run natively
  TunerModel tuner_;   // set by the builder's calibration
  // Host of every rank (first-seen numbering of the rendezvous host
  // identities); fixed for the communicator's life, so the schedule cache
  // need not key on it.
  Topology topology_;
  // NUMA node of every rank's binding (PeerInfo::numa_node; -1: spans or
  // unknown), for the layout log and NUMA grouping (topology/numa_groups.h).
  std::vector<int> numa_of_rank_;
  // Where this rank's host stream workers run (topology/thread_placement.h);
  // empty: where they were started.
  CpuList helper_cpus_;
  std::vector<std::pair<int, size_t>> logged_choices_;  // (collective, bytes) already logged

  // Issue order. The tickets are atomics so that a launch that is due at
  // once (the common case) takes no lock; waiting for a turn uses the cv.
  std::mutex order_mutex_;
  std::condition_variable order_cv_;
  std::atomic<uint64_t> next_ticket_{0};
  std::atomic<uint64_t> running_ticket_{0};
  std::atomic<int> turn_sleepers_{0};  // AwaitTurn callers asleep on order_cv_

  // Failure state.
  std::atomic<bool> aborted_{false};
  std::atomic<int> revoked_by_{-1};
  // The revocation's close notice (EncodeCloseNotice), set before stop_:
  // the executor shuts the transport down with it when it stops.
  std::atomic<uint64_t> close_notice_{0};
  // Abort or revocation: running and waiting work stops at once.
  std::atomic<bool> stop_{false};
  // Held by the launch that drives the transport, and by Revoke telling the
  // peers, since a transport is driven by one thread at a time.
  std::timed_mutex transport_mutex_;
  std::atomic<bool> failed_{false};  // first_error_ is set: lets launches skip its lock
  mutable std::mutex error_mutex_;
  Status first_error_;

  // Pending stream work.
  std::mutex pending_mutex_;
  std::condition_variable pending_cv_;
  // Launches pending (low 32 bits) plus kIdleWaiter per WaitIdle caller:
  // EndPending takes the lock only when someone waits.
  static constexpr uint64_t kIdleWaiter = uint64_t{1} << 32;
  std::atomic<uint64_t> pending_{0};

  // The running launch's bound schedules, kept between launches (only one
  // runs at a time) so that small launches allocate nothing once warm.
  LaunchBinding binding_;
  // The executor's working memory, reused by every launch.
  ExecutorContext executor_context_;
  // Tiny allreduces when every rank is on this host over shm; null otherwise.
  // The communicator's native provider (the selection table's native rows)
  // when there is one, and CHORUS_CHECK's exchange.
  std::unique_ptr<BoardAllReduce> board_allreduce_;
  // CHORUS_CHECK; null when off.
  std::unique_ptr<CallChecker> checker_;
  CheckExchange check_exchange_;
  uint64_t check_exchanges_ = 0;  // tags of the exchanges

  // Flight recorder; null when off. waiting_ is filled by a failing launch.
  std::unique_ptr<FlightRecorder> recorder_;
  WaitingPeers waiting_;
  FailureDiagnosis diagnose_;  // null: none
  uint64_t trace_signal_id_ = 0;  // core/trace_signal.h registration; 0: none

  ReductionOps reduction_ops_;
};

}  // namespace chorus
