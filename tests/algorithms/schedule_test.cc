// Every collective x algorithm on 1..17 virtual ranks, against a reference,
// with and without pipeline segments.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <ostream>
#include <tuple>
#include <vector>

#include "algorithms/algorithm.h"
#include "collective_case.h"
#include "schedule_checker.h"

namespace chorus::testing {
namespace {

struct Pair {
  Collective coll;
  Algorithm algo;
};

const Pair kPairs[] = {
    {Collective::kAllReduce, Algorithm::kRing},
    {Collective::kAllReduce, Algorithm::kTree},
    {Collective::kBroadcast, Algorithm::kRing},
    {Collective::kBroadcast, Algorithm::kTree},
    {Collective::kReduce, Algorithm::kRing},
    {Collective::kReduce, Algorithm::kTree},
    {Collective::kAllGather, Algorithm::kRing},
    {Collective::kReduceScatter, Algorithm::kRing},
    {Collective::kAllToAll, Algorithm::kRing},
    {Collective::kGather, Algorithm::kRing},
    {Collective::kScatter, Algorithm::kRing},
    {Collective::kAllReduce, Algorithm::kParameterServer},
    {Collective::kBroadcast, Algorithm::kParameterServer},
    {Collective::kReduce, Algorithm::kParameterServer},
    {Collective::kAllReduce, Algorithm::kShardedParameterServer},
    {Collective::kAllReduce, Algorithm::kHalvingDoubling},
    {Collective::kAllReduce, Algorithm::kDoubleBinaryTree},
    {Collective::kBroadcast, Algorithm::kDoubleBinaryTree},
    {Collective::kReduce, Algorithm::kDoubleBinaryTree},
    {Collective::kBroadcast, Algorithm::kChain},
    {Collective::kReduce, Algorithm::kChain},
    {Collective::kAllReduce, Algorithm::kHierarchical},  // flat: no topology
    {Collective::kAllReduce, Algorithm::kHierarchicalSliced},
    {Collective::kAllReduce, Algorithm::kDirect},
    {Collective::kReduceScatter, Algorithm::kDirect},
    {Collective::kAllGather, Algorithm::kDirect},
    {Collective::kAllReduce, Algorithm::kOneShot},
};

bool Reduces(Collective coll) {
  return coll == Collective::kAllReduce || coll == Collective::kReduce || coll == Collective::kReduceScatter;
}
bool Rooted(Collective coll) {
  return coll == Collective::kBroadcast || coll == Collective::kReduce || coll == Collective::kGather ||
         coll == Collective::kScatter;
}

struct TypeAndOp {
  DataType dtype;
  ReduceOp op;
};
// Float products of 17 small integers are exact in float64 but not float32.
const TypeAndOp kReducing[] = {
    {chorusInt32, ReduceOp::kSum}, {chorusInt32, ReduceOp::kProd},   {chorusInt32, ReduceOp::kMax},
    {chorusInt32, ReduceOp::kMin}, {chorusFloat64, ReduceOp::kSum},  {chorusFloat32, ReduceOp::kSum},
    {chorusUint8, ReduceOp::kMax}, {chorusFloat64, ReduceOp::kProd},
};
const DataType kMoving[] = {chorusUint8, chorusInt32, chorusFloat64, chorusFloat32};
// Below, at and above a step's size; 1, 3, 7 and 100 are not multiples of
// every element size and get rounded down (1 and 3 to one element).
const size_t kChunkBytes[] = {1, 3, 7, 64, 100, 1000, size_t{1} << 20};
// Pipeline segments (CollectiveArgs::segment_bytes), honoured by the
// pipelined builders and ignored by the others: none, unaligned (rounded
// down), smaller and larger than the executor's chunk.
const size_t kSegmentBytes[] = {0, 0, 6, 100, 512, 4096};
// Sharded parameter server: all ranks serve (0), one, or a few.
const int kServerCounts[] = {0, 1, 3};

uint64_t Mix(uint64_t x) {
  x ^= x >> 33;
  x *= 0xff51afd7ed558ccdULL;
  x ^= x >> 33;
  return x;
}

void PrintTo(const Pair& pair, std::ostream* out) {
  *out << CollectiveName(pair.coll) << "/" << AlgorithmName(pair.algo);
}

class ScheduleSweep : public ::testing::TestWithParam<std::tuple<Pair, int>> {};

TEST_P(ScheduleSweep, MatchesReference) {
  const auto [pair, n] = GetParam();
  std::vector<size_t> counts = {0, 1, size_t(n) - 1, size_t(n), size_t(n) + 1, 1031};
  // The paper algorithms (explicit choices only) skip the second large size
  // to keep the sweep fast; 1031 already gives uneven splits everywhere.
  if (pair.algo == Algorithm::kRing || pair.algo == Algorithm::kTree) counts.push_back(1000);
  std::sort(counts.begin(), counts.end());
  counts.erase(std::unique(counts.begin(), counts.end()), counts.end());
  std::vector<int> roots = {0};
  if (Rooted(pair.coll)) roots = {0, n - 1, n / 2};
  std::sort(roots.begin(), roots.end());
  roots.erase(std::unique(roots.begin(), roots.end()), roots.end());

  uint64_t variant = static_cast<uint64_t>(pair.coll) * 131 + static_cast<uint64_t>(n) * 7;
  for (size_t count : counts) {
    for (int root : roots) {
      for (bool in_place : {false, true}) {
        ++variant;
        CollectiveCase c;
        c.coll = pair.coll;
        c.algo = pair.algo;
        c.nranks = n;
        c.count = count;
        c.root = root;
        c.in_place = in_place;
        if (Reduces(pair.coll)) {
          const TypeAndOp& t = kReducing[variant % std::size(kReducing)];
          c.dtype = t.dtype;
          c.op = t.op;
        } else {
          c.dtype = kMoving[variant % std::size(kMoving)];
        }
        const uint64_t h = Mix(variant);
        c.run.chunk_bytes = kChunkBytes[(h >> 8) % std::size(kChunkBytes)];
        c.run.rendezvous = (h >> 16) & 1;
        c.run.seed = h;
        c.segment_bytes = kSegmentBytes[(h >> 24) % std::size(kSegmentBytes)];
        if (c.segment_bytes == 6 && count > 100) c.segment_bytes = 300;  // keep step counts small
        c.server_count = kServerCounts[(h >> 32) % std::size(kServerCounts)];
        const std::string error = RunCollectiveCase(c);
        ASSERT_TRUE(error.empty()) << error;
      }
    }
  }
}

// Every dtype and op on a prime count (uneven segments), for the reducing
// collectives, on top of the rotation above.
class ReductionSweep : public ::testing::TestWithParam<std::tuple<Pair, int>> {};

TEST_P(ReductionSweep, EveryReductionOnAPrimeCount) {
  const auto [pair, n] = GetParam();
  uint64_t variant = static_cast<uint64_t>(pair.coll) * 977 + static_cast<uint64_t>(n) * 13;
  for (const TypeAndOp& t : kReducing) {
    ++variant;
    CollectiveCase c;
    c.coll = pair.coll;
    c.algo = pair.algo;
    c.nranks = n;
    c.count = 1031;
    c.root = n - 1;
    c.in_place = variant % 2;
    c.dtype = t.dtype;
    c.op = t.op;
    const uint64_t h = Mix(variant);
    c.run.chunk_bytes = kChunkBytes[(h >> 8) % std::size(kChunkBytes)];
    c.run.rendezvous = (h >> 16) & 1;
    c.run.seed = h;
    c.segment_bytes = kSegmentBytes[(h >> 24) % std::size(kSegmentBytes)];
    if (c.segment_bytes == 6) c.segment_bytes = 300;  // keep step counts small
    c.server_count = kServerCounts[(h >> 32) % std::size(kServerCounts)];
    const std::string error = RunCollectiveCase(c);
    ASSERT_TRUE(error.empty()) << error;
  }
}

std::string SweepName(const ::testing::TestParamInfo<std::tuple<Pair, int>>& info) {
  const auto [pair, n] = info.param;
  return std::string(CollectiveName(pair.coll)) + "_" + AlgorithmName(pair.algo) + "_" + std::to_string(n) + "ranks";
}

INSTANTIATE_TEST_SUITE_P(AllCollectives, ScheduleSweep,
                         ::testing::Combine(::testing::ValuesIn(kPairs), ::testing::Range(1, 18)), SweepName);

const Pair kReducingPairs[] = {
    {Collective::kAllReduce, Algorithm::kRing},
    {Collective::kAllReduce, Algorithm::kTree},
    {Collective::kReduce, Algorithm::kRing},
    {Collective::kReduce, Algorithm::kTree},
    {Collective::kReduceScatter, Algorithm::kRing},
    {Collective::kAllReduce, Algorithm::kParameterServer},
    {Collective::kReduce, Algorithm::kParameterServer},
    {Collective::kAllReduce, Algorithm::kShardedParameterServer},
    {Collective::kAllReduce, Algorithm::kHalvingDoubling},
    {Collective::kAllReduce, Algorithm::kDoubleBinaryTree},
    {Collective::kReduce, Algorithm::kDoubleBinaryTree},
    {Collective::kReduce, Algorithm::kChain},
    {Collective::kAllReduce, Algorithm::kHierarchical},
    {Collective::kAllReduce, Algorithm::kHierarchicalSliced},
    {Collective::kAllReduce, Algorithm::kDirect},
    {Collective::kReduceScatter, Algorithm::kDirect},
    {Collective::kAllReduce, Algorithm::kOneShot},
};

INSTANTIATE_TEST_SUITE_P(Reductions, ReductionSweep,
                         ::testing::Combine(::testing::ValuesIn(kReducingPairs), ::testing::Range(1, 18)), SweepName);

}  // namespace
}  // namespace chorus::testing
