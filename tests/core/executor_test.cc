// ExecuteSchedules runs real schedules (BuildSchedule) on N ranks as threads
// over the in-process transport; results are checked element by element.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstring>
#include <ostream>
#include <string>
#include <thread>
#include <vector>

#include "algorithms/algorithm.h"
#include "core/executor.h"
#include "core/workspace.h"
#include "executor_case.h"
#include "inproc_transport.h"
#include "rank_threads.h"

namespace chorus::testing {
namespace {

constexpr size_t kMiB = 1 << 20;

const Collective kAllCollectives[] = {Collective::kAllReduce, Collective::kBroadcast,     Collective::kReduce,
                                      Collective::kAllGather, Collective::kReduceScatter, Collective::kAllToAll,
                                      Collective::kGather,    Collective::kScatter};

// A root that differs with the case, so that roots 0, middle and last occur.
int RootFor(int nranks, size_t count) { return count % 2 == 0 ? 0 : nranks / 2 + (nranks > 2 ? 1 : 0); }

ExecutorCase MakeCase(Collective coll, Algorithm algo, int nranks, size_t count, size_t chunk, bool in_place,
                      DataType dtype) {
  ExecutorCase c;
  c.coll = coll;
  c.algo = algo;
  c.nranks = nranks;
  c.count = count;
  c.chunk_bytes = chunk;
  c.in_place = in_place;
  c.dtype = dtype;
  c.root = RootFor(nranks, count);
  return c;
}

// Every collective with the ring, every tree collective: every rank count
// 1..8 against every count and chunk size (64 B = many chunks per step;
// 1 MiB = one). Placement and dtype rotate with the rank count, so each
// (collective, count, chunk) runs in and out of place, int32 and float64.
std::vector<ExecutorCase> CollectiveCases() {
  const size_t counts[] = {0, 1, 1000, 12345};
  const size_t chunks[] = {64, 4096, kMiB};
  std::vector<ExecutorCase> cases;
  for (Collective coll : kAllCollectives) {
    for (Algorithm algo : {Algorithm::kRing, Algorithm::kTree}) {
      if (!Supports(algo, coll)) continue;
      for (size_t count : counts) {
        for (size_t chunk : chunks) {
          for (int nranks = 1; nranks <= 8; ++nranks) {
            const bool in_place = nranks % 2 == 0;
            const DataType dtype = (nranks / 2) % 2 == 0 ? chorusInt32 : chorusFloat64;
            cases.push_back(MakeCase(coll, algo, nranks, count, chunk, in_place, dtype));
          }
        }
      }
    }
  }
  return cases;
}

}  // namespace

// Readable parameters in gtest's failure lines.
void PrintTo(const ExecutorCase& c, std::ostream* out) { *out << DescribeExecutorCase(c); }

namespace {

std::string CaseName(const ::testing::TestParamInfo<ExecutorCase>& info) {
  const ExecutorCase& c = info.param;
  std::string name = std::string(CollectiveName(c.coll)) + "_" + AlgorithmName(c.algo) + "_n" +
                     std::to_string(c.nranks) + "_c" + std::to_string(c.count) + "_k" + std::to_string(c.chunk_bytes) +
                     (c.in_place ? "_inplace_" : "_outofplace_") + (c.dtype == chorusFloat64 ? "f64" : "i32") + "_w" +
                     std::to_string(c.max_inflight_per_peer);
  if (c.pace_chunks != ExecutorCase().pace_chunks) name += "_pace" + std::to_string(c.pace_chunks);
  if (c.segment_bytes != 0) name += "_seg" + std::to_string(c.segment_bytes);
  if (c.transport != CaseTransport::kInproc) name += std::string("_") + CaseTransportName(c.transport);
  return name;
}

// Odd chunk sizes: not a multiple of the element (rounded down) and smaller
// than one element (one element per chunk).
std::vector<ExecutorCase> OddChunkCases() {
  std::vector<ExecutorCase> cases;
  for (size_t chunk : {size_t{1}, size_t{100}, size_t{4100}}) {
    for (int nranks : {2, 3, 5}) {
      for (DataType dtype : {chorusInt32, chorusFloat64}) {
        cases.push_back(MakeCase(Collective::kAllReduce, Algorithm::kRing, nranks, 1000, chunk, false, dtype));
        cases.push_back(MakeCase(Collective::kAllReduce, Algorithm::kTree, nranks, 1000, chunk, true, dtype));
        cases.push_back(MakeCase(Collective::kReduceScatter, Algorithm::kRing, nranks, 333, chunk, true, dtype));
        cases.push_back(MakeCase(Collective::kBroadcast, Algorithm::kTree, nranks, 1001, chunk, false, dtype));
      }
    }
  }
  return cases;
}

// One or two chunks in flight per peer: the pipeline must still drain.
std::vector<ExecutorCase> NarrowPipelineCases() {
  std::vector<ExecutorCase> cases;
  for (int inflight : {1, 2}) {
    for (Collective coll : kAllCollectives) {
      ExecutorCase c = MakeCase(coll, Algorithm::kRing, 5, 1000, 256, coll == Collective::kAllReduce, chorusInt32);
      c.max_inflight_per_peer = inflight;
      cases.push_back(c);
    }
    for (Collective coll : {Collective::kAllReduce, Collective::kBroadcast, Collective::kReduce}) {
      ExecutorCase c = MakeCase(coll, Algorithm::kTree, 6, 1000, 256, false, chorusFloat64);
      c.max_inflight_per_peer = inflight;
      cases.push_back(c);
    }
  }
  return cases;
}

class ExecutorCollectiveTest : public ::testing::TestWithParam<ExecutorCase> {};

TEST_P(ExecutorCollectiveTest, MatchesReference) { EXPECT_EQ(RunExecutorCase(GetParam()), ""); }

INSTANTIATE_TEST_SUITE_P(Matrix, ExecutorCollectiveTest, ::testing::ValuesIn(CollectiveCases()), CaseName);

// Every rank count 1..8 for AllReduce (ring and tree) at the sizes that
// matter most: a count not divisible by the ranks, pipelined in 4 KiB chunks.
std::vector<ExecutorCase> RankCountCases() {
  std::vector<ExecutorCase> cases;
  for (Algorithm algo : {Algorithm::kRing, Algorithm::kTree}) {
    for (int nranks = 1; nranks <= 8; ++nranks) {
      for (bool in_place : {false, true}) {
        cases.push_back(MakeCase(Collective::kAllReduce, algo, nranks, 12345, 4096, in_place,
                                 in_place ? chorusFloat64 : chorusInt32));
      }
    }
  }
  return cases;
}

INSTANTIATE_TEST_SUITE_P(NarrowPipeline, ExecutorCollectiveTest, ::testing::ValuesIn(NarrowPipelineCases()), CaseName);

INSTANTIATE_TEST_SUITE_P(OddChunks, ExecutorCollectiveTest, ::testing::ValuesIn(OddChunkCases()), CaseName);

// Paced receives (schedule.h rule 5) at their tightest: one chunk of
// lookahead and one chunk in flight, with and without pipeline segments,
// for every algorithm and collective, over the rendezvous fabric (a send
// waits for its receive, so a pacing cycle would hang, not pass).
std::vector<ExecutorCase> TightPacingCases() {
  std::vector<ExecutorCase> cases;
  for (int a = static_cast<int>(Algorithm::kRing); a < static_cast<int>(Algorithm::kCount); ++a) {
    const auto algo = static_cast<Algorithm>(a);
    for (Collective coll : kAllCollectives) {
      if (!Supports(algo, coll)) continue;
      for (int nranks : {2, 3, 5, 8}) {
        for (size_t segment : {size_t{0}, size_t{2048}}) {
          ExecutorCase c = MakeCase(coll, algo, nranks, 3000, 512, nranks % 2 == 1, chorusInt32);
          c.pace_chunks = 1;
          c.max_inflight_per_peer = 1;
          c.segment_bytes = segment;
          cases.push_back(c);
        }
      }
    }
  }
  return cases;
}

INSTANTIATE_TEST_SUITE_P(TightPacing, ExecutorCollectiveTest, ::testing::ValuesIn(TightPacingCases()), CaseName);

INSTANTIATE_TEST_SUITE_P(AllReduceRanks, ExecutorCollectiveTest, ::testing::ValuesIn(RankCountCases()), CaseName);

// Over the shared-memory transport, whose endpoints reduce receive-reduce
// chunks as they arrive (no staging): the reducing collectives with chunks
// small enough for the ring and large enough to be pulled (256 KiB), and
// uneven counts; the staged path over the same transport for comparison.
std::vector<ExecutorCase> ShmCases() {
  std::vector<ExecutorCase> cases;
  for (CaseTransport transport : {CaseTransport::kShm, CaseTransport::kShmCma, CaseTransport::kShmStaged}) {
    for (Collective coll : {Collective::kAllReduce, Collective::kReduceScatter, Collective::kReduce}) {
      for (Algorithm algo : {Algorithm::kRing, Algorithm::kTree}) {
        if (!Supports(algo, coll)) continue;
        for (int nranks : {2, 3, 4}) {
          for (size_t chunk : {size_t{4096}, size_t{256} << 10}) {
            const bool in_place = nranks != 3;
            const DataType dtype = nranks == 2 ? chorusFloat64 : chorusInt32;
            const size_t count = chunk == 4096 ? 12345 : 400000 + nranks;
            ExecutorCase c = MakeCase(coll, algo, nranks, count, chunk, in_place, dtype);
            c.transport = transport;
            cases.push_back(c);
          }
        }
      }
    }
  }
  return cases;
}

INSTANTIATE_TEST_SUITE_P(Shm, ExecutorCollectiveTest, ::testing::ValuesIn(ShmCases()), CaseName);

// Random float32 sums, whose rounding depends on the order of additions,
// are bitwise the same whether receive-reduce chunks are combined on
// receipt (from the ring record or straight from the sender's buffer) or
// staged first: both add in the same order. Chunks of 4 KiB travel in ring
// records, chunks of 256 KiB are pulled; counts leave uneven tails.
struct FloatPathCase {
  Algorithm algo;
  int nranks;
  size_t count;
  size_t chunk;
  bool in_place;
};

class CombinedVersusStagedTest : public ::testing::TestWithParam<FloatPathCase> {};

TEST_P(CombinedVersusStagedTest, RandomFloatSumsAreBitwiseIdentical) {
  const FloatPathCase& p = GetParam();
  ExecutorCase c = MakeCase(Collective::kAllReduce, p.algo, p.nranks, p.count, p.chunk, p.in_place, chorusFloat32);
  for (uint32_t seed : {1u, 2u}) {
    std::vector<std::vector<uint8_t>> combined, staged;
    c.transport = CaseTransport::kShm;
    ASSERT_EQ(RunRandomFloatAllReduce(c, seed, &combined), "");
    c.transport = CaseTransport::kShmStaged;
    ASSERT_EQ(RunRandomFloatAllReduce(c, seed, &staged), "");
    ASSERT_EQ(combined.size(), static_cast<size_t>(p.nranks));
    for (int r = 0; r < p.nranks; ++r) {
      ASSERT_EQ(combined[r].size(), p.count * sizeof(float));
      const auto mismatch = std::mismatch(combined[r].begin(), combined[r].end(), staged[r].begin());
      EXPECT_TRUE(mismatch.first == combined[r].end())
          << "seed " << seed << " rank " << r << " differs at byte " << (mismatch.first - combined[r].begin());
      // And every rank holds the same result.
      EXPECT_TRUE(combined[r] == combined[0]) << "seed " << seed << " rank " << r << " disagrees with rank 0";
    }
  }
}

std::vector<FloatPathCase> FloatPathCases() {
  std::vector<FloatPathCase> cases;
  for (Algorithm algo : {Algorithm::kRing, Algorithm::kDirect}) {
    if (!Supports(algo, Collective::kAllReduce)) continue;
    for (int nranks : {2, 3, 4}) {
      cases.push_back({algo, nranks, 12345, 4096, nranks == 3});
      cases.push_back({algo, nranks, 300001, size_t{256} << 10, nranks != 3});
    }
  }
  return cases;
}

INSTANTIATE_TEST_SUITE_P(Shm, CombinedVersusStagedTest, ::testing::ValuesIn(FloatPathCases()),
                         [](const ::testing::TestParamInfo<FloatPathCase>& info) {
                           const FloatPathCase& p = info.param;
                           return std::string(AlgorithmName(p.algo)) + "_n" + std::to_string(p.nranks) + "_c" +
                                  std::to_string(p.count) + "_k" + std::to_string(p.chunk) +
                                  (p.in_place ? "_inplace" : "_outofplace");
                         });

// Through a mux that mixes shm (combining) and in-process (staging) peers.
std::vector<ExecutorCase> MixedCases() {
  std::vector<ExecutorCase> cases;
  for (Algorithm algo : {Algorithm::kRing, Algorithm::kTree}) {
    for (int nranks : {3, 4, 5}) {
      for (size_t chunk : {size_t{4096}, size_t{256} << 10}) {
        const size_t count = chunk == 4096 ? 12345 : 300000 + nranks;
        ExecutorCase c = MakeCase(Collective::kAllReduce, algo, nranks, count, chunk, nranks == 4, chorusInt32);
        c.transport = CaseTransport::kMixed;
        cases.push_back(c);
      }
    }
  }
  ExecutorCase scatter = MakeCase(Collective::kReduceScatter, Algorithm::kRing, 4, 50000, 4096, true, chorusFloat64);
  scatter.transport = CaseTransport::kMixed;
  cases.push_back(scatter);
  return cases;
}

INSTANTIATE_TEST_SUITE_P(Mixed, ExecutorCollectiveTest, ::testing::ValuesIn(MixedCases()), CaseName);

// A group launch: two AllReduces (ring on int32, tree on float64) with
// different tags run as one unit; messages of both interleave per peer in
// schedule order and must still meet their own receives.
TEST(ExecutorGroupTest, TwoSchedulesInOneLaunch) {
  constexpr int kRanks = 4;
  constexpr size_t kIntCount = 1000, kDoubleCount = 777;
  struct RankData {
    Schedule ring, tree;
    std::vector<int32_t> int_send, int_recv;
    std::vector<double> double_send, double_recv;
    std::vector<uint8_t> ring_scratch, tree_scratch;
  };
  std::vector<RankData> data(kRanks);
  for (int r = 0; r < kRanks; ++r) {
    CollectiveArgs args;
    args.coll = Collective::kAllReduce;
    args.nranks = kRanks;
    args.rank = r;
    args.count = kIntCount;
    args.dtype = chorusInt32;
    ASSERT_TRUE(BuildSchedule(args, Algorithm::kRing, &data[r].ring).ok());
    args.count = kDoubleCount;
    args.dtype = chorusFloat64;
    ASSERT_TRUE(BuildSchedule(args, Algorithm::kTree, &data[r].tree).ok());
    for (size_t i = 0; i < kIntCount; ++i) data[r].int_send.push_back(static_cast<int32_t>(r * 1000 + i));
    for (size_t i = 0; i < kDoubleCount; ++i) data[r].double_send.push_back(r * 0.5 - static_cast<double>(i));
    data[r].int_recv.assign(kIntCount, -1);
    data[r].double_recv.assign(kDoubleCount, -1);
    data[r].ring_scratch.resize(data[r].ring.scratch_bytes);
    data[r].tree_scratch.resize(data[r].tree.scratch_bytes);
  }
  InprocFabric fabric(kRanks);
  const std::atomic<bool> abort{false};
  std::vector<Status> results = RunRanks(fabric, [&](int r, Transport* transport) {
    RankData& d = data[r];
    BoundSchedule ring{&d.ring, reinterpret_cast<uint8_t*>(d.int_send.data()),
                       reinterpret_cast<uint8_t*>(d.int_recv.data()), d.ring_scratch.data(), 1};
    BoundSchedule tree{&d.tree, reinterpret_cast<uint8_t*>(d.double_send.data()),
                       reinterpret_cast<uint8_t*>(d.double_recv.data()), d.tree_scratch.data(), 2};
    Workspace staging;
    ExecutorOptions options;
    options.chunk_bytes = 256;
    options.staging = &staging;
    return ExecuteSchedules(transport, r, {ring, tree}, options, abort, Deadline::AfterMs(20000));
  });
  for (int r = 0; r < kRanks; ++r) {
    ASSERT_TRUE(results[r].ok()) << "rank " << r << ": " << results[r].message();
    for (size_t i = 0; i < kIntCount; ++i) {
      ASSERT_EQ(data[r].int_recv[i], static_cast<int32_t>(6000 + 4 * i)) << "rank " << r << " int element " << i;
    }
    for (size_t i = 0; i < kDoubleCount; ++i) {
      ASSERT_EQ(data[r].double_recv[i], 3.0 - 4.0 * static_cast<double>(i)) << "rank " << r << " double element " << i;
    }
  }
}

// Rule 1 of algorithms/schedule.h is transitive: a step that moves no bytes
// still "finishes" only once its own dependencies allow it, so a step that
// depends on it must wait for those too. Here C depends on the empty step B,
// which depends on A, a receive that arrives late; C must copy A's data.
TEST(ExecutorRulesTest, EmptyStepKeepsItsDependencies) {
  constexpr size_t kBytes = 64;
  Schedule receiver;
  receiver.algorithm = "test";
  Step a;
  a.kind = StepKind::kRecv;
  a.peer = 1;
  a.dst = {BufferId::kRecv, 0};
  a.bytes = kBytes;
  const uint32_t a_index = receiver.Add(a);
  Step b;
  b.kind = StepKind::kCopy;
  b.src = {BufferId::kSend, 0};
  b.dst = {BufferId::kScratch, 0};
  b.bytes = 0;
  b.deps = {a_index};
  const uint32_t b_index = receiver.Add(b);
  Step c;
  c.kind = StepKind::kCopy;
  c.src = {BufferId::kRecv, 0};
  c.dst = {BufferId::kRecv, kBytes};
  c.bytes = kBytes;
  c.deps = {b_index};
  receiver.Add(c);

  Schedule sender;
  sender.algorithm = "test";
  Step send;
  send.kind = StepKind::kSend;
  send.peer = 0;
  send.src = {BufferId::kSend, 0};
  send.bytes = kBytes;
  sender.Add(send);

  std::vector<std::vector<uint8_t>> send_buffers = {std::vector<uint8_t>(kBytes, 0),
                                                    std::vector<uint8_t>(kBytes, 0x5A)};
  std::vector<std::vector<uint8_t>> recv_buffers(2, std::vector<uint8_t>(2 * kBytes, 0));
  std::vector<uint8_t> scratch(kBytes);
  InprocFabric fabric(2);
  const std::atomic<bool> abort{false};
  std::vector<Status> results = RunRanks(fabric, [&](int r, Transport* transport) {
    if (r == 1) std::this_thread::sleep_for(std::chrono::milliseconds(30));  // A arrives late
    BoundSchedule bound{r == 0 ? &receiver : &sender, send_buffers[r].data(), recv_buffers[r].data(), scratch.data(),
                        3};
    Workspace staging;
    ExecutorOptions options;
    options.staging = &staging;
    return ExecuteSchedules(transport, r, {bound}, options, abort, Deadline::AfterMs(5000));
  });
  ASSERT_TRUE(results[0].ok()) << results[0].message();
  ASSERT_TRUE(results[1].ok()) << results[1].message();
  const std::vector<uint8_t>& out = recv_buffers[0];
  EXPECT_EQ(std::count(out.begin(), out.begin() + kBytes, 0x5A), kBytes) << "A's data";
  EXPECT_EQ(std::count(out.begin() + kBytes, out.end(), 0x5A), kBytes) << "C ran before A finished";
}

}  // namespace
}  // namespace chorus::testing
