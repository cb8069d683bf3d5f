#include "core/communicator_builder.h"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <string>
#include <vector>

#include "base/log.h"
#include "core/peer_info.h"
#include "core/rank_layout.h"
#include "core/transport_mux.h"
#include "kernels/reduce.h"
#include "topology/local_rank.h"
#include "topology/numa_groups.h"
#include "topology/thread_placement.h"
#include "transports/host_identity.h"
#include "transports/transport_registry.h"

namespace chorus {

// A friend of Communicator: fills the members that are fixed after
// creation (transport, topology, board, tuner model), one step at a time.
class CommunicatorBuilder {
 public:
  CommunicatorBuilder(const UniqueIdContents& id, int rank, int nranks, const CommOptions& options)
      : id_(id), rank_(rank), nranks_(nranks), options_(options),
        comm_(new Communicator(rank, nranks, options)) {}

  Status Build(std::unique_ptr<Communicator>* out) {
    deadline_ = Deadline::AfterMs(options_.timeout_ms);
    const TransportRegistry& registry = options_.transports != nullptr ? *options_.transports : BuiltinTransports();
    CHORUS_RETURN_IF_ERROR(registry.ParseSelection(options_.transport_selection, &order_));
    CHORUS_RETURN_IF_ERROR(SplitOverlays());
    CHORUS_RETURN_IF_ERROR(ReadHostTopology());
    CHORUS_RETURN_IF_ERROR(CreateTransports());
    CHORUS_RETURN_IF_ERROR(MeetPeers());
    CHORUS_RETURN_IF_ERROR(ConnectRoutes());
    comm_->BuildSelection();  // calibration already launches (pinned ring allreduces)
    if (options_.use_tuner) {
      CHORUS_RETURN_IF_ERROR(Calibrate().WithContext(StrCat("rank ", rank_, ": tuning")));
      comm_->BuildSelection();  // with the model
    }
    *out = std::move(comm_);
    return Status::Ok();
  }

 private:
  // The rank's host topology first: TCP places its listener by it (the NIC
  // nearest to the binding) and the host stream workers run on its CPUs.
  // I/O devices only where a selected transport will place itself by them.
  Status ReadHostTopology();
  // Every selected transport; one that cannot be created while others
  // remain is left out with a warning (shm on a /dev/shm too small for its
  // segment: its same-host peers then go over TCP). It publishes no address,
  // so every rank derives the same routes from the rendezvous table.
  Status SplitOverlays();
  Status CreateTransports();
  // The rendezvous: every rank's PeerInfo, the hosts and NUMA groups.
  Status MeetPeers();
  // Routes, connections, the board and the multiplexed transport.
  Status ConnectRoutes();
  Status ConnectOverlays(std::vector<int>* routes);
  // Fills the tuner's model from CHORUS_TUNE_FILE or a short measurement on
  // the new communicator (collective: every rank runs it).
  Status Calibrate();
  // Local reduction time per byte: a += b over `bytes` of float32.
  static double SecondsPerReducedByte(size_t bytes, int iterations);
  Status TimeAllReduce(size_t bytes, int iterations, double* seconds);
  // An in-place ring allreduce of the new communicator, for calibration.
  Operation InternalRingAllReduce(void* data, size_t count, DataType dtype, ReduceOp reduce) const;

