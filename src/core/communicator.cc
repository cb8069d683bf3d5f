#include "core/communicator.h"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <tuple>

#include "base/log.h"
#include "core/executor.h"
#include "kernels/reduce.h"
#include "core/peer_info.h"
#include "core/rank_layout.h"
#include "base/spin_wait.h"
#include "core/trace_signal.h"
#include "core/transport_mux.h"
#include "topology/local_rank.h"
#include "topology/numa_groups.h"
#include "topology/thread_placement.h"
#include "transports/host_identity.h"
#include "transports/transport_registry.h"

namespace chorus {

namespace {
constexpr uint64_t kPointToPointTag = 1ull << 63;
// CHORUS_CHECK's exchanges; collective tags stay far below (sequence << 8).
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

size_t RoundUp64(size_t bytes) { return (bytes + 63) / 64 * 64; }

uint8_t* Writable(const void* buffer) { return const_cast<uint8_t*>(static_cast<const uint8_t*>(buffer)); }

// The schedule of one send, receive or local copy, from kSend to kRecv.
Schedule OneStepSchedule(StepKind kind, int peer, size_t bytes, DataType dtype, const char* name) {
  Schedule schedule;
  schedule.algorithm = name;
  schedule.dtype = dtype;
  schedule.element_size = DataTypeSize(dtype);
  Step step;
  step.kind = kind;
  step.peer = peer;
  step.src = {BufferId::kSend, 0};
  step.dst = {BufferId::kRecv, 0};
  step.bytes = bytes;
  schedule.Add(step);
  return schedule;
}
}  // namespace

Communicator::Communicator(int rank, int nranks, const CommOptions& options)
    : rank_(rank), nranks_(nranks), options_(options), sends_to_(nranks, 0), recvs_from_(nranks, 0) {}

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

Status Communicator::DumpTrace(const std::string& path, const char* reason) const {
  if (recorder_ == nullptr) return InvalidUsage("the flight recorder is off (CHORUS_TRACE_BUFFER=0)");
  const std::string target = path.empty() ? recorder_->ExpandPattern(recorder_->file_pattern()) : path;
  if (target.empty()) return InvalidArgument("no path given and CHORUS_TRACE_FILE is not set");
  return recorder_->Dump(target, reason, LaunchesWaitingTurn());
}

Status Communicator::Create(const UniqueIdContents& id, int rank, int nranks, const CommOptions& options,
                            std::unique_ptr<Communicator>* out) {
  std::unique_ptr<Communicator> comm(new Communicator(rank, nranks, options));
  Deadline deadline = Deadline::AfterMs(options.timeout_ms);

  const TransportRegistry& registry = options.transports != nullptr ? *options.transports : BuiltinTransports();
  std::vector<const TransportDescriptor*> order;
  CHORUS_RETURN_IF_ERROR(registry.ParseSelection(options.transport_selection, &order));
  TransportOptions transport_options;
  transport_options.rank = rank;
  transport_options.nranks = nranks;
  std::memcpy(transport_options.secret, id.secret, sizeof(id.secret));
  transport_options.ifname = options.socket_ifname;
  transport_options.timeout_ms = options.timeout_ms;
  // The rank's host topology first: TCP places its listener by it (the NIC
  // nearest to the binding) and the host stream workers run on its CPUs.
  // I/O devices only where a selected transport will place itself by them.
  const bool io_devices = std::any_of(order.begin(), order.end(), [&](const TransportDescriptor* descriptor) {
    return descriptor->uses_io_devices != nullptr && descriptor->uses_io_devices(transport_options);
  });
  HostTopology host_topology;
  CHORUS_RETURN_IF_ERROR(RankTopology(rank, io_devices, &host_topology)
                             .WithContext(StrCat("rank ", rank, ": host topology")));
  transport_options.topology = &host_topology;
  transport_options.local_rank = LauncherLocalRank(rank);
  bool place_threads = false;
  CHORUS_RETURN_IF_ERROR(HelperThreadPlacementEnabled(&place_threads));
  if (place_threads) comm->helper_cpus_ = HelperThreadCpus(host_topology);

  // Every selected transport; one that cannot be created while others
  // remain is left out with a warning (shm on a /dev/shm too small for its
  // segment: its same-host peers then go over TCP). It publishes no address,
  // so every rank derives the same routes from the rendezvous table.
  std::vector<const TransportDescriptor*> kinds;
  std::vector<std::unique_ptr<Transport>> transports;
  PeerInfo mine;
  mine.host = HostIdentity();
  mine.numa_node = BindingNumaNode(host_topology);
  for (const TransportDescriptor* descriptor : order) {
    std::unique_ptr<Transport> transport;
    Status status = descriptor->create(*descriptor, transport_options, options.transport_vars, &transport);
    if (!status.ok()) {
      if (order.size() == 1) {
        return status.WithContext(StrCat("rank ", rank, ": creating the ", descriptor->name, " transport"));
      }
      CHORUS_WARN("INIT", "rank ", rank, ": ", descriptor->name, " transport unavailable, using the others of ",
                  options.transport_selection, ": ", status.message());
      continue;
    }
    mine.addresses.push_back({descriptor->name, transport->LocalAddress()});
    kinds.push_back(descriptor);
    transports.push_back(std::move(transport));
  }
  if (transports.empty()) return InvalidUsage("rank ", rank, ": no transport of CHORUS_TRANSPORT=",
                                              options.transport_selection, " could be created");

  std::vector<std::string> blobs;
  CHORUS_RETURN_IF_ERROR(Rendezvous(id, rank, nranks, mine.Encode(), deadline, &blobs)
                             .WithContext(StrCat("rank ", rank, ": rendezvous with ", id.root_address)));
  std::vector<PeerPublication> peers(nranks);
  for (int r = 0; r < nranks; ++r) {
    PeerInfo info;
    CHORUS_RETURN_IF_ERROR(PeerInfo::Decode(blobs[r], &info).WithContext(StrCat("rank ", r)));
    comm->numa_of_rank_.push_back(info.numa_node);  // kept before the publication is sliced off
    peers[r] = std::move(info);
  }
  // Checked over the whole table, so that every rank fails alike.
  CHORUS_RETURN_IF_ERROR(CheckEveryPairReachable(order, peers, options.transport_selection)
                             .WithContext(StrCat("rank ", rank)));
  std::vector<std::string> hosts;
  for (const PeerPublication& peer : peers) {
    size_t index = std::find(hosts.begin(), hosts.end(), peer.host) - hosts.begin();
    if (index == hosts.size()) hosts.push_back(peer.host);
    comm->topology_.host_of_rank.push_back(static_cast<int>(index));
  }
  // NUMA domains as a level below the host, where some host has several.
  std::vector<int> groups = GroupRanksByNuma(comm->topology_.host_of_rank, comm->numa_of_rank_);
  if (!groups.empty() && *std::max_element(groups.begin(), groups.end()) + 1 > static_cast<int>(hosts.size())) {
    comm->topology_.group_of_rank = std::move(groups);
  }
  if (rank == 0 && CurrentLogLevel() >= LogLevel::kInfo) {
    std::vector<std::string> host_of_rank;
    for (const PeerPublication& peer : peers) host_of_rank.push_back(peer.host);
    CHORUS_INFO("INIT", "layout of ", nranks, " ranks: ", DescribeRankLayout(host_of_rank, comm->numa_of_rank_));
  }
  // Per peer, the first selected transport that reaches it.
  const std::vector<int> choice = ChooseTransports(order, peers, rank);
  std::vector<int> routes(nranks, -1);
  for (int r = 0; r < nranks; ++r) {
    if (r == rank) continue;
    if (choice[r] < 0) return InternalError("rank ", rank, ": no transport reaches rank ", r);
    routes[r] = static_cast<int>(std::find(kinds.begin(), kinds.end(), order[choice[r]]) - kinds.begin());
  }
  // Each transport connects only to the peers routed to it (both sides
  // route alike, from the same table): with `auto` on one host TCP opens no
  // lanes at all, since shm serves every peer.
  for (size_t t = 0; t < transports.size(); ++t) {
    std::vector<std::string> addresses(nranks);
    for (int r = 0; r < nranks; ++r) {
      if (r == rank || routes[r] == static_cast<int>(t)) addresses[r] = *peers[r].AddressFor(kinds[t]->name);
    }
    CHORUS_RETURN_IF_ERROR(transports[t]->Connect(addresses, deadline)
                               .WithContext(StrCat("rank ", rank, ": connecting over ", kinds[t]->name)));
  }
  // The board: every rank has it or none, since it exists when all ranks
  // connected to one shm transport and all are routed to it, which every
  // rank reads from the same table.
  for (size_t t = 0; t < transports.size() && nranks > 1; ++t) {
    shm::ShmBoard* board = SharedMemoryBoardOf(transports[t].get());
    const bool serves_all = std::all_of(routes.begin(), routes.end(), [&](int route) {
      return route == -1 || route == static_cast<int>(t);
    });
    if (board != nullptr && serves_all) comm->board_allreduce_ = std::make_unique<BoardAllReduce>(board);
  }
  std::unique_ptr<TransportMux> mux;
  CHORUS_RETURN_IF_ERROR(TransportMux::Create(std::move(transports), routes, rank, nranks, &mux));
  if (CurrentLogLevel() >= LogLevel::kInfo) {
    std::string routes_text;
    for (int r = 0; r < nranks; ++r) {
      if (r != rank) routes_text += StrCat(routes_text.empty() ? "" : ", ", r, ":", mux->TransportNameFor(r));
    }
    CHORUS_INFO("INIT", "rank ", rank, "/", nranks, " connected (", routes_text.empty() ? "alone" : routes_text,
                "; CHORUS_TRANSPORT=", options.transport_selection, ", chunk ", options.chunk_bytes, " B)");
  }
  comm->transport_ = std::move(mux);
  comm->cores_shared_ = comm->transport_->capabilities().shares_cores;
  if (comm->transport_->capabilities().needs_memory_registration) {
    comm->registrations_ = std::make_unique<RegistrationCache>(comm->transport_.get());
  }
  if (options.use_tuner) CHORUS_RETURN_IF_ERROR(comm->Calibrate().WithContext(StrCat("rank ", rank, ": tuning")));
  *out = std::move(comm);
  return Status::Ok();
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
    if (failed_.load(std::memory_order_acquire)) status = async_error();
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
  LaunchState& launch = launch_;
  launch.Clear();
  BoundSchedule bound;
  bound.schedule = schedule.get();
  bound.send = Writable(mine);
  bound.recv = all;
  bound.tag = kCallCheckTag | ++check_exchanges_;
  launch.bound.push_back(bound);
  launch.keep.push_back(std::move(schedule));
  ExecutorOptions executor_options;
  executor_options.chunk_bytes = options_.chunk_bytes;
  executor_options.staging = &staging_;
  executor_options.context = &executor_context_;
  executor_options.close_notice = &close_notice_;
  return ExecuteSchedules(transport_.get(), rank_, launch.bound, executor_options, stop_,
                          Deadline::AfterMs(options_.timeout_ms));
}

namespace {
// Bytes of `buffer` that `schedule`'s steps touch (from offset 0).
size_t ExtentOf(const Schedule& schedule, BufferId buffer) {
  size_t extent = 0;
  for (const Step& step : schedule.steps) {
    for (const BufferRange* range : {&step.src, &step.src2, &step.dst}) {
      if (range->buffer == buffer && step.bytes > 0) extent = std::max(extent, range->offset + step.bytes);
    }
  }
  return extent;
}
}  // namespace

Status Communicator::RegisterBuffers(const std::vector<BoundSchedule>& bound) {
  leases_.clear();
  bound_memory_.assign(bound.size(), BoundMemory());
  for (size_t i = 0; i < bound.size(); ++i) {
    const BoundSchedule& b = bound[i];
    BoundMemory& memory = bound_memory_[i];
    for (auto [buffer, base, handle] : {std::make_tuple(BufferId::kSend, b.send, &memory.send),
                                        std::make_tuple(BufferId::kRecv, b.recv, &memory.recv),
                                        std::make_tuple(BufferId::kScratch, b.scratch, &memory.scratch)}) {
      const size_t bytes = base != nullptr ? ExtentOf(*b.schedule, buffer) : 0;
      if (bytes == 0) continue;
      RegistrationCache::Lease lease;
      Status status = registrations_->Acquire(base, bytes, MemoryKind::kHost, &lease);
      if (!status.ok()) {
        ReleaseBuffers();
        return status.WithContext(StrCat("rank ", rank_, ": registering ", bytes, " bytes"));
      }
      *handle = lease.handle();
      leases_.push_back(lease);
    }
  }
  return Status::Ok();
}

void Communicator::ReleaseBuffers() {
  for (RegistrationCache::Lease& lease : leases_) registrations_->Release(&lease);
  leases_.clear();
}

void Communicator::LaunchState::Clear() {
  keep.clear();
  p2p_schedules.clear();
  scaled_inputs.clear();
  bound.clear();
  layouts.clear();
  self_sends.clear();
  self_recvs.clear();
}

Status Communicator::ScheduleFor(const Operation& op, const CollectiveArgs& args,
                                 std::shared_ptr<const Schedule>* schedule) {
  // The choice depends only on the call's shape and on what is fixed after
  // creation (options, tuner model, topology): resolve it once per shape.
  if (schedules_.FindResolved(args, op.algorithm, schedule)) return Status::Ok();
  CHORUS_RETURN_IF_ERROR(schedules_.Get(args, ChooseFor(op), schedule));
  schedules_.RememberResolved(args, op.algorithm, *schedule);
  return Status::Ok();
}

BoardPlan Communicator::UsesBoard(const Operation& op) {
  if (board_allreduce_ == nullptr || op.kind != Operation::Kind::kCollective || op.grouped || op.args.count == 0 ||
      op.args.coll != Collective::kAllReduce || !board_allreduce_->Fits(op.args.count * DataTypeSize(op.args.dtype))) {
    return BoardPlan::kNone;
  }
  BoardPlan plan = BoardPlan::kNone;
  if (board_decisions_.Find(op, &plan)) return plan;
  // cores_shared_ is decided alike on every rank of the host (the affinity
  // masks), and a board communicator is on one host.
  const bool forced = op.algorithm != Algorithm::kAuto ||
                      options_.algorithms.forced[static_cast<size_t>(Collective::kAllReduce)] != Algorithm::kAuto;
  plan = ChooseBoardPlan(op.args.count * DataTypeSize(op.args.dtype), nranks_, ChooseFor(op), forced, cores_shared_);
  board_decisions_.Remember(op, plan);
  return plan;
}

Status Communicator::RunOperations(const Operation* ops, size_t nops) {
  if (recorder_ != nullptr) waiting_.Clear();
  if (nops == 1) {
    const BoardPlan plan = UsesBoard(ops[0]);
    if (plan != BoardPlan::kNone) {
      if (recorder_ != nullptr) recorder_->SetStaticPath(0, plan == BoardPlan::kOneShot ? "board-oneshot" : "board-twophase");
      Status status = board_allreduce_->Run(ops[0], plan, stop_, options_.timeout_ms);
      if (!status.ok() && board_allreduce_->stuck_peer() >= 0) waiting_.AddRecv(board_allreduce_->stuck_peer());
      return status;
    }
  }
  // Collectives first, then point-to-point: every rank orders a launch the
  // same way, so messages between two ranks meet in the same order.
  LaunchState& launch = launch_;
  launch.Clear();
  std::vector<std::shared_ptr<const Schedule>>& keep = launch.keep;
  std::vector<Schedule>& p2p_schedules = launch.p2p_schedules;
  std::vector<std::unique_ptr<uint8_t[]>>& scaled_inputs = launch.scaled_inputs;
  std::vector<BoundSchedule>& bound = launch.bound;
  p2p_schedules.reserve(nops);  // bound[] points into it

  // Where each collective's scratch, and the private memory standing in for
  // the buffers NCCL ignores on non-roots (see collective.h), start in one
  // workspace reservation.
  using ScratchLayout = LaunchState::ScratchLayout;
  std::vector<ScratchLayout>& layouts = launch.layouts;
  size_t scratch_total = 0;
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
    BoundSchedule b;
    b.schedule = schedule.get();
    b.send = Writable(op.send);
    b.recv = static_cast<uint8_t*>(op.recv);
    b.tag = (++collective_sequence_ << 8) | static_cast<uint64_t>(args.coll);
    if (op.premultiply && op.send != nullptr) {
      // Scale a private copy: the user's send buffer is const.
      size_t count = SendBufferBytes(args) / DataTypeSize(args.dtype);
      size_t bytes = count * DataTypeSize(args.dtype);
      std::unique_ptr<uint8_t[]> scaled(new uint8_t[bytes == 0 ? 1 : bytes]);
      ScaleKernel(scaled.get(), op.send, count, args.dtype, op.scalar);
      b.send = scaled.get();
      scaled_inputs.push_back(std::move(scaled));
    }
    ScratchLayout layout;
    layout.scratch = scratch_total;
    scratch_total += RoundUp64(schedule->scratch_bytes);
    layout.send = scratch_total;
    if (b.send == nullptr) scratch_total += RoundUp64(SendBufferBytes(args));
    layout.recv = scratch_total;
    if (b.recv == nullptr) scratch_total += RoundUp64(RecvBufferBytes(args));
    layouts.push_back(layout);
    bound.push_back(b);
    keep.push_back(std::move(schedule));
  }
  uint8_t* scratch = scratch_total > 0 ? scratch_.Reserve(scratch_total) : nullptr;
  for (size_t i = 0; i < layouts.size(); ++i) {
    bound[i].scratch = scratch + layouts[i].scratch;
    if (bound[i].send == nullptr) bound[i].send = scratch + layouts[i].send;
    if (bound[i].recv == nullptr) bound[i].recv = scratch + layouts[i].recv;
  }

