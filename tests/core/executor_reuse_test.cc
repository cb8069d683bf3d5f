// The executor's reusable working memory (ExecutorContext): a context reused
// across launches of changing shapes and algorithms gives exact results, a
// context used by a failed launch works again on a healthy transport, and a
// warm small launch allocates nothing, counted per thread by replacing
// operator new in this test binary (allocation_counter.h).
#include <gtest/gtest.h>

#include <atomic>
#include <cstring>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "algorithms/algorithm.h"
#include "allocation_counter.h"
#include "chorus/chorus.h"
#include "core/executor.h"
#include "core/workspace.h"
#include "inproc_transport.h"
#include "rank_threads.h"
#include "transports/shm/shm_transport.h"

namespace chorus::testing {
namespace {

constexpr int kDeadlineMs = 20000;

// One rank's allreduce (int32 Sum, out of place) with its own buffers.
struct AllReduceRank {
  Schedule schedule;
  std::vector<int32_t> send, recv;
  std::vector<uint8_t> scratch;

  Status Build(Algorithm algo, int rank, int nranks, size_t count) {
    CollectiveArgs args;
    args.coll = Collective::kAllReduce;
    args.count = count;
    args.dtype = chorusInt32;
    args.op = ReduceOp::kSum;
    args.nranks = nranks;
    args.rank = rank;
    schedule = Schedule();
    CHORUS_RETURN_IF_ERROR(BuildSchedule(args, algo, &schedule));
    send.resize(count);
    for (size_t i = 0; i < count; ++i) send[i] = static_cast<int32_t>((rank + 1) * 1000 + i % 977);
    recv.assign(count, -1);
    scratch.assign(schedule.scratch_bytes, 0xAB);
    return Status::Ok();
  }

  BoundSchedule Bound() {
    return BoundSchedule{&schedule, reinterpret_cast<uint8_t*>(send.data()), reinterpret_cast<uint8_t*>(recv.data()),
                         scratch.data(), /*tag=*/42};
  }