  const UniqueIdContents& id_;
  const int rank_;
  const int nranks_;
  const CommOptions& options_;
  std::unique_ptr<Communicator> comm_;
  Deadline deadline_ = Deadline::AfterMs(0);
  std::vector<const TransportDescriptor*> order_;  // the selection, in preference order
  // order_ without the overlays (TransportDescriptor::overlay): the ones
  // routes are chosen from; then the overlays.
  std::vector<const TransportDescriptor*> carriers_;
  std::vector<const TransportDescriptor*> overlays_;
  TransportOptions transport_options_;
  HostTopology host_topology_;
  PeerInfo mine_;
  // The transports created, each with its descriptor.
  std::vector<const TransportDescriptor*> kinds_;
  std::vector<std::unique_ptr<Transport>> transports_;
  std::vector<PeerPublication> peers_;
};

Status CommunicatorBuilder::ReadHostTopology() {
  transport_options_.rank = rank_;
  transport_options_.nranks = nranks_;
  std::memcpy(transport_options_.secret, id_.secret, sizeof(id_.secret));
  transport_options_.ifname = options_.socket_ifname;
  transport_options_.timeout_ms = options_.timeout_ms;
  const bool io_devices = std::any_of(order_.begin(), order_.end(), [&](const TransportDescriptor* descriptor) {
    return descriptor->uses_io_devices != nullptr && descriptor->uses_io_devices(transport_options_);
  });
  CHORUS_RETURN_IF_ERROR(RankTopology(rank_, io_devices, &host_topology_)
                             .WithContext(StrCat("rank ", rank_, ": host topology")));
  transport_options_.topology = &host_topology_;
  transport_options_.local_rank = LauncherLocalRank(rank_);
  bool place_threads = false;
  CHORUS_RETURN_IF_ERROR(HelperThreadPlacementEnabled(&place_threads));
  if (place_threads) comm_->helper_cpus_ = HelperThreadCpus(host_topology_);
  return Status::Ok();
}

Status CommunicatorBuilder::SplitOverlays() {
  for (const TransportDescriptor* descriptor : order_) {
    (descriptor->overlay ? overlays_ : carriers_).push_back(descriptor);
  }
  if (carriers_.empty()) {
    return InvalidUsage("CHORUS_TRANSPORT=", options_.transport_selection, ": ", overlays_[0]->name,
                        " moves only some memory and needs a transport to carry the rest; list one with it (",
                        overlays_[0]->name, ",shm)");
  }
  return Status::Ok();
}

Status CommunicatorBuilder::CreateTransports() {
  mine_.host = HostIdentity();
  mine_.numa_node = BindingNumaNode(host_topology_);
  // Carriers first: the mux polls in this order and blocks in the first.
  std::vector<const TransportDescriptor*> creation = carriers_;
  creation.insert(creation.end(), overlays_.begin(), overlays_.end());
  for (const TransportDescriptor* descriptor : creation) {
    // Not for this machine (CUDA IPC without a GPU): `auto` leaves it out
    // quietly; a named one is tried, and its creation says why it fails.
    if (descriptor->available != nullptr && options_.transport_selection == "auto" &&
        !descriptor->available(*descriptor)) {
      continue;
    }
    std::unique_ptr<Transport> transport;
    Status status = descriptor->create(*descriptor, transport_options_, options_.transport_vars, &transport);
    if (!status.ok()) {
      if (order_.size() == 1) {
        return status.WithContext(StrCat("rank ", rank_, ": creating the ", descriptor->name, " transport"));
      }
      CHORUS_WARN("INIT", "rank ", rank_, ": ", descriptor->name, " transport unavailable, using the others of ",
                  options_.transport_selection, ": ", status.message());
      continue;
    }
    mine_.addresses.push_back({descriptor->name, transport->LocalAddress()});
    kinds_.push_back(descriptor);
    transports_.push_back(std::move(transport));
  }
  if (transports_.empty()) {
    return InvalidUsage("rank ", rank_, ": no transport of CHORUS_TRANSPORT=", options_.transport_selection,
                        " could be created");
  }
  return Status::Ok();
}

Status CommunicatorBuilder::MeetPeers() {
  std::vector<std::string> blobs;
  CHORUS_RETURN_IF_ERROR(Rendezvous(id_, rank_, nranks_, mine_.Encode(), deadline_, &blobs)
                             .WithContext(StrCat("rank ", rank_, ": rendezvous with ", id_.root_address)));
  peers_.resize(nranks_);
  for (int r = 0; r < nranks_; ++r) {
    PeerInfo info;
    CHORUS_RETURN_IF_ERROR(PeerInfo::Decode(blobs[r], &info).WithContext(StrCat("rank ", r)));
    comm_->numa_of_rank_.push_back(info.numa_node);  // kept before the publication is sliced off
    peers_[r] = std::move(info);
  }
  // Checked over the whole table, so that every rank fails alike.
  CHORUS_RETURN_IF_ERROR(CheckEveryPairReachable(carriers_, peers_, options_.transport_selection)
                             .WithContext(StrCat("rank ", rank_)));
  std::vector<std::string> hosts;
  Topology& topology = comm_->topology_;
  for (const PeerPublication& peer : peers_) {
    size_t index = std::find(hosts.begin(), hosts.end(), peer.host) - hosts.begin();
    if (index == hosts.size()) hosts.push_back(peer.host);
    topology.host_of_rank.push_back(static_cast<int>(index));
  }
  // NUMA domains as a level below the host, where some host has several.
  std::vector<int> groups = GroupRanksByNuma(topology.host_of_rank, comm_->numa_of_rank_);
  if (!groups.empty() && *std::max_element(groups.begin(), groups.end()) + 1 > static_cast<int>(hosts.size())) {
    topology.group_of_rank = std::move(groups);
  }
  if (rank_ == 0 && CurrentLogLevel() >= LogLevel::kInfo) {
    std::vector<std::string> host_of_rank;
    for (const PeerPublication& peer : peers_) host_of_rank.push_back(peer.host);
    CHORUS_INFO("INIT", "layout of ", nranks_, " ranks: ", DescribeRankLayout(host_of_rank, comm_->numa_of_rank_));
  }
  return Status::Ok();
}

Status CommunicatorBuilder::ConnectRoutes() {
  // Per peer, the first selected transport that reaches it.
  const std::vector<int> choice = ChooseTransports(carriers_, peers_, rank_);
  std::vector<int> routes(nranks_, -1);
  for (int r = 0; r < nranks_; ++r) {
    if (r == rank_) continue;
    if (choice[r] < 0) return InternalError("rank ", rank_, ": no transport reaches rank ", r);
    routes[r] = static_cast<int>(std::find(kinds_.begin(), kinds_.end(), carriers_[choice[r]]) - kinds_.begin());
  }
  // Each transport connects only to the peers routed to it (both sides
  // route alike, from the same table): with `auto` on one host TCP opens no
  // lanes at all, since shm serves every peer.
  for (size_t t = 0; t < transports_.size(); ++t) {
    if (kinds_[t]->overlay) continue;
    std::vector<std::string> addresses(nranks_);
    for (int r = 0; r < nranks_; ++r) {
      if (r == rank_ || routes[r] == static_cast<int>(t)) addresses[r] = *peers_[r].AddressFor(kinds_[t]->name);
    }
    CHORUS_RETURN_IF_ERROR(transports_[t]->Connect(addresses, deadline_)
                               .WithContext(StrCat("rank ", rank_, ": connecting over ", kinds_[t]->name)));
  }
  // The board: every rank has it or none, since it exists when all ranks
  // connected to one shm transport and all are routed to it, which every
  // rank reads from the same table.
  for (size_t t = 0; t < transports_.size() && nranks_ > 1; ++t) {
    shm::ShmBoard* board = transports_[t]->SharedBoard();
    const bool serves_all = std::all_of(routes.begin(), routes.end(), [&](int route) {
      return route == -1 || route == static_cast<int>(t);
    });
    if (board != nullptr && serves_all) comm_->board_allreduce_ = std::make_unique<BoardAllReduce>(board);
  }
  CHORUS_RETURN_IF_ERROR(ConnectOverlays(&routes));
  std::unique_ptr<TransportMux> mux;
  CHORUS_RETURN_IF_ERROR(TransportMux::Create(std::move(transports_), routes, rank_, nranks_, &mux));
  if (CurrentLogLevel() >= LogLevel::kInfo) {
    std::string routes_text;
    for (int r = 0; r < nranks_; ++r) {
      if (r != rank_) routes_text += StrCat(routes_text.empty() ? "" : ", ", r, ":", mux->TransportNameFor(r));
    }
    CHORUS_INFO("INIT", "rank ", rank_, "/", nranks_, " connected (", routes_text.empty() ? "alone" : routes_text,
                "; CHORUS_TRANSPORT=", options_.transport_selection, ", chunk ", options_.chunk_bytes, " B)");
  }
  comm_->AdoptTransport(std::move(mux));
  return Status::Ok();
}

// Each overlay connects to the peers it reaches, over their routes'
// endpoints, and takes their routes (both sides decide alike, from the same
// publications). One that reaches no peer still connects (to nobody), so
// that it releases what it made for peers (its segment's name).
Status CommunicatorBuilder::ConnectOverlays(std::vector<int>* routes) {
  const std::vector<int> carried = *routes;  // a peer takes the first overlay that reaches it
  for (size_t t = 0; t < transports_.size(); ++t) {
    if (!kinds_[t]->overlay) continue;
    std::vector<Carrier> carriers(nranks_);
    std::vector<std::string> addresses(nranks_);
    std::vector<int> overlaid;
    for (int r = 0; r < nranks_; ++r) {
      if (r == rank_) {
        addresses[r] = *peers_[r].AddressFor(kinds_[t]->name);
        continue;
      }
      if ((*routes)[r] != carried[r] || !Reaches(*kinds_[t], peers_[rank_], peers_[r])) continue;
      Transport* carrier = transports_[carried[r]].get();
      carriers[r] = {carrier, carrier->endpoint(r)};
      addresses[r] = *peers_[r].AddressFor(kinds_[t]->name);
      overlaid.push_back(r);
    }
    CHORUS_RETURN_IF_ERROR(transports_[t]->SetCarriers(carriers));
    CHORUS_RETURN_IF_ERROR(transports_[t]->Connect(addresses, deadline_)
                               .WithContext(StrCat("rank ", rank_, ": connecting over ", kinds_[t]->name)));
    for (int r : overlaid) (*routes)[r] = static_cast<int>(t);
  }
  return Status::Ok();
}

Operation CommunicatorBuilder::InternalRingAllReduce(void* data, size_t count, DataType dtype,
                                                     ReduceOp reduce) const {
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

Status CommunicatorBuilder::TimeAllReduce(size_t bytes, int iterations, double* seconds) {
  std::vector<float> buffer(bytes / sizeof(float), 1.0f);
  const Operation op = InternalRingAllReduce(buffer.data(), buffer.size(), chorusFloat32, ReduceOp::kSum);
  CHORUS_RETURN_IF_ERROR(comm_->Launch(comm_->IssueTicket(), {op}));  // warm-up: connections, caches
  auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < iterations; ++i) CHORUS_RETURN_IF_ERROR(comm_->Launch(comm_->IssueTicket(), {op}));
  *seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() / iterations;
  return Status::Ok();
}

double CommunicatorBuilder::SecondsPerReducedByte(size_t bytes, int iterations) {
  std::vector<float> a(bytes / sizeof(float), 1.0f), b(a.size(), 2.0f);
  auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < iterations; ++i) ReduceKernel(a.data(), a.data(), b.data(), a.size(), chorusFloat32, ReduceOp::kSum);
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() / iterations / bytes;
}