  // Sends to oneself pair with receives from oneself of the same launch, in
  // order, and become local copies (NCCL allows them inside a group).
  std::vector<const Operation*>& self_sends = launch.self_sends;
  std::vector<const Operation*>& self_recvs = launch.self_recvs;
  for (const Operation& op : OperationRange{ops, ops + nops}) {
    if (op.kind == Operation::Kind::kCollective || op.bytes == 0 || op.peer != rank_) continue;
    (op.kind == Operation::Kind::kSend ? self_sends : self_recvs).push_back(&op);
  }
  if (self_sends.size() != self_recvs.size()) {
    return InvalidUsage("rank ", rank_, ": ", self_sends.size(), " send(s) to itself but ", self_recvs.size(),
                        " receive(s) from itself in one launch; pair them inside a group");
  }
  for (size_t i = 0; i < self_sends.size(); ++i) {
    if (self_sends[i]->bytes != self_recvs[i]->bytes) {
      return InvalidUsage("rank ", rank_, ": send to itself of ", self_sends[i]->bytes,
                          " bytes meets a receive of ", self_recvs[i]->bytes, " bytes");
    }
    p2p_schedules.push_back(OneStepSchedule(StepKind::kCopy, -1, self_sends[i]->bytes, chorusUint8, "self"));
    BoundSchedule b;
    b.schedule = &p2p_schedules.back();
    b.send = Writable(self_sends[i]->send);
    b.recv = static_cast<uint8_t*>(self_recvs[i]->recv);
    bound.push_back(b);
  }

