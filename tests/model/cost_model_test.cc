// Closed forms at hand-computed points.
#include "model/cost_model.h"

#include <gtest/gtest.h>

#include <vector>

#include "model/processor_sharing.h"

namespace chorus::model {
namespace {

CollectiveArgs AllReduce(int nranks, size_t bytes) {
  CollectiveArgs call;
  call.nranks = nranks;
  call.count = bytes;
  call.dtype = chorusUint8;
  return call;
}

CostParams Params(size_t chunk_bytes = 0) {
  CostParams params;
  params.alpha_s = 1e-5;
  params.beta_s_per_byte = 1e-9;
  params.gamma_s_per_byte = 1e-10;
  params.chunk_bytes = chunk_bytes;
  return params;
}

TEST(CostModelTest, RingAllReduce) {
  double t = 0;
  ASSERT_TRUE(AnalyticTime(Algorithm::kRing, AllReduce(4, 4000), Params(), &t));
  // 2*3*(1e-5 + 1000e-9) + 3/4*4000*1e-10
  EXPECT_NEAR(t, 6 * 1.1e-5 + 3e-7, 1e-15);
}

// Whole steps: the way up crosses a level per step; on the way down a node
// sends to its j children at once, so the data reaches the deepest leaf
// after L + (L-1) + ... + 1 step times.
double WholeStepTree(double levels, double n) {
  const double a = 1e-5, b = 1e-9, g = 1e-10;
  return levels * (a + n * (b + g)) + levels * a + levels * (levels + 1) / 2 * n * b;
}

TEST(CostModelTest, TreeAllReduceUsesCeilLog2Levels) {
  double t = 0;
  ASSERT_TRUE(AnalyticTime(Algorithm::kTree, AllReduce(5, 1000), Params(), &t));
  // 3 levels up (alpha + n beta + n gamma), 3 alphas and 1+2+3 n beta down
  EXPECT_NEAR(t, 3 * (1e-5 + 1e-6 + 1e-7) + 3e-5 + 6e-6, 1e-15);
  EXPECT_NEAR(t, WholeStepTree(3, 1000), 1e-15);
}

TEST(CostModelTest, PipelinedTreeIsPacedByTheRootsPort) {
  // 16 chunks of 1000 B over 4 levels: the fills, then one chunk every 4
  // chunk times (the root's port carries 4 per chunk in each direction).
  double t = 0;
  ASSERT_TRUE(AnalyticTime(Algorithm::kTree, AllReduce(16, 16000), Params(1000), &t));
  const double up = 4 * (1e-5 + 1000 * 1e-10) + 10 * 1000 * 1e-9;
  const double down = 4 * 1e-5 + 10 * 1000 * 1e-9;
  EXPECT_NEAR(t, up + down + 15 * 4 * 1000 * (1e-9 + 1e-10), 1e-15);  // each chunk also reduced
}

TEST(CostModelTest, ParameterServerGrowsLinearlyTreeLogarithmically) {
  const double n = 30e6;
  const double ps16 = ParameterServerAllReduceTime(16, n, Params());
  const double ps32 = ParameterServerAllReduceTime(32, n, Params());
  EXPECT_NEAR(ps32 / ps16, 31.0 / 15.0, 1e-9);  // every term grows with p - 1
  double tree16 = 0, tree32 = 0;
  ASSERT_TRUE(AnalyticTime(Algorithm::kTree, AllReduce(16, 30000000), Params(), &tree16));
  ASSERT_TRUE(AnalyticTime(Algorithm::kTree, AllReduce(32, 30000000), Params(), &tree32));
  EXPECT_NEAR(tree32 / tree16, WholeStepTree(5, n) / WholeStepTree(4, n), 1e-9);  // about 1.43
  EXPECT_LT(tree32 / tree16, 0.75 * ps32 / ps16);
}

TEST(CostModelTest, PipelinedParameterServerOverlapsPushesAndPulls) {
  double t = 0;
  ASSERT_TRUE(AnalyticTime(Algorithm::kParameterServer, AllReduce(5, 4000), Params(1000), &t));
  // 2(p-1) alphas, (p-1)(n + one chunk) bytes through the server's port,
  // (p-1) n reduced.
  EXPECT_NEAR(t, 8 * 1e-5 + 4 * 5000 * 1e-9 + 4 * 4000 * 1e-10, 1e-15);
  ASSERT_TRUE(AnalyticTime(Algorithm::kParameterServer, AllReduce(5, 4000), Params(), &t));
  EXPECT_NEAR(t, ParameterServerAllReduceTime(5, 4000, Params()), 1e-15);
}

TEST(CostModelTest, HalvingDoublingFoldsTheRanksBeyondAPowerOfTwo) {
  double t = 0;
  ASSERT_TRUE(AnalyticTime(Algorithm::kHalvingDoubling, AllReduce(3, 4000), Params(), &t));
  // p = 3: rank 2's halving message (n/2) shares rank 1's receive port with
  // the fold (n): the fold ends after 1.5 n beta. Then n gamma, rank 1's
  // halving message to rank 2 (n/2 beta, n/2 gamma there), rank 2's doubling
  // message back (n/2 beta) and the unfold (n beta): 4 latencies.
  const double n = 4000, a = 1e-5, b = 1e-9, g = 1e-10;
  EXPECT_NEAR(t, 4 * a + 3.5 * n * b + 1.5 * n * g, 1e-15);
  // A power of two is the textbook formula.
  ASSERT_TRUE(AnalyticTime(Algorithm::kHalvingDoubling, AllReduce(4, 4000), Params(), &t));
  EXPECT_NEAR(t, 4 * a + 1.5 * n * b + 0.75 * n * g, 1e-15);
}

TEST(CostModelTest, DoubleBinaryTreeFillsOnceThenStreamsAtThePortBound) {
  const double n = 4000, a = 1e-5, b = 1e-9, g = 1e-10;
  double t = 0;
  // p = 8, depth 3: a fill of 4*3-2 = 10 chunk times and 4*3 latencies;
  // whole halves are one chunk of 2000 bytes.
  ASSERT_TRUE(AnalyticTime(Algorithm::kDoubleBinaryTree, AllReduce(8, 4000), Params(), &t));
  EXPECT_NEAR(t, 10 * 2000 * b + 12 * a + n * g, 1e-15);
  // 500-byte chunks: 4 per half, 4 chunk times for each after the first.
  ASSERT_TRUE(AnalyticTime(Algorithm::kDoubleBinaryTree, AllReduce(8, 4000), Params(500), &t));
  EXPECT_NEAR(t, (3 * 4 + 10) * 500 * b + 12 * a + n * g, 1e-15);
  // 1000-byte segments of two chunks pipeline like chunks: the same.
  CollectiveArgs segmented = AllReduce(8, 4000);
  segmented.segment_bytes = 1000;
  ASSERT_TRUE(AnalyticTime(Algorithm::kDoubleBinaryTree, segmented, Params(500), &t));
  EXPECT_NEAR(t, (3 * 4 + 10) * 500 * b + 12 * a + n * g, 1e-15);
  // p = 5 = 2^2 + 1: fill 4*3-4 = 8; p = 6: 4*3-3 = 9; p = 2: 2; p = 3: 7.
  ASSERT_TRUE(AnalyticTime(Algorithm::kDoubleBinaryTree, AllReduce(5, 4000), Params(), &t));
  EXPECT_NEAR(t, 8 * 2000 * b + 12 * a + n * g, 1e-15);
  ASSERT_TRUE(AnalyticTime(Algorithm::kDoubleBinaryTree, AllReduce(6, 4000), Params(), &t));
  EXPECT_NEAR(t, 9 * 2000 * b + 12 * a + n * g, 1e-15);
  ASSERT_TRUE(AnalyticTime(Algorithm::kDoubleBinaryTree, AllReduce(2, 4000), Params(), &t));
  EXPECT_NEAR(t, 2 * 2000 * b + 4 * a + n * g, 1e-15);
  ASSERT_TRUE(AnalyticTime(Algorithm::kDoubleBinaryTree, AllReduce(3, 4000), Params(500), &t));
  EXPECT_NEAR(t, (3 * 4 + 7) * 500 * b + 8 * a + n * g, 1e-15);
}

TEST(ProcessorSharingTest, JobsShareTheServerEqually) {
  // Two jobs of 1 s from 0: both at half speed, both end at 2 s.
  std::vector<double> done = ProcessorSharingFinish({{0, 1}, {0, 1}});
  EXPECT_NEAR(done[0], 2, 1e-12);
  EXPECT_NEAR(done[1], 2, 1e-12);
  // 2 s from 0 and 0.5 s from 1: alone until 1, then halves; the short one
  // ends at 2, the long one has 0.5 left and ends at 2.5.
  done = ProcessorSharingFinish({{0, 2}, {1, 0.5}});
  EXPECT_NEAR(done[0], 2.5, 1e-12);
  EXPECT_NEAR(done[1], 2, 1e-12);
  // An idle gap, and a job of no work.
  done = ProcessorSharingFinish({{3, 1}, {0, 1}, {5, 0}});
  EXPECT_NEAR(done[0], 4, 1e-12);
  EXPECT_NEAR(done[1], 1, 1e-12);
  EXPECT_NEAR(done[2], 5, 1e-12);
}

TEST(CostModelTest, OneRankOrNothingCostsNothing) {
  double t = 1;
  ASSERT_TRUE(AnalyticTime(Algorithm::kRing, AllReduce(1, 100), Params(), &t));
  EXPECT_EQ(t, 0.0);
  t = 1;
  ASSERT_TRUE(AnalyticTime(Algorithm::kTree, AllReduce(8, 0), Params(), &t));
  EXPECT_EQ(t, 0.0);
}

TEST(CostModelTest, EnumeratesConcreteAlgorithms) {
  const std::vector<Algorithm> all = AlgorithmsSupporting(Collective::kAllReduce);
  ASSERT_GE(all.size(), 2u);
  EXPECT_EQ(all[0], Algorithm::kRing);
  EXPECT_EQ(all[1], Algorithm::kTree);
  for (Algorithm algo : AlgorithmsSupporting(Collective::kAllGather)) EXPECT_NE(algo, Algorithm::kAuto);
}

// An algorithm without a closed form is never the tuner's pick, so each
// of these has one for every collective it serves, except the parameter
// server's and the double binary tree's broadcast and reduce (their
// formulas are the allreduce's; ring, tree and chain serve those).
TEST(CostModelTest, TheBuiltInAlgorithmsHaveAClosedFormForWhatTheyServe) {
  const Algorithm built_in[] = {Algorithm::kRing,     Algorithm::kTree,         Algorithm::kParameterServer,
                                Algorithm::kShardedParameterServer,             Algorithm::kHalvingDoubling,
                                Algorithm::kDoubleBinaryTree,                   Algorithm::kChain,
                                Algorithm::kHierarchical, Algorithm::kHierarchicalSliced,
                                Algorithm::kDirect,   Algorithm::kOneShot};
  for (Algorithm algo : built_in) {
    for (size_t c = 0; c < kCollectiveCount; ++c) {
      const auto coll = static_cast<Collective>(c);
      if (!Supports(algo, coll)) continue;
      const bool allreduce_only = algo == Algorithm::kParameterServer || algo == Algorithm::kDoubleBinaryTree;
      CollectiveArgs call = AllReduce(4, 4000);
      call.coll = coll;
      double t = 0;
      if (allreduce_only && coll != Collective::kAllReduce) {
        EXPECT_FALSE(AnalyticTime(algo, call, Params(), &t)) << AlgorithmName(algo) << " " << CollectiveName(coll);
        continue;
      }
      EXPECT_TRUE(AnalyticTime(algo, call, Params(), &t)) << AlgorithmName(algo) << " " << CollectiveName(coll);
      EXPECT_GT(t, 0.0) << AlgorithmName(algo) << " " << CollectiveName(coll);
    }
  }
}

TEST(CostModelTest, DirectAllReducePaysTwoLatenciesAndItsOverheads) {
  double t = 0;
  ASSERT_TRUE(AnalyticTime(Algorithm::kDirect, AllReduce(4, 4000), Params(), &t));
  // 2 rounds of (alpha + 3 slices of 1000 B) + 3/4*4000*gamma
  EXPECT_NEAR(t, 2e-5 + 6e-6 + 3e-7, 1e-15);
  CostParams params = Params();
  params.overhead_s = 2e-6;  // 2 extra messages in flight per round
  ASSERT_TRUE(AnalyticTime(Algorithm::kDirect, AllReduce(4, 4000), params, &t));
  EXPECT_NEAR(t, 2e-5 + 8e-6 + 6e-6 + 3e-7, 1e-15);
  // Two ranks: direct is the ring.
  double ring = 0;
  ASSERT_TRUE(AnalyticTime(Algorithm::kDirect, AllReduce(2, 1 << 20), params, &t));
  ASSERT_TRUE(AnalyticTime(Algorithm::kRing, AllReduce(2, 1 << 20), params, &ring));
  EXPECT_DOUBLE_EQ(t, ring);
}

TEST(CostModelTest, DirectAcrossHostsIsBoundByTheSharedNic) {
  CostParams params = Params();
  params.hosts = 2;
  params.ranks_per_host = 2;
  params.intra_alpha_s = 1e-6;
  params.intra_beta_s_per_byte = 1e-10;
  double t = 0;
  ASSERT_TRUE(AnalyticTime(Algorithm::kDirect, AllReduce(4, 4000), params, &t));
  // The NIC carries 2 ranks x 2 remote slices of 1000 B a round.
  EXPECT_NEAR(t, 2e-5 + 2 * 4 * 1000 * 1e-9 + 3e-7, 1e-15);
}

TEST(CostModelTest, DirectReduceScatterAndAllGatherAreOneRound) {
  CollectiveArgs call = AllReduce(4, 1000);
  call.coll = Collective::kAllGather;
  double t = 0;
  ASSERT_TRUE(AnalyticTime(Algorithm::kDirect, call, Params(), &t));
  EXPECT_NEAR(t, 1e-5 + 3 * 1000 * 1e-9, 1e-15);
  call.coll = Collective::kReduceScatter;
  ASSERT_TRUE(AnalyticTime(Algorithm::kDirect, call, Params(), &t));
  EXPECT_NEAR(t, 1e-5 + 3 * 1000 * 1e-9 + 3 * 1000 * 1e-10, 1e-15);
  call.coll = Collective::kBroadcast;
  EXPECT_FALSE(AnalyticTime(Algorithm::kDirect, call, Params(), &t));
}

CostParams TwoHostsOfFour() {
  CostParams params = Params();
  params.hosts = 2;
  params.ranks_per_host = 4;
  params.intra_alpha_s = 1e-6;
  params.intra_beta_s_per_byte = 1e-10;
  return params;
}

TEST(CostModelTest, HierarchicalIsTreesInsideAndARingOfLeaders) {
  double t = 0;
  ASSERT_TRUE(AnalyticTime(Algorithm::kHierarchical, AllReduce(8, 4000), TwoHostsOfFour(), &t));
  const double reduce = 2 * (1e-6 + 4000 * (1e-10 + 1e-10));  // 2 levels inside a host
  const double broadcast = 2 * 1e-6 + 3 * 4000 * 1e-10;         // 1 + 2 sends down
  const double leaders = 2 * (1e-5 + 2000 * 1e-9) + 2000 * 1e-10;  // ring of 2
  EXPECT_NEAR(t, reduce + broadcast + leaders, 1e-15);
}

TEST(CostModelTest, HierarchicalSlicedIsRingsInsideAndOneRingPerSlice) {
  double t = 0;
  ASSERT_TRUE(AnalyticTime(Algorithm::kHierarchicalSliced, AllReduce(8, 4000), TwoHostsOfFour(), &t));
  const double inside = 2 * 3 * (1e-6 + 1000 * 1e-10) + 3 * 1000 * 1e-10;
  // 1000 B slices, ring of 2; the 4 rings of a host share its NIC.
  const double across = 2 * (1e-5 + 4 * 500 * 1e-9) + 500 * 1e-10;
  EXPECT_NEAR(t, inside + across, 1e-15);
  // Uneven hosts: the schedule falls back to hier, and so does the cost.
  CostParams uneven = TwoHostsOfFour();
  double hier = 0;
  ASSERT_TRUE(AnalyticTime(Algorithm::kHierarchicalSliced, AllReduce(7, 4000), uneven, &t));
  ASSERT_TRUE(AnalyticTime(Algorithm::kHierarchical, AllReduce(7, 4000), uneven, &hier));
  EXPECT_DOUBLE_EQ(t, hier);
}

TEST(CostModelTest, OneHostHierarchiesCostWhatTheirFlatShapesCost) {
  double sliced = 0, ring = 0;
  ASSERT_TRUE(AnalyticTime(Algorithm::kHierarchicalSliced, AllReduce(8, 4000), Params(), &sliced));
  ASSERT_TRUE(AnalyticTime(Algorithm::kRing, AllReduce(8, 4000), Params(), &ring));
  EXPECT_NEAR(sliced, ring, 1e-15);
}

TEST(CostModelTest, ParamsComeFromTheSlowerClassAcrossHosts) {
  ClusterModel cluster;
  cluster.hosts = 2;
  cluster.ranks_per_host = 2;
  cluster.intra_host = LinkModel{1e-6, 1e10};
  cluster.inter_host = LinkModel{5e-5, 1e9};
  const CostParams params = CostParamsFor(cluster, 4096);
  EXPECT_EQ(params.alpha_s, 5e-5);
  EXPECT_EQ(params.beta_s_per_byte, 1e-9);
  EXPECT_EQ(params.chunk_bytes, 4096u);
  EXPECT_EQ(params.hosts, 2);
  EXPECT_EQ(params.ranks_per_host, 2);
  EXPECT_EQ(params.intra_alpha_s, 1e-6);
  EXPECT_EQ(params.intra_beta_s_per_byte, 1e-10);
}

}  // namespace
}  // namespace chorus::model
