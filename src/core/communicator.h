// Communicator: one rank's membership in a group of ranks. It owns the
// transport, serialises operations in issue order, runs them through the
// executor and remembers the first failure.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
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
#include "core/operation.h"
#include "core/schedule_cache.h"
#include "core/tuner.h"
#include "core/workspace.h"
#include "transports/transport.h"
#include "transports/transport_registry.h"
#include "core/registration_cache.h"

namespace chorus {

struct CommOptions {
  int timeout_ms = 300000;
  size_t chunk_bytes = 512 * 1024;
  std::string algo_spec;
  std::string socket_ifname;
  // CHORUS_TRANSPORT: "auto", a name, or an ordered list (TransportRegistry::
  // ParseSelection), and the transports' own variables.
  std::string transport_selection = "auto";
  TransportVars transport_vars;
  // Where transports are looked up; null: BuiltinTransports(). Tests give
  // their own table to add a transport without touching the library.
  const TransportRegistry* transports = nullptr;
  bool use_tuner = true;  // CHORUS_TUNER=model: pick algorithms by the cost model
  std::string tune_file;  // CHORUS_TUNE_FILE
  bool check_calls = false;  // CHORUS_CHECK=1: core/call_check.h
  size_t trace_buffer = 256;  // CHORUS_TRACE_BUFFER: flight recorder entries; 0 = off
  std::string trace_file;     // CHORUS_TRACE_FILE: automatic dumps (core/flight_recorder.h)
  int heartbeat_ms = 0;       // CHORUS_HEARTBEAT_MS: bootstrap/heartbeat.h; 0 = off
  AlgorithmTable algorithms;
};

// A reduction op made by chorusRedOpCreatePreMulSum.
struct PreMulSumOp {
  DataType dtype = chorusFloat32;
  bool read_each_call = false;   // chorusScalarDevice: read through `pointer`
  const void* pointer = nullptr;
  uint8_t value[8] = {};
  bool live = false;
};

class Communicator {
 public:
  // Joins the communicator of `id` (collective over all nranks ranks).
  static Status Create(const UniqueIdContents& id, int rank, int nranks, const CommOptions& options,
                       std::unique_ptr<Communicator>* out);
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

  // PreMulSum registry.
  Status CreatePreMulSum(const PreMulSumOp& op, chorusRedOp_t* handle);
  Status DestroyPreMulSum(chorusRedOp_t handle);
  // Resolves a public op for `dtype`: the kernel op plus Avg/PreMulSum flags.
  Status ResolveOp(chorusRedOp_t op, DataType dtype, Operation* operation) const;

 private:
  Communicator(int rank, int nranks, const CommOptions& options);
  // Waits until `ticket` is due (or the communicator aborted).
  Status AwaitTurn(uint64_t ticket);
  Status RunOperations(const Operation* ops, size_t nops);
  // Every rank's `bytes` in rank order (CallChecker's exchange): a board
  // round where the communicator has the board, else a direct allgather on
  // a tag of its own.
  Status ShareCheckBytes(const uint8_t* mine, size_t bytes, uint8_t* all);
  // The schedule of a collective: the last one resolved for this call shape,
  // else chosen (ChooseFor) and taken from the cache.
  Status ScheduleFor(const Operation& op, const CollectiveArgs& args, std::shared_ptr<const Schedule>* schedule);
  Algorithm ChooseFor(const Operation& op);
  // How `op` runs on the board (kNone: not): a lone allreduce of at most
  // kBoardAllReduceMaxBytes on a communicator with a board, by
  // ChooseBoardPlan. A function of what every rank shares
  // (core/board_allreduce.h).
  BoardPlan UsesBoard(const Operation& op);
  // Fills tuner_ from CHORUS_TUNE_FILE or a short measurement on this
  // communicator (collective: every rank runs it at creation).
  Status Calibrate();
  Status TimeAllReduce(size_t bytes, int iterations, double* seconds);
  // An in-place ring allreduce of this communicator, for its own use.
  Operation InternalRingAllReduce(void* data, size_t count, DataType dtype, ReduceOp reduce) const;
  void Fail(const Status& status);
  // With the heartbeat on, after a launch failed on a closed connection:
  // waits briefly for the heartbeat to report why (a silent rank).
  void AwaitOutsideCause();
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
  ScheduleCache schedules_;
  Workspace scratch_, staging_;
  TunerModel tuner_;
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
  uint64_t collective_sequence_ = 0;           // tags of collective messages
  std::vector<uint64_t> sends_to_, recvs_from_;  // tags of point-to-point messages

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

  // What a launch builds, kept between launches (only one runs at a time)
  // so that small launches allocate nothing once warm.
  struct LaunchState {
    struct ScratchLayout {
      size_t scratch = 0, send = 0, recv = 0;
    };
    std::vector<std::shared_ptr<const Schedule>> keep;
    std::vector<Schedule> p2p_schedules;
    std::vector<std::unique_ptr<uint8_t[]>> scaled_inputs;
    std::vector<BoundSchedule> bound;
    std::vector<ScratchLayout> layouts;
    std::vector<const Operation*> self_sends, self_recvs;
    void Clear();
  };
  LaunchState launch_;
  // The executor's working memory, reused by every launch.
  ExecutorContext executor_context_;
  // Tiny allreduces when every rank is on this host over shm; null otherwise.
  std::unique_ptr<BoardAllReduce> board_allreduce_;
  // Registrations of launch buffers, only when a serving transport needs
  // them (TransportCapabilities::needs_memory_registration); null for TCP
  // and shared memory, which then cost nothing per launch.
  std::unique_ptr<RegistrationCache> registrations_;
  std::vector<RegistrationCache::Lease> leases_;  // held for one launch
  std::vector<BoundMemory> bound_memory_;          // the launch's handles
  Status RegisterBuffers(const std::vector<BoundSchedule>& bound);
  void ReleaseBuffers();
  BoardDecisions board_decisions_;
  // CHORUS_CHECK; null when off.
  std::unique_ptr<CallChecker> checker_;
  CheckExchange check_exchange_;
  uint64_t check_exchanges_ = 0;  // tags of the exchanges

  // Flight recorder; null when off. waiting_ is filled by a failing launch.
  std::unique_ptr<FlightRecorder> recorder_;
  WaitingPeers waiting_;
  uint64_t trace_signal_id_ = 0;  // core/trace_signal.h registration; 0: none

  mutable std::mutex ops_mutex_;
  std::vector<PreMulSumOp> premul_ops_;
};

}  // namespace chorus
