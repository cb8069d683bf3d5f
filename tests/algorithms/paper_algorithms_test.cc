// Structure of the algorithms from the papers, beyond "the result is right"
// (schedule_test checks results): the traffic each moves, the shape of the
// double binary tree, and the pipeline segments.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <set>
#include <vector>

#include "algorithms/algorithm.h"
#include "algorithms/dbtree/double_binary_tree.h"
#include "algorithms/dbtree/rooted_double_tree.h"
#include "algorithms/segments.h"
#include "collective_case.h"

namespace chorus::testing {
namespace {

Schedule Build(const CollectiveArgs& args, Algorithm algo) {
  Schedule schedule;
  Status status = BuildSchedule(args, algo, &schedule);
  EXPECT_TRUE(status.ok()) << status.message();
  return schedule;
}

struct Traffic {
  size_t sent = 0;
  size_t received = 0;
  size_t sends = 0;
};

Traffic TrafficOf(const Schedule& schedule) {
  Traffic traffic;
  for (const Step& step : schedule.steps) {
    if (step.kind == StepKind::kSend) {
      traffic.sent += step.bytes;
      ++traffic.sends;
    }
    if (step.kind == StepKind::kRecv || step.kind == StepKind::kRecvReduce) traffic.received += step.bytes;
  }
  return traffic;
}

// FireCaffe's comparison: the central server moves (p-1)*|W| each way while
// halving-doubling moves 2(p-1)/p*|W| per rank, in 2*log2(p) messages.
TEST(PaperAlgorithms, ParameterServerVersusHalvingDoublingTraffic) {
  for (int p : {4, 8, 16}) {
    const size_t count = 16 * 1000;  // divisible by every p
    const size_t model = count * 4;  // |W| in bytes
    for (int r = 0; r < p; ++r) {
      const Traffic ps = TrafficOf(Build(RankArgs(Collective::kAllReduce, p, r, count), Algorithm::kParameterServer));
      if (r == 0) {
        EXPECT_EQ(ps.sent, (p - 1) * model);
        EXPECT_EQ(ps.received, (p - 1) * model);
      } else {
        EXPECT_EQ(ps.sent, model);
        EXPECT_EQ(ps.received, model);
      }
      const Traffic hd = TrafficOf(Build(RankArgs(Collective::kAllReduce, p, r, count), Algorithm::kHalvingDoubling));
      EXPECT_EQ(hd.sent, 2 * (p - 1) * model / p) << "p=" << p << " rank " << r;
      EXPECT_EQ(hd.received, 2 * (p - 1) * model / p);
      int log2p = 0;
      while ((1 << log2p) < p) ++log2p;
      EXPECT_EQ(hd.sends, size_t(2 * log2p));
      // Sharded with k = p servers: ring-like volume per rank.
      const Traffic sharded =
          TrafficOf(Build(RankArgs(Collective::kAllReduce, p, r, count), Algorithm::kShardedParameterServer));
      EXPECT_EQ(sharded.sent, 2 * (p - 1) * model / p);
      EXPECT_EQ(sharded.received, 2 * (p - 1) * model / p);
    }
  }
}

TEST(PaperAlgorithms, CentralServerIsTheRoot) {
  CollectiveArgs args = RankArgs(Collective::kAllReduce, 5, 3, 100);
  args.root = 3;
  const Traffic server = TrafficOf(Build(args, Algorithm::kParameterServer));
  EXPECT_EQ(server.sent, 4u * 400u);
  args.rank = 0;
  const Traffic worker = TrafficOf(Build(args, Algorithm::kParameterServer));
  EXPECT_EQ(worker.sent, 400u);
}

TEST(PaperAlgorithms, ShardedServerCountLimitsServers) {
  const int p = 6;
  const size_t count = 600;
  for (int r = 0; r < p; ++r) {
    CollectiveArgs args = RankArgs(Collective::kAllReduce, p, r, count);
    args.server_count = 2;
    const Schedule schedule = Build(args, Algorithm::kShardedParameterServer);
    std::set<int> peers_sent_to;
    for (const Step& step : schedule.steps) {
      if (step.kind == StepKind::kSend) peers_sent_to.insert(step.peer);
    }
    const Traffic traffic = TrafficOf(schedule);
    if (r < 2) {
      // A server: pushes the other shard, receives 5 pushes, serves 5 pulls.
      EXPECT_EQ(traffic.sent, 300u * 4 + 5 * 300u * 4);
      EXPECT_EQ(traffic.received, 5 * 300u * 4 + 300u * 4);
    } else {
      EXPECT_EQ(peers_sent_to, (std::set<int>{0, 1}));
      EXPECT_EQ(traffic.sent, count * 4);
      EXPECT_EQ(traffic.received, count * 4);
    }
  }
}

// Parent and children agree and every rank hangs under its tree's root.
void CheckTreeShapes(int n, const std::vector<BinaryTreeNode> (&trees)[2], const std::vector<int>& roots) {
  for (int t = 0; t < 2; ++t) {
    for (int r = 0; r < n; ++r) {
      const BinaryTreeNode& node = trees[t][r];
      EXPECT_LE(node.children.size(), 2u);
      for (int child : node.children) {
        ASSERT_GE(child, 0);
        ASSERT_LT(child, n);
        EXPECT_EQ(trees[t][child].parent, r) << "n=" << n << " tree " << t;
      }
      int at = r;
      for (int hops = 0; trees[t][at].parent >= 0; ++hops) {
        ASSERT_LT(hops, n) << "cycle, n=" << n << " tree " << t;
        at = trees[t][at].parent;
      }
      EXPECT_EQ(at, roots[t]) << "n=" << n << " tree " << t << " rank " << r;
    }
  }
}

bool InteriorInBoth(const std::vector<BinaryTreeNode> (&trees)[2], int rank) {
  return !trees[0][rank].children.empty() && !trees[1][rank].children.empty();
}

TEST(PaperAlgorithms, DoubleBinaryTreeIsComplementary) {
  for (int n = 1; n <= 70; ++n) {
    std::vector<BinaryTreeNode> trees[2];
    for (int t = 0; t < 2; ++t) {
      for (int r = 0; r < n; ++r) trees[t].push_back(DoubleBinaryTreeNode(t, r, n));
    }
    CheckTreeShapes(n, trees, {DoubleBinaryTreeRoot(0, n), DoubleBinaryTreeRoot(1, n)});
    // Each rank is interior in at most one tree (n odd: except rank 0).
    for (int r = n % 2 == 1 ? 1 : 0; r < n; ++r) EXPECT_FALSE(InteriorInBoth(trees, r)) << "n=" << n << " rank " << r;
  }
  // NCCL's tree 0 for 8 ranks: 0 -> 4; 4 -> 2, 6; 2 -> 1, 3; 6 -> 5, 7.
  EXPECT_EQ(InOrderBinaryTreeNode(0, 8).children, (std::vector<int>{4}));
  EXPECT_EQ(InOrderBinaryTreeNode(4, 8).children, (std::vector<int>{2, 6}));
  EXPECT_EQ(InOrderBinaryTreeNode(6, 8).children, (std::vector<int>{5, 7}));
  EXPECT_EQ(InOrderBinaryTreeNode(7, 8).parent, 6);
  EXPECT_TRUE(InOrderBinaryTreeNode(7, 8).children.empty());
}

TEST(PaperAlgorithms, RootedDoubleTreeHangsBothTreesUnderTheRoot) {
  for (int n = 2; n <= 40; ++n) {
    for (int root : {0, n / 2, n - 1}) {
      std::vector<BinaryTreeNode> trees[2];
      for (int t = 0; t < 2; ++t) {
        for (int r = 0; r < n; ++r) trees[t].push_back(RootedDoubleTreeNode(t, r, root, n));
        EXPECT_EQ(trees[t][root].children.size(), 1u);
      }
      // The root has a child in both; among the others the n-1 rank rule holds.
      const int exception = (n - 1) % 2 == 1 ? (root + 1) % n : -1;
      for (int r = 0; r < n; ++r) {
        if (r == root || r == exception) continue;
        EXPECT_FALSE(InteriorInBoth(trees, r)) << "n=" << n << " root " << root << " rank " << r;
      }
      CheckTreeShapes(n, trees, {root, root});
    }
  }
}

TEST(PaperAlgorithms, PipelineSegmentsRoundToWholeElements) {
  EXPECT_EQ(PipelineSegmentBytes(0, 4, 1000), 1000u);
  EXPECT_EQ(PipelineSegmentBytes(2000, 4, 1000), 1000u);
  EXPECT_EQ(PipelineSegmentBytes(101, 4, 1000), 100u);
  EXPECT_EQ(PipelineSegmentBytes(3, 4, 1000), 4u);
  EXPECT_EQ(PipelineSegmentCount(1000, 300), 4u);
  EXPECT_EQ(PipelineSegment(1000, 300, 3).offset, 900u);
  EXPECT_EQ(PipelineSegment(1000, 300, 3).bytes, 100u);
  EXPECT_EQ(PipelineSegment(1000, 300, 4).bytes, 0u);
}

// segment_bytes cuts every hop into segment-sized steps whose dependencies
// stay per segment (equal length), so hops overlap whatever the executor's
// chunk; 0 keeps one step per hop.
TEST(PaperAlgorithms, SegmentBytesCutsPipelinedSteps) {
  const size_t count = 2500;  // 10000 bytes -> 10 segments of 1000
  for (Algorithm algo : {Algorithm::kChain, Algorithm::kTree, Algorithm::kDoubleBinaryTree, Algorithm::kParameterServer,
                         Algorithm::kShardedParameterServer}) {
    for (Collective coll : {Collective::kAllReduce, Collective::kBroadcast, Collective::kReduce}) {
      if (!Supports(algo, coll)) continue;
      for (int p : {2, 5, 8}) {
        for (bool in_place : {false, true}) {
          for (int r = 0; r < p; ++r) {
            CollectiveArgs args = RankArgs(coll, p, r, count);
            args.root = p / 2;
            args.in_place = in_place;
            const Schedule whole = Build(args, algo);
            args.segment_bytes = 1001;  // rounded down to 1000
            const Schedule cut = Build(args, algo);
            for (size_t i = 0; i < cut.steps.size(); ++i) {
              for (uint32_t dep : cut.steps[i].deps) {
                EXPECT_EQ(cut.steps[dep].bytes, cut.steps[i].bytes)
                    << AlgorithmName(algo) << " " << CollectiveName(coll) << " p=" << p << "\n"
                    << DescribeSchedule(cut);
              }
            }
            if (algo == Algorithm::kShardedParameterServer) continue;  // shards, not segments
            size_t largest = 0;
            for (const Step& step : cut.steps) largest = std::max(largest, step.bytes);
            EXPECT_LE(largest, 1000u);
            // dbtree splits into two halves first: 5 segments each.
            EXPECT_EQ(cut.steps.size(), whole.steps.size() * (algo == Algorithm::kDoubleBinaryTree ? 5 : 10))
                << AlgorithmName(algo) << " " << CollectiveName(coll) << " p=" << p << " rank " << r;
          }
        }
      }
    }
  }
}

}  // namespace
}  // namespace chorus::testing