  for (const Operation& op : OperationRange{ops, ops + nops}) {
    if (op.kind == Operation::Kind::kCollective || op.bytes == 0 || op.peer == rank_) continue;
    const bool sending = op.kind == Operation::Kind::kSend;
    p2p_schedules.push_back(OneStepSchedule(sending ? StepKind::kSend : StepKind::kRecv, op.peer, op.bytes, op.dtype,
                                            sending ? "send" : "recv"));
    BoundSchedule b;
    b.schedule = &p2p_schedules.back();
    b.send = Writable(op.send);
    b.recv = static_cast<uint8_t*>(op.recv);
    uint64_t sequence = sending ? sends_to_[op.peer]++ : recvs_from_[op.peer]++;
    b.tag = kPointToPointTag | sequence;
    bound.push_back(b);
  }

  if (!bound.empty()) {
    ExecutorOptions executor_options;
    executor_options.chunk_bytes = options_.chunk_bytes;
    executor_options.staging = &staging_;
    executor_options.context = &executor_context_;
    executor_options.waiting = &waiting_;
    executor_options.close_notice = &close_notice_;
    if (registrations_ != nullptr) {
      CHORUS_RETURN_IF_ERROR(RegisterBuffers(bound));
      executor_options.memory = &bound_memory_;
    }
    Status executed = ExecuteSchedules(transport_.get(), rank_, bound, executor_options, stop_,
                                       Deadline::AfterMs(options_.timeout_ms));
    if (registrations_ != nullptr) ReleaseBuffers();
    CHORUS_RETURN_IF_ERROR(executed);
  }