  // Empty, or the first wrong element.
  std::string Check(int nranks) const {
    for (size_t i = 0; i < recv.size(); ++i) {
      int32_t expected = 0;
      for (int r = 0; r < nranks; ++r) expected += static_cast<int32_t>((r + 1) * 1000 + i % 977);
      if (recv[i] != expected) {
        return "element " + std::to_string(i) + ": got " + std::to_string(recv[i]) + ", expected " +
               std::to_string(expected);
      }
    }
    return "";
  }
};

struct Shape {
  Algorithm algo;
  size_t count;
  size_t chunk_bytes;
};

// Every rank runs every shape in turn (and the list twice) with one context.
TEST(ExecutorReuseTest, OneContextAcrossShapesAndAlgorithms) {
  const Shape shapes[] = {{Algorithm::kOneShot, 2, 4096},   {Algorithm::kRing, 10000, 4096},
                          {Algorithm::kTree, 3000, 1024},   {Algorithm::kOneShot, 1, 4096},
                          {Algorithm::kRing, 7, 4096},      {Algorithm::kHalvingDoubling, 5000, 2048},
                          {Algorithm::kRing, 0, 4096},      {Algorithm::kDirect, 4096, 512}};
  for (int nranks : {2, 3, 4}) {
    InprocFabric fabric(nranks);
    std::vector<std::string> errors(nranks);
    const std::atomic<bool> abort{false};
    std::vector<Status> results = RunRanks(fabric, [&](int rank, Transport* transport) {
      ExecutorContext context;
      Workspace staging;
      for (int pass = 0; pass < 2; ++pass) {
        for (const Shape& shape : shapes) {
          AllReduceRank work;
          CHORUS_RETURN_IF_ERROR(work.Build(shape.algo, rank, nranks, shape.count));
          ExecutorOptions options;
          options.chunk_bytes = shape.chunk_bytes;
          options.max_inflight_per_peer = 1 + pass * 3;
          options.staging = &staging;
          options.context = &context;
          CHORUS_RETURN_IF_ERROR(
              ExecuteSchedules(transport, rank, {work.Bound()}, options, abort, Deadline::AfterMs(kDeadlineMs)));
          std::string error = work.Check(nranks);
          if (!error.empty() && errors[rank].empty()) {
            errors[rank] = std::string(AlgorithmName(shape.algo)) + " count " + std::to_string(shape.count) + ": " +
                           error;
          }
        }
      }
      return Status::Ok();
    });
    for (int r = 0; r < nranks; ++r) {
      EXPECT_TRUE(results[r].ok()) << nranks << " ranks, rank " << r << ": " << results[r].message();
      EXPECT_EQ(errors[r], "") << nranks << " ranks, rank " << r;
    }
  }
}

// A failed launch leaves requests in the context's slots (its transport
// was shut down); the next launch on a healthy transport must start clean.
TEST(ExecutorReuseTest, ContextWorksAgainAfterAFailedLaunch) {
  std::vector<ExecutorContext> contexts(2);
  std::vector<Workspace> staging(2);
  const std::atomic<bool> abort{false};
  auto run = [&](InprocFabric& fabric, bool mismatch, std::vector<AllReduceRank>* work) {
    return RunRanks(fabric, [&](int rank, Transport* transport) {
      CHORUS_RETURN_IF_ERROR((*work)[rank].Build(Algorithm::kRing, rank, 2, 5000));
      BoundSchedule bound = (*work)[rank].Bound();
      if (mismatch && rank == 1) bound.tag = 7;
      ExecutorOptions options;
      options.chunk_bytes = 1024;
      options.staging = &staging[rank];
      options.context = &contexts[rank];
      return ExecuteSchedules(transport, rank, {bound}, options, abort, Deadline::AfterMs(kDeadlineMs));
    });
  };
  std::vector<AllReduceRank> failed(2), good(2);
  InprocFabric broken(2);
  std::vector<Status> first = run(broken, /*mismatch=*/true, &failed);
  EXPECT_FALSE(first[0].ok());
  EXPECT_FALSE(first[1].ok());
  InprocFabric healthy(2);
  std::vector<Status> second = run(healthy, /*mismatch=*/false, &good);
  for (int r = 0; r < 2; ++r) {
    ASSERT_TRUE(second[r].ok()) << "rank " << r << ": " << second[r].message();
    EXPECT_EQ(good[r].Check(2), "") << "rank " << r;
  }
}

// Allocations per rank thread over `iterations` warm launches of `algo`
// (float32 Sum, 2 ranks as threads over the shared-memory transport);
// `reuse`: with one ExecutorContext per rank, else a fresh one per launch.
std::vector<long> WarmAllocations(Algorithm algo, size_t count, int iterations, bool reuse = true) {
  constexpr int kRanks = 2;
  std::vector<std::unique_ptr<Transport>> transports(kRanks);
  std::vector<std::string> addresses(kRanks);
  for (int r = 0; r < kRanks; ++r) {
    TransportOptions options;
    options.rank = r;
    options.nranks = kRanks;
    options.secret[0] = 7;
    Status status = CreateShmTransport(options, &transports[r]);
    EXPECT_TRUE(status.ok()) << status.message();
    if (!status.ok()) return {};
    addresses[r] = transports[r]->LocalAddress();
  }
  std::vector<long> allocations(kRanks, -1);
  std::vector<Status> results(kRanks);
  const std::atomic<bool> abort{false};
  std::vector<std::thread> threads;
  for (int r = 0; r < kRanks; ++r) {
    threads.emplace_back([&, r] {
      Transport* transport = transports[r].get();
      results[r] = transport->Connect(addresses, Deadline::AfterMs(kDeadlineMs));
      CollectiveArgs args;
      args.coll = Collective::kAllReduce;
      args.count = count;
      args.dtype = chorusFloat32;
      args.op = ReduceOp::kSum;
      args.nranks = kRanks;
      args.rank = r;
      Schedule schedule;
      if (results[r].ok()) results[r] = BuildSchedule(args, algo, &schedule);
      std::vector<float> send(count, 1.0f + r), recv(count, 0.0f);
      std::vector<uint8_t> scratch(schedule.scratch_bytes);
      const std::vector<BoundSchedule> bound = {BoundSchedule{&schedule, reinterpret_cast<uint8_t*>(send.data()),
                                                              reinterpret_cast<uint8_t*>(recv.data()), scratch.data(),
                                                              /*tag=*/1}};
      ExecutorContext context;
      Workspace staging;
      ExecutorOptions options;
      options.staging = &staging;
      options.context = reuse ? &context : nullptr;
      for (int i = 0; results[r].ok() && i < 2 * iterations; ++i) {
        if (i == iterations) ResetThreadAllocations();  // the first half warms up
        results[r] = ExecuteSchedules(transport, r, bound, options, abort, Deadline::AfterMs(kDeadlineMs));
      }
      allocations[r] = ThreadAllocations();
      if (!results[r].ok()) transport->Shutdown();
      for (float value : recv) {
        if (results[r].ok() && value != 3.0f) results[r] = InternalError("wrong sum ", value);
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  for (int r = 0; r < kRanks; ++r) EXPECT_TRUE(results[r].ok()) << "rank " << r << ": " << results[r].message();
  return allocations;
}

TEST(ExecutorReuseTest, WarmEightByteOneShotAllocatesNothing) {
  std::vector<long> allocations = WarmAllocations(Algorithm::kOneShot, 2, 1000);
  EXPECT_EQ(allocations, std::vector<long>({0, 0}));
}

// The counter sees the executor's allocations: without a context each
// launch builds its working memory anew.
TEST(ExecutorReuseTest, WithoutAContextEveryLaunchAllocates) {
  std::vector<long> allocations = WarmAllocations(Algorithm::kOneShot, 2, 100, /*reuse=*/false);
  ASSERT_EQ(allocations.size(), 2u);
  EXPECT_GE(allocations[0], 100);
  EXPECT_GE(allocations[1], 100);
}

TEST(ExecutorReuseTest, WarmRingAllocatesNothing) {
  std::vector<long> eight = WarmAllocations(Algorithm::kRing, 2, 1000);
  EXPECT_EQ(eight, std::vector<long>({0, 0}));
  std::vector<long> four_kib = WarmAllocations(Algorithm::kRing, 1024, 300);
  EXPECT_EQ(four_kib, std::vector<long>({0, 0}));
}

// The whole call: chorusAllReduce on the NULL stream, 2 ranks as threads
// (shared memory between them), the tuner's own choice of algorithm.
TEST(ExecutorReuseTest, WarmEightByteChorusAllReduceAllocatesNothing) {
  chorusUniqueId id;
  ASSERT_EQ(chorusGetUniqueId(&id), chorusSuccess);
  constexpr int kRanks = 2, kCalls = 1000;
  std::vector<long> allocations(kRanks, -1);
  std::vector<chorusResult_t> results(kRanks, chorusSuccess);
  std::vector<std::string> errors(kRanks);
  std::vector<std::thread> threads;
  for (int r = 0; r < kRanks; ++r) {
    threads.emplace_back([&, r] {
      chorusComm_t comm = nullptr;
      results[r] = chorusCommInitRank(&comm, kRanks, id, r);
      if (results[r] != chorusSuccess) return;
      float send[2] = {1.0f + r, 2.0f}, recv[2] = {0, 0};
      for (int i = 0; results[r] == chorusSuccess && i < 2 * kCalls; ++i) {
        if (i == kCalls) ResetThreadAllocations();
        results[r] = chorusAllReduce(send, recv, 2, chorusFloat32, chorusSum, comm, nullptr);
      }
      allocations[r] = ThreadAllocations();
      if (results[r] != chorusSuccess) errors[r] = chorusGetLastError(comm);
      if (results[r] == chorusSuccess && (recv[0] != 3.0f || recv[1] != 4.0f)) errors[r] = "wrong sum";
      chorusCommDestroy(comm);
    });
  }
  for (std::thread& thread : threads) thread.join();
  for (int r = 0; r < kRanks; ++r) {
    EXPECT_EQ(results[r], chorusSuccess) << "rank " << r << ": " << errors[r];
    EXPECT_EQ(errors[r], "") << "rank " << r;
  }
  EXPECT_EQ(allocations, std::vector<long>({0, 0}));
}

}  // namespace
}  // namespace chorus::testing
