// The hierarchical AllReduce builders ("hier", "hier_sliced") on virtual
// ranks placed on hosts: exact results for many host shapes, how they
// degenerate, and how many bytes cross between hosts.
#include <gtest/gtest.h>

#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

#include "algorithms/algorithm.h"
#include "algorithms/topology.h"
#include "collective_case.h"

namespace chorus {
// Readable test parameters in gtest's output.
void PrintTo(Algorithm algo, std::ostream* out) { *out << AlgorithmName(algo); }
}  // namespace chorus

namespace chorus::testing {
namespace {

struct Shape {
  const char* name;
  std::vector<int> host_of_rank;
};

void PrintTo(const Shape& shape, std::ostream* out) { *out << shape.name; }

// Blocked: hosts of `per_host` consecutive ranks. Interleaved: rank r on
// host r % hosts.
std::vector<int> Blocked(int hosts, int per_host) {
  std::vector<int> out;
  for (int h = 0; h < hosts; ++h) out.insert(out.end(), per_host, h);
  return out;
}
std::vector<int> Interleaved(int hosts, int per_host) {
  std::vector<int> out;
  for (int r = 0; r < hosts * per_host; ++r) out.push_back(r % hosts);
  return out;
}

const Shape kShapes[] = {
    {"one_host_4", {0, 0, 0, 0}},
    {"one_host_5", {3, 3, 3, 3, 3}},
    {"one_rank_per_host_5", {0, 1, 2, 3, 4}},
    {"2x2", Blocked(2, 2)},
    {"2x3", Blocked(2, 3)},
    {"3x2", Blocked(3, 2)},
    {"4x4", Blocked(4, 4)},
    {"hosts_of_3_and_1", {0, 0, 0, 1}},
    {"hosts_of_1_and_3", {0, 1, 1, 1}},
    {"interleaved_2x3", Interleaved(2, 3)},
    {"interleaved_3x3", Interleaved(3, 3)},
    {"interleaved_4x4", Interleaved(4, 4)},
    // Identities that are not 0..H-1 nor first-seen ordered; sizes 3, 2, 1.
    {"uneven_odd_ids", {7, 3, 7, 7, 3, 9}},
};

struct TypeAndOp {
  DataType dtype;
  ReduceOp op;
};
const TypeAndOp kReducing[] = {
    {chorusInt32, ReduceOp::kSum}, {chorusInt32, ReduceOp::kProd},  {chorusInt32, ReduceOp::kMax},
    {chorusInt32, ReduceOp::kMin}, {chorusFloat64, ReduceOp::kSum}, {chorusFloat32, ReduceOp::kSum},
    {chorusUint8, ReduceOp::kMax}, {chorusFloat64, ReduceOp::kProd},
};
const size_t kChunkBytes[] = {1, 3, 7, 64, 100, 1000, size_t{1} << 20};

uint64_t Mix(uint64_t x) {
  x ^= x >> 33;
  x *= 0xff51afd7ed558ccdULL;
  x ^= x >> 33;
  return x;
}

class HierarchicalSweep : public ::testing::TestWithParam<std::tuple<Algorithm, Shape>> {};

TEST_P(HierarchicalSweep, MatchesReference) {
  const auto& [algo, shape] = GetParam();
  const int n = static_cast<int>(shape.host_of_rank.size());
  uint64_t variant = static_cast<uint64_t>(algo) * 1009 + static_cast<uint64_t>(n) * 17 + shape.host_of_rank.back();
  for (size_t count : {size_t{0}, size_t{1}, size_t(n) - 1, size_t(n) + 1, size_t{1031}}) {
    // Each case runs under three executor variants (chunk size, eager or
    // rendezvous sends, order).
    for (int run = 0; run < 6; ++run) {
      const bool in_place = run % 2;
      ++variant;
      const uint64_t h = Mix(variant);
      CollectiveCase c;
      c.coll = Collective::kAllReduce;
      c.algo = algo;
      c.nranks = n;
      c.count = count;
      c.in_place = in_place;
      c.host_of_rank = shape.host_of_rank;
      c.dtype = kReducing[variant % std::size(kReducing)].dtype;
      c.op = kReducing[variant % std::size(kReducing)].op;
      c.run.chunk_bytes = kChunkBytes[(h >> 8) % std::size(kChunkBytes)];
      c.run.rendezvous = (h >> 16) & 1;
      c.run.seed = h;
      const std::string error = RunCollectiveCase(c);
      ASSERT_TRUE(error.empty()) << error;
    }
  }
}

std::string SweepName(const ::testing::TestParamInfo<std::tuple<Algorithm, Shape>>& info) {
  return std::string(AlgorithmName(std::get<0>(info.param))) + "_" + std::get<1>(info.param).name;
}

INSTANTIATE_TEST_SUITE_P(Topologies, HierarchicalSweep,
                         ::testing::Combine(::testing::Values(Algorithm::kHierarchical,
                                                              Algorithm::kHierarchicalSliced),
                                            ::testing::ValuesIn(kShapes)),
                         SweepName);

std::vector<Schedule> BuildAll(Algorithm algo, const std::vector<int>& host_of_rank, size_t count,
                               bool with_topology = true) {
  const Topology topology{host_of_rank};
  const int n = static_cast<int>(host_of_rank.size());
  std::vector<Schedule> schedules(n);
  for (int r = 0; r < n; ++r) {
    CollectiveArgs args;
    args.count = count;
    args.dtype = chorusFloat32;
    args.nranks = n;
    args.rank = r;
    if (with_topology) args.topology = &topology;
    const Status status = BuildSchedule(args, algo, &schedules[r]);
    EXPECT_TRUE(status.ok()) << status.message();
  }
  return schedules;
}

// Bytes each rank sends to ranks on other hosts.
std::vector<size_t> CrossHostBytes(const std::vector<Schedule>& schedules, const std::vector<int>& host_of_rank) {
  std::vector<size_t> out(schedules.size(), 0);
  for (size_t r = 0; r < schedules.size(); ++r) {
    for (const Step& step : schedules[r].steps) {
      if (step.kind == StepKind::kSend && host_of_rank[step.peer] != host_of_rank[r]) out[r] += step.bytes;
    }
  }
  return out;
}

size_t Sum(const std::vector<size_t>& v) {
  size_t total = 0;
  for (size_t x : v) total += x;
  return total;
}

TEST(HierarchicalTraffic, OnlyLeadersCrossHostsLikeARingAmongLeaders) {
  const size_t count = 4 * 3 * 1000;  // divisible by every H and L below
  const size_t bytes = count * 4;
  for (const auto& [hosts, per_host] : std::vector<std::pair<int, int>>{{2, 2}, {2, 3}, {3, 2}, {4, 4}, {3, 4}}) {
    for (const std::vector<int>& placement : {Blocked(hosts, per_host), Interleaved(hosts, per_host)}) {
      const std::vector<size_t> cross = CrossHostBytes(BuildAll(Algorithm::kHierarchical, placement, count), placement);
      const Topology topology{placement};
      const HostLayout layout(&topology, hosts * per_host);
      for (int r = 0; r < hosts * per_host; ++r) {
        const bool leader = layout.leader(layout.host_of(r)) == r;
        // A leader sends 2(H-1)/H of the vector across hosts, others nothing.
        EXPECT_EQ(cross[r], leader ? 2 * (hosts - 1) * bytes / hosts : 0) << hosts << "x" << per_host << " rank " << r;
      }
      EXPECT_EQ(Sum(cross), 2 * size_t(hosts - 1) * bytes);
    }
    // The flat ring over ranks interleaved across hosts crosses on every hop.
    const std::vector<int> interleaved = Interleaved(hosts, per_host);
    const int p = hosts * per_host;
    const size_t flat = Sum(CrossHostBytes(BuildAll(Algorithm::kRing, interleaved, count), interleaved));
    EXPECT_EQ(flat, 2 * size_t(p - 1) * bytes);
    EXPECT_GE(flat, size_t(per_host) * 2 * size_t(hosts - 1) * bytes);  // L times what "hier" moves, or more
  }
}

TEST(HierarchicalTraffic, SlicedSpreadsTheSameCrossTrafficOverAllLocalRanks) {
  const size_t count = 4 * 3 * 1000;
  const size_t bytes = count * 4;
  for (const auto& [hosts, per_host] : std::vector<std::pair<int, int>>{{2, 2}, {2, 3}, {3, 2}, {4, 4}}) {
    for (const std::vector<int>& placement : {Blocked(hosts, per_host), Interleaved(hosts, per_host)}) {
      const std::vector<size_t> cross =
          CrossHostBytes(BuildAll(Algorithm::kHierarchicalSliced, placement, count), placement);
      for (int r = 0; r < hosts * per_host; ++r) {
        EXPECT_EQ(cross[r], 2 * (hosts - 1) * bytes / hosts / per_host) << hosts << "x" << per_host << " rank " << r;
      }
      EXPECT_EQ(Sum(cross), 2 * size_t(hosts - 1) * bytes);
    }
  }
}

// Groups below the host (NUMA domains): "hier" orders each host's tree by
// group, so few of its messages cross between groups, and results stay exact.
std::vector<Schedule> BuildGrouped(const Topology& topology, size_t count) {
  const int n = static_cast<int>(topology.host_of_rank.size());
  std::vector<Schedule> schedules(n);
  for (int r = 0; r < n; ++r) {
    CollectiveArgs args = RankArgs(Collective::kAllReduce, n, r, count);
    args.topology = &topology;
    const Status status = BuildSchedule(args, Algorithm::kHierarchical, &schedules[r]);
    EXPECT_TRUE(status.ok()) << status.message();
  }
  return schedules;
}

// Messages sent between ranks of one host and different groups.
int CrossGroupSends(const std::vector<Schedule>& schedules, const Topology& topology) {
  int sends = 0;
  for (size_t r = 0; r < schedules.size(); ++r) {
    for (const Step& step : schedules[r].steps) {
      sends += step.kind == StepKind::kSend && topology.host_of_rank[step.peer] == topology.host_of_rank[r] &&
               topology.group_of_rank[step.peer] != topology.group_of_rank[r];
    }
  }
  return sends;
}

TEST(HierarchicalGroups, TreeStaysInsideGroups) {
  // One host, 8 ranks, NUMA domains interleaved (rank r on domain r % 2).
  const Topology interleaved{std::vector<int>(8, 0), {0, 1, 0, 1, 0, 1, 0, 1}};
  EXPECT_EQ(CrossGroupSends(BuildGrouped(interleaved, 64), interleaved), 2);  // one up, one down
  const Topology ungrouped{interleaved.host_of_rank};
  Topology counted = ungrouped;
  counted.group_of_rank = interleaved.group_of_rank;
  EXPECT_EQ(CrossGroupSends(BuildGrouped(ungrouped, 64), counted), 8);  // without groups: by rank
  // Two hosts of 8, each split 4 + 4 in blocks: only the leaders' subtrees cross.
  const Topology blocked{{0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1},
                         {0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3}};
  EXPECT_EQ(CrossGroupSends(BuildGrouped(blocked, 64), blocked), 4);
}

TEST(HierarchicalGroups, MatchesReference) {
  const std::vector<std::pair<std::vector<int>, std::vector<int>>> shapes = {
      {std::vector<int>(8, 0), {0, 1, 0, 1, 0, 1, 0, 1}},
      {std::vector<int>(5, 0), {1, 0, 0, 1, 0}},
      {{0, 1, 0, 1, 0, 1}, {0, 2, 1, 2, 1, 3}},
      {{0, 0, 0, 1, 1, 1, 1}, {0, 1, 0, 2, 3, 3, 2}},
  };
  for (const auto& [hosts, groups] : shapes) {
    for (size_t count : {size_t{0}, size_t{1}, size_t{7}, size_t{1031}}) {
      CollectiveCase c;
      c.coll = Collective::kAllReduce;
      c.algo = Algorithm::kHierarchical;
      c.nranks = static_cast<int>(hosts.size());
      c.count = count;
      c.host_of_rank = hosts;
      c.group_of_rank = groups;
      c.dtype = chorusInt32;
      c.op = ReduceOp::kSum;
      const std::string error = RunCollectiveCase(c);
      EXPECT_TRUE(error.empty()) << error;
    }
  }
}

// (kind, peer, bytes) of the messages, ignoring local copies.
std::vector<std::tuple<StepKind, int, size_t>> Messages(const Schedule& schedule) {
  std::vector<std::tuple<StepKind, int, size_t>> out;
  for (const Step& step : schedule.steps) {
    if (step.kind != StepKind::kCopy) out.emplace_back(step.kind, step.peer, step.bytes);
  }
  return out;
}

TEST(Hierarchical, DegeneratesToTreeOnOneHostAndRingAcrossSingleRankHosts) {
  for (int p : {2, 5, 8}) {
    const std::vector<int> one_host(p, 0);
    std::vector<int> one_per_host;
    for (int r = 0; r < p; ++r) one_per_host.push_back(r);
    const auto hier_one_host = BuildAll(Algorithm::kHierarchical, one_host, 37);
    const auto hier_flat = BuildAll(Algorithm::kHierarchical, one_host, 37, /*with_topology=*/false);
    const auto tree = BuildAll(Algorithm::kTree, one_host, 37);
    const auto hier_spread = BuildAll(Algorithm::kHierarchical, one_per_host, 37);
    const auto sliced_one_host = BuildAll(Algorithm::kHierarchicalSliced, one_host, 37);
    const auto sliced_spread = BuildAll(Algorithm::kHierarchicalSliced, one_per_host, 37);
    const auto ring = BuildAll(Algorithm::kRing, one_host, 37);
    for (int r = 0; r < p; ++r) {
      EXPECT_EQ(Messages(hier_one_host[r]), Messages(tree[r])) << p << " ranks, rank " << r;
      EXPECT_EQ(Messages(hier_flat[r]), Messages(tree[r])) << p << " ranks, rank " << r;
      EXPECT_EQ(Messages(hier_spread[r]), Messages(ring[r])) << p << " ranks, rank " << r;
      EXPECT_EQ(Messages(sliced_one_host[r]), Messages(ring[r])) << p << " ranks, rank " << r;
      EXPECT_EQ(Messages(sliced_spread[r]), Messages(ring[r])) << p << " ranks, rank " << r;
      EXPECT_EQ(hier_one_host[r].algorithm, "hier");
      EXPECT_EQ(sliced_spread[r].algorithm, "hier_sliced");
    }
  }
}

TEST(Hierarchical, SlicedFallsBackToLeadersWhenHostsDifferInSize) {
  const std::vector<int> uneven = {0, 0, 0, 1, 1};
  const auto sliced = BuildAll(Algorithm::kHierarchicalSliced, uneven, 100);
  const auto hier = BuildAll(Algorithm::kHierarchical, uneven, 100);
  for (size_t r = 0; r < uneven.size(); ++r) {
    EXPECT_EQ(Messages(sliced[r]), Messages(hier[r])) << "rank " << r;
    EXPECT_EQ(sliced[r].algorithm, "hier_sliced");
  }
}

TEST(Hierarchical, TopologyOfTheWrongSizeIsRejected) {
  const Topology topology{{0, 0, 1}};
  CollectiveArgs args;
  args.count = 10;
  args.nranks = 4;
  args.topology = &topology;
  Schedule schedule;
  for (Algorithm algo : {Algorithm::kHierarchical, Algorithm::kHierarchicalSliced, Algorithm::kRing}) {
    const Status status = BuildSchedule(args, algo, &schedule);
    EXPECT_EQ(status.code(), chorusInvalidArgument) << AlgorithmName(algo);
    EXPECT_NE(status.message().find("topology"), std::string::npos) << status.message();
  }
}

TEST(HostLayout, NumbersHostsByLowestRankAndFindsLeaders) {
  const Topology topology{{7, 3, 7, 7, 3, 9}};
  const HostLayout layout(&topology, 6);
  ASSERT_EQ(layout.host_count(), 3);
  EXPECT_EQ(layout.local_ranks(0), (std::vector<int>{0, 2, 3}));
  EXPECT_EQ(layout.local_ranks(1), (std::vector<int>{1, 4}));
  EXPECT_EQ(layout.local_ranks(2), (std::vector<int>{5}));
  EXPECT_EQ(layout.leader(1), 1);
  EXPECT_EQ(layout.host_of(4), 1);
  EXPECT_EQ(layout.local_index(3), 2);
  EXPECT_EQ(layout.local_index(4), 1);
  EXPECT_FALSE(layout.uniform());
  const HostLayout flat(nullptr, 3);
  EXPECT_EQ(flat.host_count(), 1);
  EXPECT_EQ(flat.local_index(2), 2);
  EXPECT_TRUE(flat.uniform());
  EXPECT_TRUE(IsValidTopology(nullptr, 3));
  EXPECT_FALSE(IsValidTopology(&topology, 5));
}

TEST(Hierarchical, NamesParseAndSupportAllReduceOnly) {
  AlgorithmTable table;
  ASSERT_TRUE(ParseAlgorithmSpec("allreduce:hier_sliced", &table).ok());
  EXPECT_EQ(table.forced[static_cast<size_t>(Collective::kAllReduce)], Algorithm::kHierarchicalSliced);
  ASSERT_TRUE(ParseAlgorithmSpec("HIER", &table).ok());
  EXPECT_EQ(table.forced[static_cast<size_t>(Collective::kAllReduce)], Algorithm::kHierarchical);
  EXPECT_EQ(table.forced[static_cast<size_t>(Collective::kBroadcast)], Algorithm::kAuto);
  for (size_t i = 0; i < static_cast<size_t>(Collective::kCount); ++i) {
    const auto coll = static_cast<Collective>(i);
    EXPECT_EQ(Supports(Algorithm::kHierarchical, coll), coll == Collective::kAllReduce);
    EXPECT_EQ(Supports(Algorithm::kHierarchicalSliced, coll), coll == Collective::kAllReduce);
  }
  EXPECT_STREQ(AlgorithmName(Algorithm::kHierarchical), "hier");
  EXPECT_STREQ(AlgorithmName(Algorithm::kHierarchicalSliced), "hier_sliced");
  EXPECT_EQ(static_cast<int>(Algorithm::kHierarchical), 8);
  EXPECT_EQ(static_cast<int>(Algorithm::kHierarchicalSliced), 9);
}

}  // namespace
}  // namespace chorus::testing