  // Avg = Sum / nranks on the ranks that hold a result.
  for (const Operation& op : OperationRange{ops, ops + nops}) {
    if (op.kind != Operation::Kind::kCollective || !op.average || op.args.count == 0) continue;
    const CollectiveArgs& args = op.args;
    if (args.coll == Collective::kReduce && args.rank != args.root) continue;
    size_t count = RecvBufferBytes(args) / DataTypeSize(args.dtype);
    DivideKernel(op.recv, count, args.dtype, nranks_);
  }
  return Status::Ok();
}

Algorithm Communicator::ChooseFor(const Operation& op) {
  const CollectiveArgs& args = op.args;
  if (op.algorithm != Algorithm::kAuto) return Supports(op.algorithm, args.coll) ? op.algorithm : Algorithm::kRing;
  bool forced = options_.algorithms.forced[static_cast<size_t>(args.coll)] != Algorithm::kAuto;
  if (forced || !tuner_.valid() || nranks_ == 1) return ChooseAlgorithm(args, options_.algorithms);
  CollectiveArgs placed = args;
  placed.topology = &topology_;  // the hosts that the hierarchical and direct costs depend on
  TunerChoice choice = ChooseByCost(placed, tuner_);
  if (CurrentLogLevel() >= LogLevel::kInfo && logged_choices_.size() < 256) {
    std::pair<int, size_t> key(static_cast<int>(args.coll), args.count * DataTypeSize(args.dtype));
    if (std::find(logged_choices_.begin(), logged_choices_.end(), key) == logged_choices_.end()) {
      logged_choices_.push_back(key);
      std::string others;
      for (size_t i = 1; i < choice.candidates.size(); ++i) {
        others += StrCat(", ", AlgorithmName(choice.candidates[i].first), " ", choice.candidates[i].second * 1e6, " us");
      }
      CHORUS_INFO("TUNE", "rank ", rank_, " ", CollectiveName(args.coll), " ", key.second, " B on ", nranks_,
                  " ranks: ", AlgorithmName(choice.algorithm), ", predicted ", choice.predicted_s * 1e6, " us",
                  others);
    }
  }
  return choice.algorithm;
}

