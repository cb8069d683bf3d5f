// Closed forms at hand-computed points.
#include "sim/cost_model.h"

#include <gtest/gtest.h>

namespace chorus::sim {
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

TEST(CostModelTest, TreeAllReduceUsesCeilLog2Levels) {
  double t = 0;
  ASSERT_TRUE(AnalyticTime(Algorithm::kTree, AllReduce(5, 1000), Params(), &t));
  // 3 levels up (alpha + n beta + n gamma) and 3 down (alpha + n beta)
  EXPECT_NEAR(t, 3 * (1e-5 + 1e-6 + 1e-7) + 3 * (1e-5 + 1e-6), 1e-15);
}

TEST(CostModelTest, ParameterServerGrowsLinearlyTreeLogarithmically) {
  const double n = 30e6;
  const double ps16 = ParameterServerAllReduceTime(16, n, Params());
  const double ps32 = ParameterServerAllReduceTime(32, n, Params());
  EXPECT_NEAR(ps32 / ps16, 31.0 / 15.0, 1e-9);  // every term grows with p - 1
  double tree16 = 0, tree32 = 0;
  ASSERT_TRUE(AnalyticTime(Algorithm::kTree, AllReduce(16, 30000000), Params(), &tree16));
  ASSERT_TRUE(AnalyticTime(Algorithm::kTree, AllReduce(32, 30000000), Params(), &tree32));
  EXPECT_NEAR(tree32 / tree16, 5.0 / 4.0, 1e-9);
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
}

}  // namespace
}  // namespace chorus::sim
