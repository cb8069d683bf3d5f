// Memory kinds in the executor: buffers the transport cannot take (here the
// tests' fake device, whose addresses fault when touched) are staged through
// host chunks by their engine, local work on them goes to that engine, and a
// kind without an engine fails before anything moves.
#include <gtest/gtest.h>

#include <atomic>
#include <cstring>
#include <string>
#include <vector>

#include "algorithms/algorithm.h"
#include "core/executor.h"
#include "core/pointer_kind.h"
#include "core/workspace.h"
#include "executor_case.h"
#include "fake_device_memory.h"
#include "inproc_transport.h"
#include "rank_threads.h"

namespace chorus::testing {
namespace {

TEST(FakeDeviceMemoryTest, KeepsBytesBehindAddressesThatFault) {
  FakeDeviceMemory memory(100);
  const std::vector<uint8_t> in = {1, 2, 3, 4};
  memory.Upload(10, in.data(), in.size());
  std::vector<uint8_t> out(4);
  memory.Download(out.data(), 10, out.size());
  EXPECT_EQ(out, in);
  EXPECT_EQ(*memory.Backing(memory.data() + 12), 3);
  EXPECT_TRUE(memory.Contains(memory.data() + 99));
  EXPECT_FALSE(memory.Contains(in.data()));
  ::testing::FLAGS_gtest_death_test_style = "threadsafe";
  EXPECT_DEATH(*reinterpret_cast<volatile uint8_t*>(memory.data() + 10) = 7, "");
}

TEST(FakeDeviceMemoryTest, EngineCopiesAndReducesThroughTheBacking) {
  FakeDeviceMemory memory(3 * sizeof(int32_t) * 4);
  FakeDeviceEngine engine(&memory);
  const int32_t a[4] = {1, 2, 3, 4}, b[4] = {10, 20, 30, 40};
  uint8_t* dev_a = memory.data();
  uint8_t* dev_out = memory.data() + sizeof a;
  ASSERT_TRUE(engine.Copy(dev_a, a, sizeof a).ok());
  ASSERT_TRUE(engine.Reduce(dev_out, dev_a, b, 4, chorusInt32, ReduceOp::kSum, nullptr).ok());
  const int32_t factor = 3;
  ASSERT_TRUE(engine.Reduce(dev_out, dev_out, dev_a, 4, chorusInt32, ReduceOp::kSum, &factor).ok());
  int32_t out[4];
  ASSERT_TRUE(engine.Copy(out, dev_out, sizeof out).ok());
  EXPECT_EQ(out[0], (1 + 10 + 1) * 3);
  EXPECT_EQ(out[3], (4 + 40 + 4) * 3);
  EXPECT_EQ(engine.counts().copies_to_device, 1u);
  EXPECT_EQ(engine.counts().copies_from_device, 1u);
  EXPECT_EQ(engine.counts().reduces, 2u);
  EXPECT_EQ(engine.counts().bytes_to_device, sizeof a);
}

ExecutorCase DeviceCase(Collective coll, Algorithm algo, int nranks, size_t count, size_t chunk, bool in_place,
                        CaseTransport transport, MemoryKind scratch) {
  ExecutorCase c;
  c.coll = coll;
  c.algo = algo;
  c.nranks = nranks;
  c.count = count;
  c.chunk_bytes = chunk;
  c.in_place = in_place;
  c.dtype = nranks % 2 == 0 ? chorusInt32 : chorusFloat64;
  c.root = nranks - 1;
  c.transport = transport;
  c.user_memory = MemoryKind::kFakeDevice;
  c.scratch_memory = scratch;
  return c;
}

// Every collective, ring and tree, over the in-process fabric and shared
// memory (whose endpoints would combine on receipt), with user buffers on
// the fake device and scratch on the host or the device: a transport
// touching a device address would crash the test.
std::vector<ExecutorCase> DeviceCases() {
  const Collective collectives[] = {Collective::kAllReduce, Collective::kBroadcast,     Collective::kReduce,
                                    Collective::kAllGather, Collective::kReduceScatter, Collective::kAllToAll,
                                    Collective::kGather,    Collective::kScatter};
  std::vector<ExecutorCase> cases;
  for (Collective coll : collectives) {
    for (Algorithm algo : {Algorithm::kRing, Algorithm::kTree}) {
      if (!Supports(algo, coll)) continue;
      for (int nranks : {1, 2, 3}) {
        for (CaseTransport transport : {CaseTransport::kInproc, CaseTransport::kShm, CaseTransport::kCudaIpc,
                                        CaseTransport::kCudaIpcThreads}) {
          for (MemoryKind scratch : {MemoryKind::kHost, MemoryKind::kFakeDevice}) {
            const bool in_place = (nranks + static_cast<int>(scratch)) % 2 == 0;
            cases.push_back(DeviceCase(coll, algo, nranks, 3001, 1024, in_place, transport, scratch));
            // Device messages over CUDA IPC in larger chunks than the
            // rest (host scratch, local steps).
            if (transport == CaseTransport::kCudaIpc) {
              cases.push_back(DeviceCase(coll, algo, nranks, 3001, 1024, in_place, transport, scratch));
              cases.back().device_chunk_bytes = 3072;
            }
          }
        }
      }
    }
  }
  return cases;
}

std::string DeviceCaseName(const ::testing::TestParamInfo<ExecutorCase>& info) {
  const ExecutorCase& c = info.param;
  return std::string(CollectiveName(c.coll)) + "_" + AlgorithmName(c.algo) + "_n" + std::to_string(c.nranks) +
         (c.in_place ? "_inplace_" : "_outofplace_") + CaseTransportName(c.transport) + "_scratch_" +
         MemoryKindName(c.scratch_memory) + (c.device_chunk_bytes > 0 ? "_devicechunk" : "");
}

class DeviceMemoryCollectiveTest : public ::testing::TestWithParam<ExecutorCase> {};

TEST_P(DeviceMemoryCollectiveTest, MatchesReference) { EXPECT_EQ(RunExecutorCase(GetParam()), ""); }

INSTANTIATE_TEST_SUITE_P(FakeDevice, DeviceMemoryCollectiveTest, ::testing::ValuesIn(DeviceCases()), DeviceCaseName);

// What the engine of each rank must be asked, derived from the schedule by
// the rules of the executor: every chunk of a network step on device memory
// is staged (one copy out per sent chunk, one copy in per received chunk, one
// reduce per receive-reduce chunk, reading the host staging), and every
// chunk of a local step touching the device is one engine call.
FakeDeviceEngine::Counts ExpectedCounts(const Schedule& schedule, size_t chunk_bytes, bool scratch_on_device) {
  const size_t element = std::max<size_t>(1, schedule.element_size);
  const size_t chunk = std::max(element, chunk_bytes / element * element);
  const auto on_device = [&](const BufferRange& range) {
    return range.buffer != BufferId::kScratch || scratch_on_device;
  };
  FakeDeviceEngine::Counts counts;
  for (const Step& step : schedule.steps) {
    if (step.bytes == 0) continue;
    const size_t chunks = (step.bytes + chunk - 1) / chunk;
    switch (step.kind) {
      case StepKind::kSend:
        if (on_device(step.src)) {
          counts.copies_from_device += chunks;
          counts.bytes_from_device += step.bytes;
        }
        break;
      case StepKind::kRecv:
        if (on_device(step.dst)) {
          counts.copies_to_device += chunks;
          counts.bytes_to_device += step.bytes;
        }
        break;
      case StepKind::kRecvReduce:
      case StepKind::kReduce:
        if (on_device(step.dst) || on_device(step.src) || (step.kind == StepKind::kReduce && on_device(step.src2))) {
          counts.reduces += chunks;
        }
        break;
      case StepKind::kCopy:
        if (on_device(step.dst) && on_device(step.src)) {
          counts.copies_on_device += chunks;
        } else if (on_device(step.dst)) {
          counts.copies_to_device += chunks;
          counts.bytes_to_device += step.bytes;
        } else if (on_device(step.src)) {
          counts.copies_from_device += chunks;
          counts.bytes_from_device += step.bytes;
        }
        break;
    }
  }
  return counts;
}

void ExpectCounts(const FakeDeviceEngine::Counts& got, const FakeDeviceEngine::Counts& want, int rank) {
  SCOPED_TRACE("rank " + std::to_string(rank));
  EXPECT_EQ(got.copies_to_device, want.copies_to_device);
  EXPECT_EQ(got.copies_from_device, want.copies_from_device);
  EXPECT_EQ(got.copies_on_device, want.copies_on_device);
  EXPECT_EQ(got.copies_on_host, 0u);  // host work is the host engine's
  EXPECT_EQ(got.reduces, want.reduces);
  EXPECT_EQ(got.scales, 0u);
  EXPECT_EQ(got.bytes_to_device, want.bytes_to_device);
  EXPECT_EQ(got.bytes_from_device, want.bytes_from_device);
}

Schedule ScheduleOf(const ExecutorCase& c, int rank) {
  CollectiveArgs args;
  args.coll = c.coll;
  args.count = c.count;
  args.dtype = c.dtype;
  args.root = c.root;
  args.nranks = c.nranks;
  args.rank = rank;
  args.in_place = c.in_place;
  Schedule schedule;
  EXPECT_TRUE(BuildSchedule(args, c.algo, &schedule).ok());
  return schedule;
}

// 2 ranks, ring allreduce of 1000 int32 in 256-byte chunks, out of place:
// each rank sends half of its input (2000 bytes: 8 staged chunks out),
// receive-reduces the other half into its output (8 reduces reading the
// staging), sends that reduced half (8 chunks out) and receives the half the
// peer reduced (8 chunks in). No local step.
TEST(DeviceStagingTest, TwoRankRingAllReduceCountsEveryChunk) {
  ExecutorCase c = DeviceCase(Collective::kAllReduce, Algorithm::kRing, 2, 1000, 256, false, CaseTransport::kInproc,
                              MemoryKind::kHost);
  std::vector<FakeDeviceEngine::Counts> counts;
  ASSERT_EQ(RunExecutorCase(c, &counts), "");
  ASSERT_EQ(counts.size(), 2u);
  for (int r = 0; r < 2; ++r) {
    const FakeDeviceEngine::Counts want = ExpectedCounts(ScheduleOf(c, r), c.chunk_bytes, false);
    ExpectCounts(counts[r], want, r);
    EXPECT_EQ(counts[r].copies_from_device, 16u);
    EXPECT_EQ(counts[r].bytes_from_device, 4000u);
    EXPECT_EQ(counts[r].copies_to_device, 8u);
    EXPECT_EQ(counts[r].bytes_to_device, 2000u);
    EXPECT_EQ(counts[r].copies_on_device, 0u);
    EXPECT_EQ(counts[r].reduces, 8u);
  }
}

// The same rule on bigger shapes: rings and trees of 3 and 4 ranks, scratch
// on either side, over shared memory and the in-process fabric.
TEST(DeviceStagingTest, EngineCallsFollowTheSchedule) {
  for (Algorithm algo : {Algorithm::kRing, Algorithm::kTree}) {
    for (int nranks : {3, 4}) {
      for (MemoryKind scratch : {MemoryKind::kHost, MemoryKind::kFakeDevice}) {
        for (CaseTransport transport : {CaseTransport::kInproc, CaseTransport::kShm}) {
          ExecutorCase c = DeviceCase(Collective::kAllReduce, algo, nranks, 5000, 1000, nranks == 4, transport, scratch);
          SCOPED_TRACE(DescribeExecutorCase(c));
          std::vector<FakeDeviceEngine::Counts> counts;
          ASSERT_EQ(RunExecutorCase(c, &counts), "");
          for (int r = 0; r < nranks; ++r) {
            ExpectCounts(counts[r], ExpectedCounts(ScheduleOf(c, r), c.chunk_bytes, scratch == MemoryKind::kFakeDevice),
                         r);
          }
        }
      }
    }
  }
}

// Runs a 2-rank ring allreduce of host vectors that claim to be of `kinds`,
// with `engines`; returns each rank's status.
std::vector<Status> RunClaimingKinds(MemoryKind send_kind, MemoryKind recv_kind, const LocalEngines& engines,
                                     std::vector<std::vector<int32_t>>* recv) {
  constexpr int kRanks = 2;
  constexpr size_t kCount = 64;
  std::vector<Schedule> schedules(kRanks);
  std::vector<std::vector<int32_t>> send(kRanks, std::vector<int32_t>(kCount, 5));
  recv->assign(kRanks, std::vector<int32_t>(kCount, -1));
  for (int r = 0; r < kRanks; ++r) {
    CollectiveArgs args;
    args.coll = Collective::kAllReduce;
    args.count = kCount;
    args.dtype = chorusInt32;
    args.nranks = kRanks;
    args.rank = r;
    EXPECT_TRUE(BuildSchedule(args, Algorithm::kRing, &schedules[r]).ok());
  }
  InprocFabric fabric(kRanks);
  const std::atomic<bool> abort{false};
  return RunRanks(fabric, [&](int r, Transport* transport) {
    std::vector<uint8_t> scratch(schedules[r].scratch_bytes);
    BoundSchedule bound;
    bound.schedule = &schedules[r];
    bound.send = reinterpret_cast<uint8_t*>(send[r].data());
    bound.recv = reinterpret_cast<uint8_t*>((*recv)[r].data());
    bound.scratch = scratch.data();
    bound.send_kind = send_kind;
    bound.recv_kind = recv_kind;
    bound.tag = 7;
    Workspace staging;
    ExecutorOptions options;
    options.staging = &staging;
    options.engines = &engines;
    return ExecuteSchedules(transport, r, {bound}, options, abort, Deadline::AfterMs(5000));
  });
}

// Over the CUDA IPC overlay nothing is staged: a receive-reduce chunk is
// reduced by the engine straight from the peer's device buffer, a received
// chunk copied from it by the transport. 2 ranks, ring allreduce of 1000
// int32 in 256-byte chunks: 8 receive-reduce chunks, no copy through the host.
TEST(CudaIpcOverlayTest, TwoRankRingAllReduceStagesNothing) {
  for (CaseTransport transport : {CaseTransport::kCudaIpc, CaseTransport::kCudaIpcThreads}) {
    ExecutorCase c = DeviceCase(Collective::kAllReduce, Algorithm::kRing, 2, 1000, 256, false, transport,
                                MemoryKind::kFakeDevice);
    std::vector<FakeDeviceEngine::Counts> counts;
    ASSERT_EQ(RunExecutorCase(c, &counts), "");
    for (int r = 0; r < 2; ++r) {
      SCOPED_TRACE(std::string(CaseTransportName(transport)) + " rank " + std::to_string(r));
      EXPECT_EQ(counts[r].copies_to_device, 0u);
      EXPECT_EQ(counts[r].copies_from_device, 0u);
      EXPECT_EQ(counts[r].reduces, 8u);
    }
  }
}

// Host buffers over the overlay go to the shm carrier as they are (combined
// on receipt there: RunExecutorCase checks it for reducing collectives).
TEST(CudaIpcOverlayTest, HostCallsPassToTheCarrier) {
  for (Collective coll : {Collective::kAllReduce, Collective::kReduceScatter, Collective::kAllGather}) {
    for (int nranks : {2, 3}) {
      ExecutorCase c;
      c.coll = coll;
      c.algo = Algorithm::kRing;
      c.nranks = nranks;
      c.count = 3001;
      c.chunk_bytes = 1024;
      c.transport = CaseTransport::kCudaIpc;
      EXPECT_EQ(RunExecutorCase(c), "");
    }
  }
}

TEST(DeviceStagingTest, KindWithoutEngineFailsBeforeAnythingMoves) {
  const LocalEngines host_only = DefaultLocalEngines();
  ASSERT_EQ(host_only.For(MemoryKind::kFakeDevice), nullptr);
  std::vector<std::vector<int32_t>> recv;
  const std::vector<Status> results = RunClaimingKinds(MemoryKind::kFakeDevice, MemoryKind::kFakeDevice, host_only, &recv);
  for (int r = 0; r < 2; ++r) {
    EXPECT_EQ(results[r].code(), chorusInvalidArgument);
    EXPECT_NE(results[r].message().find("no local engine for fake_device memory"), std::string::npos)
        << results[r].message();
    EXPECT_EQ(recv[r], std::vector<int32_t>(64, -1));  // nothing written
  }
}

TEST(DeviceStagingTest, StepMixingTwoDeviceKindsIsRefused) {
  FakeDeviceMemory memory(16);
  FakeDeviceEngine engine(&memory);
  const LocalEngines engines = engine.Table();
  std::vector<std::vector<int32_t>> recv;
  const std::vector<Status> results = RunClaimingKinds(MemoryKind::kFakeDevice, MemoryKind::kCudaDevice, engines, &recv);
  for (int r = 0; r < 2; ++r) {
    EXPECT_EQ(results[r].code(), chorusInvalidArgument);
    EXPECT_NE(results[r].message().find("step 1 mixes cuda_device and fake_device memory"), std::string::npos)
        << results[r].message();
    EXPECT_EQ(recv[r], std::vector<int32_t>(64, -1));
  }
  EXPECT_EQ(engine.counts().copies_from_device + engine.counts().copies_to_device + engine.counts().reduces, 0u);
}

// Pinned host memory is the host engine's and goes to the transport as is.
TEST(DeviceStagingTest, PinnedHostMemoryIsNotStaged) {
  std::vector<std::vector<int32_t>> recv;
  const std::vector<Status> results =
      RunClaimingKinds(MemoryKind::kCudaHostPinned, MemoryKind::kCudaHostPinned, DefaultLocalEngines(), &recv);
  for (int r = 0; r < 2; ++r) {
    ASSERT_TRUE(results[r].ok()) << results[r].message();
    EXPECT_EQ(recv[r], std::vector<int32_t>(64, 10));
  }
}

// Ordinary memory is host memory in every build (a CUDA build asks the
// runtime, which knows nothing of it, or has no driver at all).
TEST(PointerKindTest, HostMemoryIsHost) {
  std::vector<uint8_t> host(64);
  EXPECT_EQ(ClassifyPointer(host.data()), MemoryKind::kHost);
  EXPECT_EQ(ClassifyPointer(nullptr), MemoryKind::kHost);
}

}  // namespace
}  // namespace chorus::testing