Operation Communicator::InternalRingAllReduce(void* data, size_t count, DataType dtype, ReduceOp reduce) const {
  Operation op;
  op.args.coll = Collective::kAllReduce;
  op.args.count = count;
  op.args.dtype = dtype;
  op.args.op = reduce;
  op.args.nranks = nranks_;
  op.args.rank = rank_;
  op.args.in_place = true;
  op.send = data;
  op.recv = data;
  op.algorithm = Algorithm::kRing;
  return op;
}

Status Communicator::TimeAllReduce(size_t bytes, int iterations, double* seconds) {
  std::vector<float> buffer(bytes / sizeof(float), 1.0f);
  const Operation op = InternalRingAllReduce(buffer.data(), buffer.size(), chorusFloat32, ReduceOp::kSum);
  CHORUS_RETURN_IF_ERROR(Launch(IssueTicket(), {op}));  // warm-up: connections, caches
  auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < iterations; ++i) CHORUS_RETURN_IF_ERROR(Launch(IssueTicket(), {op}));
  *seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() / iterations;
  return Status::Ok();
}

Status Communicator::Calibrate() {
  if (!options_.tune_file.empty()) {
    tuner_.chunk_bytes = options_.chunk_bytes;
    CHORUS_RETURN_IF_ERROR(ReadTuneFile(options_.tune_file, &tuner_));
    CHORUS_INFO("TUNE", "rank ", rank_, ": model from ", options_.tune_file);
    return Status::Ok();
  }
  if (nranks_ == 1) return Status::Ok();
  // A small and a larger ring allreduce give alpha and beta of the links
  // this communicator spans; a local reduction gives gamma. Times are
  // max-reduced so that every rank builds the same model and picks alike.
  // The large probe must outlast a link's burst allowance to see its rate.
  constexpr size_t kSmallBytes = 8, kLargeBytes = 2 * 1024 * 1024;
  double times[3] = {0, 0, 0};
  CHORUS_RETURN_IF_ERROR(TimeAllReduce(kSmallBytes, 8, &times[0]));
  CHORUS_RETURN_IF_ERROR(TimeAllReduce(kLargeBytes, 2, &times[1]));
  {
    std::vector<float> a(kLargeBytes / sizeof(float), 1.0f), b(a.size(), 2.0f);
    auto start = std::chrono::steady_clock::now();
    for (int i = 0; i < 4; ++i) ReduceKernel(a.data(), a.data(), b.data(), a.size(), chorusFloat32, ReduceOp::kSum);
    times[2] = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() / 4 / kLargeBytes;
  }
  CHORUS_RETURN_IF_ERROR(Launch(IssueTicket(), {InternalRingAllReduce(times, 3, chorusFloat64, ReduceOp::kMax)}));
  tuner_ = ModelFromRingTimings(nranks_, kSmallBytes, times[0], kLargeBytes, times[1], times[2], options_.chunk_bytes);
  CHORUS_INFO("TUNE", "rank ", rank_, ": measured alpha ", tuner_.alpha_s * 1e6, " us, bandwidth ",
              1e-9 / tuner_.beta_s_per_byte, " GB/s, reduction ", 1e-9 / std::max(1e-15, tuner_.gamma_s_per_byte),
              " GB/s");
  return Status::Ok();
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
  std::unique_lock<std::timed_mutex> transport_lock(transport_mutex_, std::defer_lock);
  if (!transport_lock.try_lock_for(std::chrono::milliseconds(options_.timeout_ms))) {
    return TimeoutError("rank ", rank_, ": the running operation did not stop within the timeout");
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

Status Communicator::CreatePreMulSum(const PreMulSumOp& op, chorusRedOp_t* handle) {
  std::lock_guard<std::mutex> lock(ops_mutex_);
  premul_ops_.push_back(op);
  premul_ops_.back().live = true;
  *handle = static_cast<chorusRedOp_t>(chorusNumOps + premul_ops_.size() - 1);
  return Status::Ok();
}

Status Communicator::DestroyPreMulSum(chorusRedOp_t handle) {
  std::lock_guard<std::mutex> lock(ops_mutex_);
  long index = static_cast<long>(handle) - chorusNumOps;
  if (index < 0 || index >= static_cast<long>(premul_ops_.size()) || !premul_ops_[index].live) {
    return InvalidArgument("op ", static_cast<int>(handle), " is not a live op made by chorusRedOpCreatePreMulSum");
  }
  premul_ops_[index].live = false;
  return Status::Ok();
}

Status Communicator::ResolveOp(chorusRedOp_t op, DataType dtype, Operation* operation) const {
  int value = static_cast<int>(op);
  operation->average = false;
  operation->premultiply = false;
  if (value >= 0 && value < chorusNumOps) {
    operation->args.op = value == chorusAvg ? ReduceOp::kSum : static_cast<ReduceOp>(value);
    operation->average = value == chorusAvg;
    return Status::Ok();
  }
  std::lock_guard<std::mutex> lock(ops_mutex_);
  long index = static_cast<long>(value) - chorusNumOps;
  if (index < 0 || index >= static_cast<long>(premul_ops_.size()) || !premul_ops_[index].live) {
    return InvalidArgument("unknown reduction op ", value);
  }
  const PreMulSumOp& premul = premul_ops_[index];
  if (premul.dtype != dtype) {
    return InvalidArgument("PreMulSum op ", value, " was created for ", DataTypeName(premul.dtype), ", not ",
                           DataTypeName(dtype));
  }
  operation->args.op = ReduceOp::kSum;
  operation->premultiply = true;
  std::memcpy(operation->scalar, premul.read_each_call ? premul.pointer : premul.value, DataTypeSize(dtype));
  return Status::Ok();
}

}  // namespace chorus
