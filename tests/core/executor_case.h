// One collective executed for real: every rank builds its schedule with
// BuildSchedule, binds buffers the way the communicator does (NCCL in-place
// layouts; buffers NCCL ignores on non-roots bound to private memory filled
// with junk), runs ExecuteSchedules on its own thread over an InprocFabric,
// and the results are compared exactly with values computed rank by rank.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "algorithms/algorithm.h"
#include "base/memory_kind.h"
#include "fake_device_memory.h"

namespace chorus::testing {

// What carries the messages. The shm variants run ranks as threads over the
// shared-memory transport, whose endpoints combine receive-reduce chunks on
// receipt: from the ring and straight from the sender's buffer (kShm), or
// through CMA in small pieces (kShmCma); kShmStaged turns combining off in
// the executor so that shm chunks go through staging; kMixed routes through
// a TransportMux: shm to ranks on the same (pretend) host, which combine,
// the in-process fabric to the others, which stage. kCudaIpc overlays shm
// with the CUDA IPC transport over the fake device (fake_device_ipc.h), the
// ranks taken for separate processes (peers' buffers mapped, then pulled
// from); kCudaIpcThreads takes them for one process (pointers used as they
// are).
enum class CaseTransport { kInproc, kShm, kShmCma, kShmStaged, kMixed, kCudaIpc, kCudaIpcThreads };

struct ExecutorCase {
  Collective coll = Collective::kAllReduce;
  Algorithm algo = Algorithm::kRing;
  int nranks = 1;
  size_t count = 0;
  size_t chunk_bytes = 4096;
  size_t device_chunk_bytes = 0;  // ExecutorOptions::device_chunk_bytes
  bool in_place = false;
  DataType dtype = chorusInt32;  // chorusInt32 or chorusFloat64, reduced with Sum
  int root = 0;
  int max_inflight_per_peer = 8;
  size_t pace_chunks = 8;  // ExecutorOptions::pace_chunks
  size_t segment_bytes = 0;  // CollectiveArgs::segment_bytes
  CaseTransport transport = CaseTransport::kInproc;
  // Where the user's buffers and the scratch live: kHost, or kFakeDevice
  // (FakeDeviceMemory: the executor must stage every transfer of it and do
  // its local work through its engine; a direct touch faults).
  MemoryKind user_memory = MemoryKind::kHost;
  MemoryKind scratch_memory = MemoryKind::kHost;
};

const char* CaseTransportName(CaseTransport transport);

std::string DescribeExecutorCase(const ExecutorCase& c);

// Empty on success, else the first difference (or error) with context.
// With fake device memory, `counts` (if given) receives each rank's engine
// counts.
std::string RunExecutorCase(const ExecutorCase& c, std::vector<FakeDeviceEngine::Counts>* counts = nullptr);

// An AllReduce of float32 Sum over an shm transport (c.transport kShm or
// kShmStaged; c.dtype is ignored) with random inputs of varied magnitude
// drawn from `seed`, so that rounding depends on the order of additions.
// Fills each rank's receive buffer into `results`; empty on success, else
// the error, or a note that the path that was asked for (combined on
// receipt or staged) was not the one taken.
std::string RunRandomFloatAllReduce(const ExecutorCase& c, uint32_t seed, std::vector<std::vector<uint8_t>>* results);

}  // namespace chorus::testing
