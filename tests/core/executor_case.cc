#include "executor_case.h"

#include <atomic>
#include <cmath>
#include <cstring>
#include <memory>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "core/executor.h"
#include "core/transport_mux.h"
#include "core/workspace.h"
#include "fake_device_ipc.h"
#include "fake_device_memory.h"
#include "inproc_transport.h"
#include "rank_threads.h"
#include "transports/cuda_ipc/cuda_ipc_transport.h"
#include "transports/shm/shm_transport.h"

namespace chorus::testing {
namespace {

constexpr uint8_t kJunk = 0xAB;
constexpr uint64_t kTag = 42;
constexpr int kDeadlineMs = 20000;

// Input element `index` of `rank`'s send buffer, in integer units: int32
// holds the units, float64 holds units / 4 (exact, so sums are exact in
// any order). Negative and positive values, varied by rank and index.
int64_t Units(int rank, size_t index) {
  return (rank + 1) * int64_t{100003} + static_cast<int64_t>(index % 4099) * 7 - 60000;
}

void Store(DataType dtype, uint8_t* at, int64_t units) {
  if (dtype == chorusFloat64) {
    const double value = static_cast<double>(units) * 0.25;
    std::memcpy(at, &value, sizeof value);
  } else {
    const int32_t value = static_cast<int32_t>(units);
    std::memcpy(at, &value, sizeof value);
  }
}

std::string Load(DataType dtype, const uint8_t* at) {
  std::ostringstream out;
  if (dtype == chorusFloat64) {
    double value;
    std::memcpy(&value, at, sizeof value);
    out << value;
  } else {
    int32_t value;
    std::memcpy(&value, at, sizeof value);
    out << value;
  }
  return out.str();
}

bool UsesSend(const CollectiveArgs& a) {
  return !((a.coll == Collective::kBroadcast || a.coll == Collective::kScatter) && a.rank != a.root);
}
bool UsesRecv(const CollectiveArgs& a) {
  return !((a.coll == Collective::kReduce || a.coll == Collective::kGather) && a.rank != a.root);
}

// Expected value (in units) of element `e` of rank `r`'s receive buffer.
int64_t ExpectedUnits(const ExecutorCase& c, int r, size_t e) {
  auto sum = [&](size_t index) {
    int64_t total = 0;
    for (int j = 0; j < c.nranks; ++j) total += Units(j, index);
    return total;
  };
  const size_t n = c.count;
  switch (c.coll) {
    case Collective::kAllReduce:
    case Collective::kReduce:
      return sum(e);
    case Collective::kBroadcast:
      return Units(c.root, e);
    case Collective::kAllGather:
    case Collective::kGather:
      return Units(static_cast<int>(e / n), e % n);
    case Collective::kReduceScatter:
      return sum(r * n + e);
    case Collective::kAllToAll:
      return Units(static_cast<int>(e / n), r * n + e % n);
    case Collective::kScatter:
      return Units(c.root, r * n + e);
    default:
      return 0;
  }
}

// One rank's memory, bound as the communicator binds it.
struct RankSetup {
  CollectiveArgs args;
  Schedule schedule;
  std::vector<uint8_t> user;        // in place: the one user allocation
  std::vector<uint8_t> send, recv;  // out of place (or private placeholders)
  std::vector<uint8_t> scratch;
  // Fake device memory (ExecutorCase::user_memory/scratch_memory): the host
  // vectors above are copied in before and out after the run.
  std::unique_ptr<FakeDeviceMemory> device;
  std::unique_ptr<FakeDeviceEngine> engine;
  LocalEngines engines;
  uint8_t* send_ptr = nullptr;
  uint8_t* recv_ptr = nullptr;
  std::vector<uint8_t> user_before;  // what the call must not change
};


// kMixed: ranks [0, n/2) are one "host", the rest another.
bool SameHost(const ExecutorCase& c, int a, int b) { return (a < c.nranks / 2) == (b < c.nranks / 2); }

// Runs `function` per rank over shared-memory transports connected among
// threads, the way RunRanks does over the in-process fabric; for kMixed,
// through a mux of shm (same "host") and the in-process fabric (the other).
// `combined`: receives the transports reduced on receipt, over all ranks.
bool OverCudaIpc(const ExecutorCase& c) {
  return c.transport == CaseTransport::kCudaIpc || c.transport == CaseTransport::kCudaIpcThreads;
}

// The CUDA IPC overlay of one rank, connected over its shm transport, in a
// mux that routes every peer to it.
Status OverlayCudaIpc(int rank, int nranks, Transport* shm, Transport* overlay, const std::vector<std::string>& addresses,
                      std::unique_ptr<TransportMux>* mux) {
  std::vector<Carrier> carriers(nranks);
  for (int peer = 0; peer < nranks; ++peer) {
    if (peer != rank) carriers[peer] = {shm, shm->endpoint(peer)};
  }
  CHORUS_RETURN_IF_ERROR(overlay->SetCarriers(carriers));
  CHORUS_RETURN_IF_ERROR(overlay->Connect(addresses, Deadline::AfterMs(kDeadlineMs)));
  std::vector<std::unique_ptr<Transport>> routes;
  routes.push_back(std::make_unique<testing::BorrowedTransport>(shm));
  routes.push_back(std::make_unique<testing::BorrowedTransport>(overlay));
  return TransportMux::Create(std::move(routes), std::vector<int>(nranks, 1), rank, nranks, mux);
}

std::vector<Status> RunShmRanks(const ExecutorCase& c, const RankFunction& function, uint64_t* combined,
                                FakeGpu* gpu = nullptr) {
  ShmTuning tuning;
  tuning.cma_within_process = c.transport == CaseTransport::kShmCma;
  tuning.combine_piece_bytes = 192;  // many pieces per chunk, each a few elements
  std::vector<std::unique_ptr<Transport>> transports(c.nranks), overlays(c.nranks);
  std::vector<std::string> addresses(c.nranks), overlay_addresses(c.nranks);
  std::vector<Status> results(c.nranks);
  for (int r = 0; r < c.nranks; ++r) {
    TransportOptions options;
    options.rank = r;
    options.nranks = c.nranks;
    options.secret[0] = 42;
    results[r] = CreateShmTransport(options, &transports[r], tuning);
    if (!results[r].ok()) return results;
    addresses[r] = transports[r]->LocalAddress();
    if (OverCudaIpc(c)) {
      const uint64_t token = c.transport == CaseTransport::kCudaIpcThreads ? 1 : static_cast<uint64_t>(r) + 1;
      results[r] = CreateCudaIpcTransport(options, std::make_unique<FakeDeviceIpc>(gpu, token), &overlays[r]);
      if (!results[r].ok()) return results;
      overlay_addresses[r] = overlays[r]->LocalAddress();
    }
  }
  InprocFabric fabric(c.nranks);
  std::vector<std::thread> threads;
  for (int r = 0; r < c.nranks; ++r) {
    threads.emplace_back([&, r] {
      std::vector<std::string> reachable = addresses;
      for (int peer = 0; peer < c.nranks; ++peer) {
        if (c.transport == CaseTransport::kMixed && !SameHost(c, r, peer)) reachable[peer].clear();
      }
      results[r] = transports[r]->Connect(reachable, Deadline::AfterMs(kDeadlineMs));
      Transport* used = transports[r].get();
      std::unique_ptr<TransportMux> mux;
      if (results[r].ok() && c.transport == CaseTransport::kMixed) {
        std::vector<std::unique_ptr<Transport>> routes;
        routes.push_back(std::make_unique<testing::BorrowedTransport>(transports[r].get()));
        routes.push_back(std::make_unique<testing::BorrowedTransport>(fabric.transport(r)));
        results[r] = TransportMux::Create(std::move(routes), r, c.nranks, &mux);
        used = mux.get();
      }
      if (results[r].ok() && OverCudaIpc(c)) {
        results[r] = OverlayCudaIpc(r, c.nranks, transports[r].get(), overlays[r].get(), overlay_addresses, &mux);
        used = mux.get();
      }
      if (results[r].ok()) results[r] = function(r, used);
      if (!results[r].ok()) used->Shutdown();
    });
  }
  for (std::thread& thread : threads) thread.join();
  *combined = 0;
  for (const auto& transport : transports) {
    *combined += static_cast<ShmTransport*>(transport.get())->stats().combined_messages;
  }
  return results;
}

}  // namespace

const char* CaseTransportName(CaseTransport transport) {
  switch (transport) {
    case CaseTransport::kShm: return "shm";
    case CaseTransport::kShmCma: return "shmcma";
    case CaseTransport::kShmStaged: return "shmstaged";
    case CaseTransport::kMixed: return "mixed";
    case CaseTransport::kCudaIpc: return "cudaipc";
    case CaseTransport::kCudaIpcThreads: return "cudaipcthreads";
    default: return "inproc";
  }
}

std::string DescribeExecutorCase(const ExecutorCase& c) {
  std::ostringstream out;
  out << CollectiveName(c.coll) << "/" << AlgorithmName(c.algo) << " nranks=" << c.nranks << " count=" << c.count
      << " chunk=" << c.chunk_bytes << (c.in_place ? " in-place " : " out-of-place ") << DataTypeName(c.dtype)
      << " root=" << c.root << " inflight=" << c.max_inflight_per_peer << " pace=" << c.pace_chunks
      << " segment=" << c.segment_bytes << " device_chunk=" << c.device_chunk_bytes
      << " transport=" << CaseTransportName(c.transport);
  return out.str();
}

namespace {

// Where a host vector of a rank goes in its fake device memory: one after
// the other, in this order, for the ones whose kind is fake.
struct DevicePlacement {
  std::vector<uint8_t>* host;
  size_t offset;
};

std::vector<DevicePlacement> PlaceOnDevice(const ExecutorCase& c, RankSetup& s) {
  std::vector<DevicePlacement> placed;
  size_t offset = 0;
  const auto place = [&](std::vector<uint8_t>& host) {
    placed.push_back({&host, offset});
    offset += host.size();
  };
  if (c.user_memory == MemoryKind::kFakeDevice) {
    place(s.user);
    place(s.send);
    place(s.recv);
  }
  if (c.scratch_memory == MemoryKind::kFakeDevice) place(s.scratch);
  return placed;
}

// The fake device address of `host_pointer`, which lies in one of `placed`
// (or the host pointer itself when it lies in none).
uint8_t* DeviceAddress(const RankSetup& s, const std::vector<DevicePlacement>& placed, uint8_t* host_pointer) {
  for (const DevicePlacement& p : placed) {
    if (host_pointer >= p.host->data() && host_pointer <= p.host->data() + p.host->size() && !p.host->empty()) {
      return s.device->data() + p.offset + (host_pointer - p.host->data());
    }
  }
  return host_pointer;
}

}  // namespace

std::string RunExecutorCase(const ExecutorCase& c, std::vector<FakeDeviceEngine::Counts>* counts) {
  const std::string context = DescribeExecutorCase(c) + ": ";
  const size_t es = DataTypeSize(c.dtype);
  const size_t block = c.count * es;
  std::vector<RankSetup> ranks(c.nranks);
  for (int r = 0; r < c.nranks; ++r) {
    RankSetup& s = ranks[r];
    s.args.coll = c.coll;
    s.args.count = c.count;
    s.args.dtype = c.dtype;
    s.args.op = ReduceOp::kSum;
    s.args.root = c.root;
    s.args.nranks = c.nranks;
    s.args.rank = r;
    s.args.segment_bytes = c.segment_bytes;
    // As the C API decides: only a rank that uses both buffers can be in place.
    s.args.in_place = c.in_place && UsesSend(s.args) && UsesRecv(s.args);
    Status status = BuildSchedule(s.args, c.algo, &s.schedule);
    if (!status.ok()) return context + "rank " + std::to_string(r) + ": " + status.message();

    const size_t send_bytes = SendBufferBytes(s.args), recv_bytes = RecvBufferBytes(s.args);
    if (s.args.in_place) {
      s.user.assign(std::max(send_bytes, recv_bytes), kJunk);
      const bool gather_layout = c.coll == Collective::kAllGather || c.coll == Collective::kGather;
      const bool scatter_layout = c.coll == Collective::kReduceScatter || c.coll == Collective::kScatter;
      s.send_ptr = s.user.data() + (gather_layout ? r * block : 0);
      s.recv_ptr = s.user.data() + (scatter_layout ? r * block : 0);
    } else {
      s.send.assign(send_bytes, kJunk);
      s.recv.assign(recv_bytes, kJunk);
      s.send_ptr = s.send.data();
      s.recv_ptr = s.recv.data();
    }
    if (UsesSend(s.args)) {
      for (size_t i = 0; i < send_bytes / es; ++i) Store(c.dtype, s.send_ptr + i * es, Units(r, i));
    }
    s.scratch.assign(s.schedule.scratch_bytes, kJunk);
    s.user_before = s.args.in_place ? s.user : s.send;
    if (c.user_memory == MemoryKind::kFakeDevice || c.scratch_memory == MemoryKind::kFakeDevice) {
      size_t bytes = 0;
      for (const DevicePlacement& p : PlaceOnDevice(c, s)) bytes = p.offset + p.host->size();
      s.device = std::make_unique<FakeDeviceMemory>(bytes);
      for (const DevicePlacement& p : PlaceOnDevice(c, s)) s.device->Upload(p.offset, p.host->data(), p.host->size());
      s.engine = std::make_unique<FakeDeviceEngine>(s.device.get());
      s.engines = s.engine->Table();
    }
  }

  // Over CUDA IPC an engine reduces straight from a peer's device memory.
  std::vector<FakeDeviceMemory*> memories;
  for (RankSetup& s : ranks) {
    if (s.device != nullptr) memories.push_back(s.device.get());
  }
  for (RankSetup& s : ranks) {
    for (FakeDeviceMemory* memory : memories) {
      if (s.engine != nullptr && memory != s.device.get()) s.engine->AddPeerMemory(memory);
    }
  }
  FakeGpu gpu(memories);

  const std::atomic<bool> abort{false};
  const RankFunction run_rank = [&](int r, Transport* transport) {
    RankSetup& s = ranks[r];
    BoundSchedule bound;
    bound.schedule = &s.schedule;
    bound.send = s.send_ptr;
    bound.recv = s.recv_ptr;
    bound.scratch = s.scratch.data();
    bound.tag = kTag;
    Workspace staging;
    ExecutorOptions options;
    if (s.device != nullptr) {
      const std::vector<DevicePlacement> placed = PlaceOnDevice(c, s);
      bound.send = DeviceAddress(s, placed, s.send_ptr);
      bound.recv = DeviceAddress(s, placed, s.recv_ptr);
      bound.scratch = DeviceAddress(s, placed, s.scratch.data());
      bound.send_kind = bound.recv_kind = c.user_memory;
      bound.scratch_kind = c.scratch_memory;
      options.engines = &s.engines;
    }
    options.chunk_bytes = c.chunk_bytes;
    options.device_chunk_bytes = c.device_chunk_bytes;
    options.max_inflight_per_peer = c.max_inflight_per_peer;
    options.pace_chunks = c.pace_chunks;
    options.staging = &staging;
    options.combine_on_receive = c.transport != CaseTransport::kShmStaged;
    return ExecuteSchedules(transport, r, {bound}, options, abort, Deadline::AfterMs(kDeadlineMs));
  };
  std::vector<Status> results;
  if (c.transport == CaseTransport::kInproc) {
    InprocFabric fabric(c.nranks);
    results = RunRanks(fabric, run_rank);
  } else {
    uint64_t combined = 0;
    results = RunShmRanks(c, run_rank, &combined, &gpu);
    const bool reducing = c.coll == Collective::kAllReduce || c.coll == Collective::kReduceScatter ||
                          c.coll == Collective::kReduce;
    // Memory the CPU must not touch is never combined on receipt.
    const bool all_device = c.user_memory == MemoryKind::kFakeDevice && c.scratch_memory == MemoryKind::kFakeDevice;
    const bool expect_combined =
        reducing && c.transport != CaseTransport::kShmStaged && c.nranks > 1 && c.count > 0 && !all_device;
    // Mixed: only the ring surely receive-reduces from a same-host peer.
    // Device user buffers with host scratch: only scratch-to-scratch steps combine.
    const bool known = (c.transport != CaseTransport::kMixed || (c.algo == Algorithm::kRing && c.nranks >= 3)) &&
                       (c.user_memory == MemoryKind::kHost || all_device);
    if (results[0].ok() && known && expect_combined != (combined > 0)) {
      return context + std::to_string(combined) + " chunks combined on receipt";
    }
  }
  for (int r = 0; r < c.nranks; ++r) {
    if (!results[r].ok()) return context + "rank " + std::to_string(r) + " failed: " + results[r].message();
  }
  // Over CUDA IPC, device data never goes through host memory, and each
  // rank maps each peer's one fake allocation at most once.
  const bool all_device = c.user_memory == MemoryKind::kFakeDevice && c.scratch_memory == MemoryKind::kFakeDevice;
  if (OverCudaIpc(c) && all_device) {
    for (int r = 0; r < c.nranks; ++r) {
      const FakeDeviceEngine::Counts& engine = ranks[r].engine->counts();
      if (engine.copies_to_device != 0 || engine.copies_from_device != 0) {
        return context + "rank " + std::to_string(r) + " staged device data through host memory";
      }
    }
    const int most = c.transport == CaseTransport::kCudaIpc ? c.nranks * (c.nranks - 1) : 0;
    if (gpu.opens > most) return context + std::to_string(gpu.opens.load()) + " mappings for " + std::to_string(most);
  }
  if (counts != nullptr) counts->assign(c.nranks, FakeDeviceEngine::Counts());
  for (int r = 0; r < c.nranks; ++r) {
    RankSetup& s = ranks[r];
    if (s.device == nullptr) continue;
    for (const DevicePlacement& p : PlaceOnDevice(c, s)) s.device->Download(p.host->data(), p.offset, p.host->size());
    if (counts != nullptr) (*counts)[r] = s.engine->counts();
  }

  std::vector<uint8_t> expected(16);
  for (int r = 0; r < c.nranks; ++r) {
    const RankSetup& s = ranks[r];
    const size_t recv_bytes = RecvBufferBytes(s.args);
    if (UsesRecv(s.args)) {
      for (size_t e = 0; e < recv_bytes / es; ++e) {
        Store(c.dtype, expected.data(), ExpectedUnits(c, r, e));
        if (std::memcmp(s.recv_ptr + e * es, expected.data(), es) != 0) {
          return context + "rank " + std::to_string(r) + " element " + std::to_string(e) + ": got " +
                 Load(c.dtype, s.recv_ptr + e * es) + ", expected " + Load(c.dtype, expected.data()) + "\n" +
                 DescribeSchedule(s.schedule);
        }
      }
    }
    // Out of place the send buffer is const; in place, so is the user
    // memory outside the result (the scatter layouts' other blocks).
    const std::vector<uint8_t>& now = s.args.in_place ? s.user : s.send;
    if (!UsesSend(s.args) && !s.args.in_place) continue;  // private placeholder
    for (size_t i = 0; i < now.size(); ++i) {
      const bool in_result =
          s.args.in_place && now.data() + i >= s.recv_ptr && now.data() + i < s.recv_ptr + recv_bytes;
      if (!in_result && now[i] != s.user_before[i]) {
        return context + "rank " + std::to_string(r) + " changed its send buffer at byte " + std::to_string(i);
      }
    }
  }
  return "";
}

std::string RunRandomFloatAllReduce(const ExecutorCase& c, uint32_t seed, std::vector<std::vector<uint8_t>>* results) {
  ExecutorCase floats = c;
  floats.coll = Collective::kAllReduce;
  floats.dtype = chorusFloat32;
  const std::string context = DescribeExecutorCase(floats) + " seed=" + std::to_string(seed) + ": ";
  if (c.transport != CaseTransport::kShm && c.transport != CaseTransport::kShmStaged) {
    return context + "needs transport shm or shmstaged";
  }
  const size_t bytes = c.count * sizeof(float);
  std::vector<CollectiveArgs> args(c.nranks);
  std::vector<Schedule> schedules(c.nranks);
  std::vector<std::vector<uint8_t>> send(c.nranks), recv(c.nranks, std::vector<uint8_t>(bytes, kJunk));
  std::vector<std::vector<uint8_t>> scratch(c.nranks);
  for (int r = 0; r < c.nranks; ++r) {
    args[r].coll = Collective::kAllReduce;
    args[r].count = c.count;
    args[r].dtype = chorusFloat32;
    args[r].op = ReduceOp::kSum;
    args[r].nranks = c.nranks;
    args[r].rank = r;
    args[r].in_place = c.in_place;
    Status status = BuildSchedule(args[r], c.algo, &schedules[r]);
    if (!status.ok()) return context + "rank " + std::to_string(r) + ": " + status.message();
    // Mantissas in [-1, 1) scaled by 2^-12..2^12: sums round differently
    // in every order.
    std::mt19937 random(seed * 7919u + static_cast<uint32_t>(r));
    std::uniform_real_distribution<float> mantissa(-1.0f, 1.0f);
    std::uniform_int_distribution<int> exponent(-12, 12);
    std::vector<float> values(c.count);
    for (float& value : values) value = std::ldexp(mantissa(random), exponent(random));
    send[r].resize(bytes);
    if (bytes > 0) std::memcpy(send[r].data(), values.data(), bytes);
    if (c.in_place) recv[r] = send[r];
    scratch[r].assign(schedules[r].scratch_bytes, kJunk);
  }
  const std::atomic<bool> abort{false};
  const RankFunction run_rank = [&](int r, Transport* transport) {
    BoundSchedule bound;
    bound.schedule = &schedules[r];
    bound.send = c.in_place ? recv[r].data() : send[r].data();
    bound.recv = recv[r].data();
    bound.scratch = scratch[r].data();
    bound.tag = kTag;
    Workspace staging;
    ExecutorOptions options;
    options.chunk_bytes = c.chunk_bytes;
    options.max_inflight_per_peer = c.max_inflight_per_peer;
    options.pace_chunks = c.pace_chunks;
    options.staging = &staging;
    options.combine_on_receive = c.transport == CaseTransport::kShm;
    return ExecuteSchedules(transport, r, {bound}, options, abort, Deadline::AfterMs(kDeadlineMs));
  };
  uint64_t combined = 0;
  const std::vector<Status> statuses = RunShmRanks(floats, run_rank, &combined);
  for (int r = 0; r < c.nranks; ++r) {
    if (!statuses[r].ok()) return context + "rank " + std::to_string(r) + " failed: " + statuses[r].message();
  }
  const bool expect_combined = c.transport == CaseTransport::kShm && c.nranks > 1 && c.count > 0;
  if (expect_combined != (combined > 0)) return context + std::to_string(combined) + " chunks combined on receipt";
  *results = std::move(recv);
  return "";
}

}  // namespace chorus::testing
