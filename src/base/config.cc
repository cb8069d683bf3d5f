#include "base/config.h"

#include <cassert>
#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <string>

#include "base/algorithm_descriptor.h"

namespace chorus {

namespace {

// CHORUS_ALGO's help names every algorithm of the descriptor table. Built
// once, then constant.
const char* AlgoHelp() {
  static const std::string kHelp = "Force algorithms: " + AlgorithmNameList(/*with_auto=*/false, ", ") +
                                   ", or per collective 'allreduce:hd;broadcast:chain'.";
  return kHelp.c_str();
}

}  // namespace

const std::vector<EnvVarSpec>& AllEnvVars() {
  static const std::vector<EnvVarSpec> kVars = {
      {"CHORUS_DEBUG", "level", "WARN", "Log level: NONE, WARN, INFO or TRACE."},
      {"CHORUS_DEBUG_SUBSYS", "string", "", "Comma-separated subsystems to log (INIT, NET, TUNE, COLL, SHRINK, MPI); empty = all."},
      {"CHORUS_DEBUG_FILE", "string", "", "Log to this file instead of stderr; %h = hostname, %p = pid."},
      {"CHORUS_TIMEOUT_MS", "int", "300000", "Deadline in ms of every wait (init, collectives, connections)."},
      {"CHORUS_NSOCKS", "int", "2", "TCP sockets per peer; messages are spread over them."},
      {"CHORUS_SOCKET_IFNAME", "string", "",
       "Interfaces for traffic: prefixes (eth,ib), ^ to exclude (^lo,docker), = for exact (=eth0). "
       "Empty: first non-loopback interface that is up, else loopback."},
      {"CHORUS_SOCKET_RCVBUF", "bytes", "0",
       "SO_RCVBUF of every TCP data socket (set before connect/listen; the kernel reports twice it). Bounds how "
       "far TCP reads ahead of the receives. 0: kernel autotuning (tcp_rmem); at most 1023M."},
      {"CHORUS_SOCKET_SNDBUF", "bytes", "0",
       "SO_SNDBUF of every TCP data socket, as CHORUS_SOCKET_RCVBUF. 0: kernel autotuning (tcp_wmem); at most 1023M."},
      {"CHORUS_TRANSPORT", "string", "auto",
       "Transports, in order: auto (the best per peer: shared memory between ranks of one host and network "
       "namespace, TCP otherwise, and where a GPU is present cuda_ipc over shared memory for device buffers), one "
       "name (only it: tcp, shm, ucx when built with UCX, ibverbs or ib when built with libibverbs; a peer it "
       "cannot reach fails creation), or an ordered list (shm,tcp: for each peer the first that reaches it; "
       "cuda_ipc,shm: device buffers of same-host peers by CUDA IPC, the rest over shm)."},
      {"CHORUS_UCX_TLS", "string", "",
       "UCX transports the ucx transport may use (UCX_TLS syntax: tcp, posix,cma,tcp, ^tcp); set for Chorus's UCX "
       "context only. Empty: UCX_TLS, else all UCX finds."},
      {"CHORUS_UCX_KEEPALIVE_MS", "int", "1000",
       "ucx transport: interval of UCX's endpoint keepalive (UCX_KEEPALIVE_INTERVAL) for Chorus's UCX context; "
       "1..3600000."},
      {"CHORUS_IB_HCA", "string", "",
       "ibverbs transport: RDMA devices and ports to use, NCCL_IB_HCA syntax: name prefixes with optional :port "
       "(mlx5_0:1,mlx5_1), ^ to exclude (^mlx5_2), = for exact names (=mlx5_0). Empty: every device; ranks of a host "
       "spread over the allowed active ports by local rank."},
      {"CHORUS_IB_GID_INDEX", "int", "-1",
       "ibverbs transport: GID index of the port (RoCE addressing). -1: the first RoCE v2 GID holding an IPv4 "
       "address, else 0."},
      {"CHORUS_IB_SLOT_BYTES", "bytes", "256K",
       "ibverbs transport: size of one receive slot (a 64-byte header and the chunk); messages are cut into chunks "
       "of it. A multiple of 4K in 4K..64M, alike on every rank."},
      {"CHORUS_IB_SLOTS", "int", "16",
       "ibverbs transport: slots in each sender's receive ring on its peer (the credits it may have in flight); "
       "2..1024, alike on every rank. Each peer this rank sends slot messages to costs slots x slot bytes of staging, "
       "each peer that sends them here as much for its ring, made on first use."},
      {"CHORUS_IB_DIRECT_BYTES", "bytes", "64K",
       "ibverbs transport: a receive of at least this many bytes into memory registered with chorusCommRegister "
       "(no combining) is offered to the sender, which writes it by RDMA straight into that memory when its own "
       "buffer is registered too: no staging slot, no copy out. 0: never."},
      {"CHORUS_IB_TIMEOUT", "int", "18",
       "ibverbs transport: RC ack timeout exponent (4.096 us x 2^value per try, as NCCL_IB_TIMEOUT); with "
       "CHORUS_IB_RETRY_CNT it bounds how long a dead peer takes to be noticed; 1..31."},
      {"CHORUS_IB_RETRY_CNT", "int", "6",
       "ibverbs transport: RC retries before a peer counts as dead; 0..7 (soft-RoCE, rxe, retries 7 forever and "
       "would never notice a dead peer)."},
      {"CHORUS_SHM_RING_BYTES", "bytes", "0",
       "Shared-memory ring per sender; each rank's segment in /dev/shm holds one per rank. 0 or auto: 1M up to "
       "16 ranks, then 16M / ranks, at least 256K; else a multiple of 64 in 256K..1G. Lower it when /dev/shm is "
       "small (Docker's default is 64M)."},
      {"CHORUS_SHARED_HEAP", "int", "1",
       "1: chorusMemAlloc (and, under libchorus_mpi.so, malloc blocks of CHORUS_MPI_HEAP_MIN_BYTES or more) takes "
       "memory from a heap that ranks in other processes on this host map and read in place, so large messages "
       "from it cost one copy instead of two through the shm ring; 0: chorusMemAlloc fails and those blocks come "
       "from malloc."},
      {"CHORUS_CHUNK_BYTES", "bytes", "512K", "Pipeline chunk size of the schedule executor (same on all ranks)."},
      {"CHORUS_DEVICE_CHUNK_BYTES", "bytes", "8M",
       "Chunk size of device-buffer messages a transport moves itself (CUDA IPC pulls: each chunk is one "
       "synchronous GPU copy or reduce, so larger than CHORUS_CHUNK_BYTES; same on all ranks)."},
      {"CHORUS_KERNELS", "string", "auto",
       "CPU reduction kernels: auto (best the CPU supports), avx512, avx2 or portable. "
       "An ISA the CPU lacks falls back to the best available."},
      {"CHORUS_TUNER", "string", "model",
       "model: pick each call's algorithm by the alpha-beta-gamma cost model, with link parameters measured at "
       "communicator creation (or from CHORUS_TUNE_FILE); static: a fixed size rule."},
      {"CHORUS_TUNE_FILE", "string", "",
       "File with 'alpha_us=<x> bandwidth_GBps=<y> gamma_GBps=<z>' to use instead of measuring at creation."},
      {"CHORUS_ALGO", "string", "", AlgoHelp()},
      {"CHORUS_CHECK", "int", "0",
       "1: before data moves, every collective is checked across ranks (same collective, count, datatype, op, "
       "root and sequence number); a mismatch fails the call on every rank naming both sides. Set it alike on "
       "every rank. Point-to-point calls are not checked."},
      {"CHORUS_TRACE_BUFFER", "int", "256",
       "Flight recorder: each communicator keeps its last N operations (collective, shape, algorithm, state, "
       "times, what a failed one waited for) in a ring allocated once; 0 turns it off (docs/debugging.md)."},
      {"CHORUS_TRACE_FILE", "string", "",
       "Flight recorder dumps go here (JSON lines; %h = hostname, %p = pid, %r = rank): written on a timeout, "
       "a failure, an abort and on SIGUSR1 (the handler is installed only when this is set). Empty: dumps only "
       "through chorusCommDumpTrace with a path. Read them with chorus_trace."},
      {"CHORUS_HEARTBEAT_MS", "int", "0",
       "Heartbeat period: every rank sends each peer a small authenticated UDP datagram this often, and a peer "
       "silent for 4 periods (stopped, hung or cut off) fails the communicator naming it, long before "
       "CHORUS_TIMEOUT_MS; 0: off. Set it alike on every rank; 1000 or more on loaded hosts."},
      {"CHORUS_TOPO_FILE", "string", "",
       "hwloc XML file describing this host, used instead of discovering it (as NCCL_TOPO_FILE; write one with "
       "CHORUS_TOPO_DUMP_FILE or hwloc's lstopo). Needs a build with hwloc."},
      {"CHORUS_TOPO_DUMP_FILE", "string", "",
       "Write the topology each communicator discovers (or loads) to this file as hwloc XML. Needs hwloc."},
      {"CHORUS_THREAD_AFFINITY", "int", "1",
       "1: a rank bound to some CPUs runs its host streams' worker threads on the NUMA domains of its binding; "
       "0: threads keep the affinity they inherit. Unbound ranks are never changed."},
      {"CHORUS_ROOT", "string", "", "host:port of the rendezvous for chorusCommInitFromEnv (else MASTER_ADDR/MASTER_PORT)."},
      {"CHORUS_SECRET", "hex128", "",
       "32 hex digits shared by all ranks for chorusCommInitFromEnv; authenticates every connection."},
  };
  return kVars;
}

std::string EnvValue(const char* name) {
  for (const EnvVarSpec& spec : AllEnvVars()) {
    if (std::strcmp(spec.name, name) == 0) {
      const char* value = std::getenv(name);
      return value != nullptr ? std::string(value) : std::string(spec.default_value);
    }
  }
  assert(false && "undeclared CHORUS_ variable");
  return "";
}

Status ParseInt(const std::string& text, const char* what, long long* out) {
  errno = 0;
  char* end = nullptr;
  long long value = std::strtoll(text.c_str(), &end, 10);
  if (text.empty() || errno != 0 || *end != '\0') {
    return InvalidArgument(what, ": '", text, "' is not an integer");
  }
  *out = value;
  return Status::Ok();
}

Status ParseBytes(const std::string& text, const char* what, size_t* out) {
  errno = 0;
  char* end = nullptr;
  // strtoull skips blanks and accepts a sign; a size starts with a digit.
  if (text.empty() || !std::isdigit(static_cast<unsigned char>(text[0]))) {
    return InvalidArgument(what, ": '", text, "' is not a size");
  }
  unsigned long long value = std::strtoull(text.c_str(), &end, 10);
  if (errno != 0) return InvalidArgument(what, ": '", text, "' is too large");
  unsigned long long scale = 1;
  switch (std::toupper(static_cast<unsigned char>(*end))) {
    case '\0': break;
    case 'K': scale = 1ull << 10; ++end; break;
    case 'M': scale = 1ull << 20; ++end; break;
    case 'G': scale = 1ull << 30; ++end; break;
    default: return InvalidArgument(what, ": '", text, "' has an unknown suffix");
  }
  if (*end == 'B' || *end == 'b') ++end;
  if (*end != '\0') return InvalidArgument(what, ": '", text, "' is not a size");
  if (value > SIZE_MAX / scale) return InvalidArgument(what, ": '", text, "' is too large");
  *out = static_cast<size_t>(value * scale);
  return Status::Ok();
}

Status ParseHex128(const std::string& text, const char* what, unsigned char out[16]) {
  if (text.size() != 32) return InvalidArgument(what, ": expected 32 hex digits, got ", text.size(), " characters");
  for (size_t i = 0; i < 16; ++i) {
    unsigned value = 0;
    for (size_t j = 0; j < 2; ++j) {
      char c = static_cast<char>(std::tolower(static_cast<unsigned char>(text[2 * i + j])));
      if (c >= '0' && c <= '9') value = value * 16 + static_cast<unsigned>(c - '0');
      else if (c >= 'a' && c <= 'f') value = value * 16 + static_cast<unsigned>(c - 'a' + 10);
      else return InvalidArgument(what, ": '", text[2 * i + j], "' is not a hex digit");
    }
    out[i] = static_cast<unsigned char>(value);
  }
  return Status::Ok();
}

Status Settings::FromEnvironment(Settings* out) {
  Settings settings;
  long long value = 0;
  CHORUS_RETURN_IF_ERROR(ParseInt(EnvValue("CHORUS_TIMEOUT_MS"), "CHORUS_TIMEOUT_MS", &value));
  if (value <= 0 || value > (1ll << 31) - 1) return InvalidArgument("CHORUS_TIMEOUT_MS must be in 1..2^31-1");
  settings.timeout_ms = static_cast<int>(value);
  CHORUS_RETURN_IF_ERROR(ParseBytes(EnvValue("CHORUS_CHUNK_BYTES"), "CHORUS_CHUNK_BYTES", &settings.chunk_bytes));
  if (settings.chunk_bytes < 64) return InvalidArgument("CHORUS_CHUNK_BYTES must be at least 64");
  CHORUS_RETURN_IF_ERROR(
      ParseBytes(EnvValue("CHORUS_DEVICE_CHUNK_BYTES"), "CHORUS_DEVICE_CHUNK_BYTES", &settings.device_chunk_bytes));
  if (settings.device_chunk_bytes < 64) return InvalidArgument("CHORUS_DEVICE_CHUNK_BYTES must be at least 64");
  settings.algo = EnvValue("CHORUS_ALGO");
  settings.socket_ifname = EnvValue("CHORUS_SOCKET_IFNAME");
  settings.transport = EnvValue("CHORUS_TRANSPORT");
  settings.tuner = EnvValue("CHORUS_TUNER");
  if (settings.tuner != "model" && settings.tuner != "static") {
    return InvalidArgument("CHORUS_TUNER must be model or static, not '", settings.tuner, "'");
  }
  settings.tune_file = EnvValue("CHORUS_TUNE_FILE");
  const std::string check = EnvValue("CHORUS_CHECK");
  if (check != "0" && check != "1") return InvalidArgument("CHORUS_CHECK must be 0 or 1, not '", check, "'");
  settings.check_calls = check == "1";
  CHORUS_RETURN_IF_ERROR(ParseInt(EnvValue("CHORUS_TRACE_BUFFER"), "CHORUS_TRACE_BUFFER", &value));
  if (value < 0 || value > (1 << 20)) return InvalidArgument("CHORUS_TRACE_BUFFER must be in 0..1048576");
  settings.trace_buffer = static_cast<size_t>(value);
  settings.trace_file = EnvValue("CHORUS_TRACE_FILE");
  CHORUS_RETURN_IF_ERROR(ParseInt(EnvValue("CHORUS_HEARTBEAT_MS"), "CHORUS_HEARTBEAT_MS", &value));
  if (value < 0 || value > 3600000) return InvalidArgument("CHORUS_HEARTBEAT_MS must be in 0..3600000 (0: off)");
  settings.heartbeat_ms = static_cast<int>(value);
  *out = settings;
  return Status::Ok();
}

Status ParseShmRingBytes(const std::string& text, size_t* out) {
  size_t bytes = 0;
  if (text != "auto") CHORUS_RETURN_IF_ERROR(ParseBytes(text, "CHORUS_SHM_RING_BYTES", &bytes));
  if (bytes == 0) {
    *out = 0;
    return Status::Ok();
  }
  if (bytes < (256u << 10) || bytes > (1u << 30) || bytes % 64 != 0) {
    return InvalidArgument("CHORUS_SHM_RING_BYTES must be 0 (auto) or a multiple of 64 in 256K..1G, not '", text, "'");
  }
  *out = bytes;
  return Status::Ok();
}

Status ParseSocketBufferBytes(const std::string& text, const char* name, int* out) {
  size_t bytes = 0;
  CHORUS_RETURN_IF_ERROR(ParseBytes(text, name, &bytes));
  // The kernel doubles the value in an int: more would overflow it.
  if (bytes > static_cast<size_t>(kMaxSocketBufferBytes)) {
    return InvalidArgument(name, " must be 0 (kernel autotuning) or a size up to ", kMaxSocketBufferBytes,
                           " bytes (INT_MAX/2), not '", text, "'");
  }
  *out = static_cast<int>(bytes);
  return Status::Ok();
}

}  // namespace chorus
