#include "core/comm_factory.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "base/config.h"
#include "base/log.h"
#include "base/siphash.h"
#include "bootstrap/heartbeat.h"
#include "bootstrap/reachability.h"
#include "core/communicator_builder.h"
#include "core/launcher.h"

namespace chorus {

Status MakeUniqueId(chorusUniqueId* id) {
  Settings settings;
  CHORUS_RETURN_IF_ERROR(Settings::FromEnvironment(&settings));
  UniqueIdContents contents;
  CHORUS_RETURN_IF_ERROR(StartRendezvousRoot(settings.socket_ifname, settings.timeout_ms, &contents));
  return EncodeUniqueId(contents, id);
}

Status ResolveOptions(const chorusConfig_t* config, CommOptions* options) {
  Settings settings;
  CHORUS_RETURN_IF_ERROR(Settings::FromEnvironment(&settings));
  options->timeout_ms = settings.timeout_ms;
  options->chunk_bytes = settings.chunk_bytes;
  options->device_chunk_bytes = settings.device_chunk_bytes;
  options->algo_spec = settings.algo;
  options->socket_ifname = settings.socket_ifname;
  const TransportRegistry& registry = options->transports != nullptr ? *options->transports : BuiltinTransports();
  options->transport_selection = settings.transport;
  std::vector<const TransportDescriptor*> order;
  CHORUS_RETURN_IF_ERROR(registry.ParseSelection(options->transport_selection, &order));
  options->transport_vars = TransportVars();
  CHORUS_RETURN_IF_ERROR(registry.CaptureVars(&options->transport_vars));
  options->use_tuner = settings.tuner == "model";
  options->tune_file = settings.tune_file;
  options->check_calls = settings.check_calls;
  options->trace_buffer = settings.trace_buffer;
  options->trace_file = settings.trace_file;
  options->heartbeat_ms = settings.heartbeat_ms;
  if (config != nullptr) {
    if (config->magic != CHORUS_CONFIG_MAGIC || config->size < sizeof(chorusConfig_t)) {
      return InvalidArgument("config was not initialised with CHORUS_CONFIG_INITIALIZER");
    }
    if (config->timeoutMs == 0) return InvalidArgument("config timeoutMs must be positive (or <0 for the default)");
    if (config->timeoutMs > 0) options->timeout_ms = config->timeoutMs;
    if (config->nSocks == 0 || config->nSocks > 64) return InvalidArgument("config nSocks must be in 1..64");
    // The public config's nSocks is the TCP transport's CHORUS_NSOCKS.
    if (config->nSocks > 0) options->transport_vars.Set("CHORUS_NSOCKS", std::to_string(config->nSocks));
    if (config->chunkBytes >= 0 && config->chunkBytes < 64) return InvalidArgument("config chunkBytes must be >= 64");
    if (config->chunkBytes >= 64) options->chunk_bytes = static_cast<size_t>(config->chunkBytes);
    if (config->algo != nullptr) options->algo_spec = config->algo;
  }
  // Chunks are whole multiples of every element size on every rank.
  options->chunk_bytes = options->chunk_bytes / 64 * 64;
  options->device_chunk_bytes = options->device_chunk_bytes / 64 * 64;
  return ParseAlgorithmSpec(options->algo_spec, &options->algorithms);
}

namespace {

// An allgather on `comm` through the ordinary launch path.
Status AllGatherBytes(chorusComm* comm, const void* mine, size_t bytes, void* all) {
  PendingCall call;
  call.comm = comm;
  call.op.kind = Operation::Kind::kCollective;
  call.op.args.coll = Collective::kAllGather;
  call.op.args.count = bytes;
  call.op.args.dtype = chorusUint8;
  call.op.args.nranks = comm->impl->nranks();
  call.op.args.rank = comm->impl->rank();
  call.op.send = mine;
  call.op.recv = all;
  return LaunchTogether({call});
}

// Every rank learns every rank's recovery listener (one small allgather at
// creation), so that shrink needs nothing from the transports.
Status ShareRecoveryAddresses(chorusComm* comm, RecoveryEndpoint* endpoint) {
  const int nranks = comm->impl->nranks();
  char mine[kRecoveryAddressBytes] = {};
  std::memcpy(mine, endpoint->address.data(), endpoint->address.size());
  std::vector<char> all(kRecoveryAddressBytes * static_cast<size_t>(nranks));
  CHORUS_RETURN_IF_ERROR(AllGatherBytes(comm, mine, sizeof(mine), all.data()));
  endpoint->rank = comm->impl->rank();
  endpoint->nranks = nranks;
  endpoint->addresses.clear();
  for (int r = 0; r < nranks; ++r) {
    const char* slot = all.data() + kRecoveryAddressBytes * static_cast<size_t>(r);
    endpoint->addresses.emplace_back(slot, strnlen(slot, kRecoveryAddressBytes));
  }
  return Status::Ok();
}

// After a failed collective, the ranks that no longer answer at all
// (bootstrap/reachability.h): every other rank in communicators of up to
// kProbeEveryRankUpTo ranks (a stalled ring's root cause may be anywhere),
// else the ranks the launch still waited for, so that a large job does not
// flood every listener.
constexpr int kProbeEveryRankUpTo = 64;
constexpr int kProbeWindowMs = 500;

std::string DescribeUnansweringRanks(int rank, const std::vector<std::string>& addresses, const WaitingPeers& waiting) {
  const int nranks = static_cast<int>(addresses.size());
  std::vector<int> ranks;
  if (nranks <= kProbeEveryRankUpTo) {
    for (int r = 0; r < nranks; ++r) {
      if (r != rank) ranks.push_back(r);
    }
  } else {
    for (int i = 0; i < waiting.nrecv; ++i) ranks.push_back(waiting.recv_from[i]);
    for (int i = 0; i < waiting.nsend; ++i) ranks.push_back(waiting.send_to[i]);
    std::sort(ranks.begin(), ranks.end());
    ranks.erase(std::unique(ranks.begin(), ranks.end()), ranks.end());
  }
  Reachability reachability;
  if (ranks.empty() || !ProbeRanks(addresses, ranks, kProbeWindowMs, &reachability).ok()) return "";
  return DescribeReachability(reachability, kProbeWindowMs);
}

}  // namespace

namespace {

// Opens the heartbeat on the interface of the recovery listener and shares
// its address (one small allgather); `*addresses` are every rank's, for
// Heartbeat::Start.
Status OpenHeartbeat(chorusComm* comm, const RecoveryEndpoint& endpoint, int period_ms,
                     std::unique_ptr<Heartbeat>* out, std::vector<std::string>* addresses) {
  const int rank = comm->impl->rank(), nranks = comm->impl->nranks();
  std::unique_ptr<Heartbeat> heartbeat;
  CHORUS_RETURN_IF_ERROR(Heartbeat::Open(endpoint.address, rank, nranks, endpoint.secret, period_ms, &heartbeat));
  char mine[kRecoveryAddressBytes] = {};
  if (heartbeat->address().size() >= sizeof(mine)) {
    return InternalError("heartbeat address '", heartbeat->address(), "' is too long");
  }
  std::memcpy(mine, heartbeat->address().data(), heartbeat->address().size());
  std::vector<char> all(kRecoveryAddressBytes * static_cast<size_t>(nranks));
  CHORUS_RETURN_IF_ERROR(AllGatherBytes(comm, mine, sizeof(mine), all.data()));
  addresses->clear();
  for (int r = 0; r < nranks; ++r) {
    const char* slot = all.data() + kRecoveryAddressBytes * static_cast<size_t>(r);
    addresses->emplace_back(slot, strnlen(slot, kRecoveryAddressBytes));
  }
  *out = std::move(heartbeat);
  return Status::Ok();
}

// Starts the heartbeat's thread: from now on a silent peer fails the
// communicator, which reads the flight recorder and the call checker, so
// they are in place before.
Status StartHeartbeat(chorusComm* comm, std::unique_ptr<Heartbeat> heartbeat, const std::vector<std::string>& addresses) {
  Communicator* impl = comm->impl.get();
  CHORUS_RETURN_IF_ERROR(heartbeat->Start(addresses, [impl](const Status& silent) { impl->FailFromOutside(silent); }));
  comm->heartbeat = std::move(heartbeat);
  return Status::Ok();
}

}  // namespace

Status CreateCommWithOptions(const UniqueIdContents& id, int nranks, int rank, const CommOptions& options,
                             std::unique_ptr<chorusComm>* out, std::shared_ptr<RecoveryEndpoint> lineage) {
  if (nranks < 1) return InvalidArgument("nranks ", nranks, " must be at least 1");
  if (rank < 0 || rank >= nranks) return InvalidArgument("rank ", rank, " is out of range [0, ", nranks, ")");
  auto shell = std::make_unique<chorusComm>();
  auto endpoint = std::make_shared<RecoveryEndpoint>();
  endpoint->predecessor = std::move(lineage);
  CHORUS_RETURN_IF_ERROR(OpenRecoveryListener(options.socket_ifname, endpoint.get())
                             .WithContext(StrCat("rank ", rank, ": opening the recovery listener")));
  std::memcpy(endpoint->secret, id.secret, sizeof(endpoint->secret));
  CHORUS_RETURN_IF_ERROR(BuildCommunicator(id, rank, nranks, options, &shell->impl));
  CHORUS_RETURN_IF_ERROR(ShareRecoveryAddresses(shell.get(), endpoint.get())
                             .WithContext(StrCat("rank ", rank, ": sharing recovery addresses")));
  shell->impl->SetFailureDiagnosis([rank, addresses = endpoint->addresses](const WaitingPeers& waiting) {
    return DescribeUnansweringRanks(rank, addresses, waiting);
  });
  std::unique_ptr<Heartbeat> heartbeat;
  std::vector<std::string> heartbeat_addresses;
  if (options.heartbeat_ms > 0 && nranks > 1) {
    CHORUS_RETURN_IF_ERROR(OpenHeartbeat(shell.get(), *endpoint, options.heartbeat_ms, &heartbeat, &heartbeat_addresses)
                               .WithContext(StrCat("rank ", rank, ": starting the heartbeat")));
  }
  // From the user's first call on (creation's own collectives are alike
  // everywhere), so that call numbers count the user's collectives.
  if (options.check_calls) shell->impl->StartCheckingCalls();
  // Names the communicator in trace dumps alike on every rank without
  // revealing the secret.
  static const char kTraceLabel[] = "chorus flight recorder";
  shell->impl->StartRecording(SipHash64(id.secret, kTraceLabel, sizeof(kTraceLabel)));
  if (heartbeat != nullptr) {
    CHORUS_RETURN_IF_ERROR(StartHeartbeat(shell.get(), std::move(heartbeat), heartbeat_addresses)
                               .WithContext(StrCat("rank ", rank, ": starting the heartbeat")));
  }
  shell->recovery = std::move(endpoint);
  *out = std::move(shell);
  return Status::Ok();
}

Status CreateComm(const chorusUniqueId& id, int nranks, int rank, const chorusConfig_t* config,
                  std::unique_ptr<chorusComm>* out) {
  if (nranks < 1) return InvalidArgument("nranks ", nranks, " must be at least 1");
  if (rank < 0 || rank >= nranks) return InvalidArgument("rank ", rank, " is out of range [0, ", nranks, ")");
  UniqueIdContents contents;
  CHORUS_RETURN_IF_ERROR(DecodeUniqueId(id, &contents));
  CommOptions options;
  CHORUS_RETURN_IF_ERROR(ResolveOptions(config, &options));
  return CreateCommWithOptions(contents, nranks, rank, options, out);
}

namespace {

// First launcher convention present in the environment.
Status RankFromEnvironment(int* rank, int* nranks, std::string* source) {
  static const char* const kPairs[][2] = {{"OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE"},
                                          {"PMI_RANK", "PMI_SIZE"},
                                          {"SLURM_PROCID", "SLURM_NTASKS"},
                                          {"RANK", "WORLD_SIZE"}};
  for (const auto& pair : kPairs) {
    const char* r = std::getenv(pair[0]);
    const char* n = std::getenv(pair[1]);
    if (r == nullptr || n == nullptr) continue;
    long long rank_value = 0, size_value = 0;
    CHORUS_RETURN_IF_ERROR(ParseInt(r, pair[0], &rank_value));
    CHORUS_RETURN_IF_ERROR(ParseInt(n, pair[1], &size_value));
    *rank = static_cast<int>(rank_value);
    *nranks = static_cast<int>(size_value);
    *source = StrCat(pair[0], "/", pair[1]);
    return Status::Ok();
  }
  return InvalidUsage("no rank in the environment: set OMPI_COMM_WORLD_RANK/SIZE (mpirun), PMI_RANK/PMI_SIZE, "
                      "SLURM_PROCID/SLURM_NTASKS (srun) or RANK/WORLD_SIZE (torchrun)");
}

// A 128-bit value mixed from text; only used for the documented weak
// fallback secret.
void MixSecret(const std::string& text, uint8_t out[16]) {
  uint64_t a = 0xcbf29ce484222325ull, b = 0x84222325cbf29ce4ull;
  for (unsigned char c : text) {
    a = (a ^ c) * 0x100000001b3ull;
    b = (b ^ c ^ (a >> 29)) * 0x9e3779b97f4a7c15ull;
  }
  std::memcpy(out, &a, 8);
  std::memcpy(out + 8, &b, 8);
}

Status SecretFromEnvironment(const std::string& root, uint8_t secret[16]) {
  std::string hex = EnvValue("CHORUS_SECRET");
  if (!hex.empty()) return ParseHex128(hex, "CHORUS_SECRET", secret);
  std::string job;
  for (const char* name : {"SLURM_JOB_ID", "SLURM_STEP_ID", "OMPI_MCA_ess_base_jobid", "TORCHELASTIC_RUN_ID"}) {
    if (const char* value = std::getenv(name)) job += StrCat(name, "=", value, ";");
  }
  CHORUS_WARN("INIT", "CHORUS_SECRET is not set: deriving the connection secret from ",
              job.empty() ? "the rendezvous address" : "the launcher's job id",
              "; anyone who knows it can join. Set CHORUS_SECRET (32 hex digits) on every rank.");
  MixSecret("chorus;" + job + root, secret);
  return Status::Ok();
}

}  // namespace

Status CreateCommFromEnvironment(const chorusConfig_t* config, std::unique_ptr<chorusComm>* out) {
  int rank = 0, nranks = 0;
  std::string source;
  CHORUS_RETURN_IF_ERROR(RankFromEnvironment(&rank, &nranks, &source));
  UniqueIdContents contents;
  contents.root_address = EnvValue("CHORUS_ROOT");
  if (contents.root_address.empty()) {
    const char* addr = std::getenv("MASTER_ADDR");
    const char* port = std::getenv("MASTER_PORT");
    if (addr == nullptr || port == nullptr) {
      return InvalidUsage("no rendezvous address: set CHORUS_ROOT=host:port or MASTER_ADDR and MASTER_PORT");
    }
    // A bare IPv6 address needs brackets before the port; one given with
    // brackets already keeps them.
    bool bare_ipv6 = std::strchr(addr, ':') != nullptr && addr[0] != '[';
    contents.root_address = bare_ipv6 ? StrCat("[", addr, "]:", port) : StrCat(addr, ":", port);
  }
  CHORUS_RETURN_IF_ERROR(SecretFromEnvironment(contents.root_address, contents.secret));
  CommOptions options;
  CHORUS_RETURN_IF_ERROR(ResolveOptions(config, &options));
  if (nranks < 1) return InvalidArgument("nranks ", nranks, " from ", source, " must be at least 1");
  if (rank < 0 || rank >= nranks) return InvalidArgument("rank ", rank, " from ", source, " is out of range");
  CHORUS_INFO("INIT", "rank ", rank, "/", nranks, " from ", source, ", rendezvous at ", contents.root_address);
  std::shared_future<void> root_finished;
  if (rank == 0) CHORUS_RETURN_IF_ERROR(StartRendezvousRootAt(contents, options.timeout_ms, &root_finished));
  Status status = CreateCommWithOptions(contents, nranks, rank, options, out);
  if (!status.ok() && root_finished.valid()) {
    // This process hosts the root: stay until it has told every rank why the
    // rendezvous failed (bounded by its own timeout), so they need not wait
    // for their deadline after we exit.
    root_finished.wait_for(std::chrono::milliseconds(options.timeout_ms));
  }
  return status;
}

Status SplitComm(chorusComm* parent, int color, int key, const chorusConfig_t* config,
                 std::unique_ptr<chorusComm>* out) {
  Communicator& comm = *parent->impl;
  const int nranks = comm.nranks(), rank = comm.rank();
  // Bad input fails here, before this rank takes part in any exchange.
  CommOptions options = comm.options();
  if (config != nullptr) CHORUS_RETURN_IF_ERROR(ResolveOptions(config, &options));
  int32_t mine[2] = {color, key};
  std::vector<int32_t> all(2 * static_cast<size_t>(nranks));
  CHORUS_RETURN_IF_ERROR(AllGatherBytes(parent, mine, sizeof(mine), all.data()));

  // Members of my colour ordered by (key, parent rank); the first leads.
  std::vector<int> members;
  for (int r = 0; r < nranks; ++r) {
    if (all[2 * r] == color) members.push_back(r);
  }
  std::stable_sort(members.begin(), members.end(), [&](int a, int b) { return all[2 * a + 1] < all[2 * b + 1]; });
  bool leader = color != CHORUS_SPLIT_NOCOLOR && !members.empty() && members.front() == rank;
  chorusUniqueId my_id;
  std::memset(&my_id, 0, sizeof(my_id));
  if (leader) {
    UniqueIdContents contents;
    CHORUS_RETURN_IF_ERROR(StartRendezvousRoot(options.socket_ifname, options.timeout_ms, &contents));
    CHORUS_RETURN_IF_ERROR(EncodeUniqueId(contents, &my_id));
  }
  std::vector<chorusUniqueId> ids(nranks);
  CHORUS_RETURN_IF_ERROR(AllGatherBytes(parent, &my_id, sizeof(my_id), ids.data()));
  if (color == CHORUS_SPLIT_NOCOLOR) return Status::Ok();

  int new_rank = static_cast<int>(std::find(members.begin(), members.end(), rank) - members.begin());
  UniqueIdContents contents;
  CHORUS_RETURN_IF_ERROR(DecodeUniqueId(ids[members.front()], &contents));
  // Members of a shrink agreed on `parent` keep answering its late ranks.
  return CreateCommWithOptions(contents, static_cast<int>(members.size()), new_rank, options, out,
                               LineageToKeep(parent->recovery));
}

Status ShrinkComm(chorusComm* comm, const chorusConfig_t* config, std::unique_ptr<chorusComm>* out) {
  if (comm->recovery == nullptr) return InternalError("the communicator has no recovery endpoint");
  CommOptions options = comm->impl->options();
  if (config != nullptr) CHORUS_RETURN_IF_ERROR(ResolveOptions(config, &options));
  // The root stops waiting for silent ranks at 3/4 of the timeout, so that
  // every member still hears its answer before its own deadline.
  const Deadline deadline = Deadline::AfterMs(options.timeout_ms);
  const Deadline gather_deadline = Deadline::AfterMs(options.timeout_ms / 4 * 3);
  ShrinkOutcome outcome;
  CHORUS_RETURN_IF_ERROR(AgreeOnSurvivors(*comm->recovery, gather_deadline, deadline, &outcome));
  const int old_rank = comm->recovery->rank, new_nranks = static_cast<int>(outcome.survivors.size());
  CHORUS_INFO("SHRINK", "rank ", old_rank, " of ", comm->recovery->nranks, " becomes rank ", outcome.new_rank, " of ",
              new_nranks);
  // The new communicator keeps the old endpoint, whose responder tells late
  // ranks that they were left out, after the old communicator is destroyed.
  return CreateCommWithOptions(outcome.id, new_nranks, outcome.new_rank, options, out,
                               LineageToKeep(comm->recovery))
      .WithContext(StrCat("rank ", old_rank, ": creating the shrunk communicator of ", new_nranks, " ranks"));
}

}  // namespace chorus