Status CommunicatorBuilder::Calibrate() {
  TunerModel& tuner = comm_->tuner_;
  if (!options_.tune_file.empty()) {
    tuner.chunk_bytes = options_.chunk_bytes;
    CHORUS_RETURN_IF_ERROR(ReadTuneFile(options_.tune_file, &tuner));
    CHORUS_INFO("TUNE", "rank ", rank_, ": model from ", options_.tune_file);
    return Status::Ok();
  }
  if (nranks_ == 1) return Status::Ok();
  // A small and a larger ring allreduce give alpha and beta of the links
  // this communicator spans; local reductions of a streamed and of a
  // cache-resident size give gamma and the cached gamma. Times are
  // max-reduced so that every rank builds the same model and picks alike.
  // The large probe must outlast a link's burst allowance to see its rate.
  constexpr size_t kSmallBytes = 8, kLargeBytes = 2 * 1024 * 1024, kCachedBytes = 32 * 1024;
  double times[4] = {0, 0, 0, 0};
  CHORUS_RETURN_IF_ERROR(TimeAllReduce(kSmallBytes, 8, &times[0]));
  CHORUS_RETURN_IF_ERROR(TimeAllReduce(kLargeBytes, 2, &times[1]));
  times[2] = SecondsPerReducedByte(kLargeBytes, 4);
  times[3] = SecondsPerReducedByte(kCachedBytes, 256);
  CHORUS_RETURN_IF_ERROR(
      comm_->Launch(comm_->IssueTicket(), {InternalRingAllReduce(times, 4, chorusFloat64, ReduceOp::kMax)}));
  tuner = ModelFromRingTimings(nranks_, kSmallBytes, times[0], kLargeBytes, times[1], times[2], options_.chunk_bytes);
  tuner.cached_gamma_s_per_byte = std::min(times[3], tuner.gamma_s_per_byte);
  auto gbps = [](double seconds_per_byte) { return 1e-9 / std::max(1e-15, seconds_per_byte); };
  CHORUS_INFO("TUNE", "rank ", rank_, ": measured alpha ", tuner.alpha_s * 1e6, " us, bandwidth ",
              gbps(tuner.beta_s_per_byte), " GB/s, reduction ", gbps(tuner.gamma_s_per_byte), " GB/s (",
              gbps(tuner.cached_gamma_s_per_byte), " GB/s to ", kCacheResidentBytes, " B)");
  return Status::Ok();
}

Status BuildCommunicator(const UniqueIdContents& id, int rank, int nranks, const CommOptions& options,
                         std::unique_ptr<Communicator>* out) {
  return CommunicatorBuilder(id, rank, nranks, options).Build(out);
}

}  // namespace chorus
