// CHORUS_ALGO parsing, Supports and the default choice.
#include <gtest/gtest.h>

#include <vector>

#include "algorithms/algorithm.h"
#include "collective_case.h"

namespace chorus {
namespace {

Algorithm Forced(const AlgorithmTable& table, Collective coll) { return table.forced[static_cast<size_t>(coll)]; }

TEST(ParseAlgorithmSpec, EmptyMeansAuto) {
  AlgorithmTable table;
  table.forced.fill(Algorithm::kRing);
  ASSERT_TRUE(ParseAlgorithmSpec("", &table).ok());
  for (Algorithm algo : table.forced) EXPECT_EQ(algo, Algorithm::kAuto);
  ASSERT_TRUE(ParseAlgorithmSpec("  ;  ", &table).ok());
  for (Algorithm algo : table.forced) EXPECT_EQ(algo, Algorithm::kAuto);
}

TEST(ParseAlgorithmSpec, BareNameAppliesToAllThatSupportIt) {
  AlgorithmTable table;
  ASSERT_TRUE(ParseAlgorithmSpec("ring", &table).ok());
  for (Algorithm algo : table.forced) EXPECT_EQ(algo, Algorithm::kRing);

  ASSERT_TRUE(ParseAlgorithmSpec(" TREE ", &table).ok());
  EXPECT_EQ(Forced(table, Collective::kAllReduce), Algorithm::kTree);
  EXPECT_EQ(Forced(table, Collective::kBroadcast), Algorithm::kTree);
  EXPECT_EQ(Forced(table, Collective::kReduce), Algorithm::kTree);
  EXPECT_EQ(Forced(table, Collective::kAllGather), Algorithm::kAuto);
  EXPECT_EQ(Forced(table, Collective::kAllToAll), Algorithm::kAuto);

  ASSERT_TRUE(ParseAlgorithmSpec("auto", &table).ok());
  for (Algorithm algo : table.forced) EXPECT_EQ(algo, Algorithm::kAuto);
}

TEST(ParseAlgorithmSpec, PerCollectiveEntries) {
  AlgorithmTable table;
  ASSERT_TRUE(ParseAlgorithmSpec("allreduce:tree;broadcast:ring", &table).ok());
  EXPECT_EQ(Forced(table, Collective::kAllReduce), Algorithm::kTree);
  EXPECT_EQ(Forced(table, Collective::kBroadcast), Algorithm::kRing);
  EXPECT_EQ(Forced(table, Collective::kReduce), Algorithm::kAuto);

  ASSERT_TRUE(ParseAlgorithmSpec(" AllReduce : Ring ; Reduce_Scatter:ring ; ", &table).ok());
  EXPECT_EQ(Forced(table, Collective::kAllReduce), Algorithm::kRing);
  EXPECT_EQ(Forced(table, Collective::kReduceScatter), Algorithm::kRing);
  EXPECT_EQ(Forced(table, Collective::kBroadcast), Algorithm::kAuto);

  // Later entries win, so a default plus exceptions works.
  ASSERT_TRUE(ParseAlgorithmSpec("tree;reduce:ring", &table).ok());
  EXPECT_EQ(Forced(table, Collective::kAllReduce), Algorithm::kTree);
  EXPECT_EQ(Forced(table, Collective::kReduce), Algorithm::kRing);
}

TEST(ParseAlgorithmSpec, UnknownNamesAreRejectedByName) {
  AlgorithmTable table;
  table.forced.fill(Algorithm::kRing);
  Status status = ParseAlgorithmSpec("allreduce:butterfly", &table);
  EXPECT_EQ(status.code(), chorusInvalidArgument);
  EXPECT_NE(status.message().find("'butterfly'"), std::string::npos) << status.message();
  // Nothing is written on error.
  for (Algorithm algo : table.forced) EXPECT_EQ(algo, Algorithm::kRing);

  status = ParseAlgorithmSpec("allreduce:tree;allsum:ring", &table);
  EXPECT_EQ(status.code(), chorusInvalidArgument);
  EXPECT_NE(status.message().find("'allsum'"), std::string::npos) << status.message();

  status = ParseAlgorithmSpec("ring,tree", &table);
  EXPECT_EQ(status.code(), chorusInvalidArgument);
  EXPECT_NE(status.message().find("'ring,tree'"), std::string::npos) << status.message();

  EXPECT_EQ(ParseAlgorithmSpec("allreduce:", &table).code(), chorusInvalidArgument);
  EXPECT_EQ(ParseAlgorithmSpec(":tree", &table).code(), chorusInvalidArgument);
}

TEST(ParseAlgorithmSpec, PaperAlgorithmsByName) {
  AlgorithmTable table;
  ASSERT_TRUE(ParseAlgorithmSpec("allreduce:hd;broadcast:chain;reduce:dbtree", &table).ok());
  EXPECT_EQ(Forced(table, Collective::kAllReduce), Algorithm::kHalvingDoubling);
  EXPECT_EQ(Forced(table, Collective::kBroadcast), Algorithm::kChain);
  EXPECT_EQ(Forced(table, Collective::kReduce), Algorithm::kDoubleBinaryTree);

  ASSERT_TRUE(ParseAlgorithmSpec("allreduce:ps", &table).ok());
  EXPECT_EQ(Forced(table, Collective::kAllReduce), Algorithm::kParameterServer);
  ASSERT_TRUE(ParseAlgorithmSpec("allreduce:ps_sharded", &table).ok());
  EXPECT_EQ(Forced(table, Collective::kAllReduce), Algorithm::kShardedParameterServer);
  ASSERT_TRUE(ParseAlgorithmSpec("AllReduce:PS-Sharded", &table).ok());
  EXPECT_EQ(Forced(table, Collective::kAllReduce), Algorithm::kShardedParameterServer);

  // Bare names apply where a builder exists.
  ASSERT_TRUE(ParseAlgorithmSpec("dbtree", &table).ok());
  EXPECT_EQ(Forced(table, Collective::kAllReduce), Algorithm::kDoubleBinaryTree);
  EXPECT_EQ(Forced(table, Collective::kBroadcast), Algorithm::kDoubleBinaryTree);
  EXPECT_EQ(Forced(table, Collective::kReduce), Algorithm::kDoubleBinaryTree);
  EXPECT_EQ(Forced(table, Collective::kAllGather), Algorithm::kAuto);
  ASSERT_TRUE(ParseAlgorithmSpec("chain", &table).ok());
  EXPECT_EQ(Forced(table, Collective::kAllReduce), Algorithm::kAuto);
  EXPECT_EQ(Forced(table, Collective::kBroadcast), Algorithm::kChain);
  EXPECT_EQ(Forced(table, Collective::kReduce), Algorithm::kChain);
  ASSERT_TRUE(ParseAlgorithmSpec("hd;ps_sharded", &table).ok());
  EXPECT_EQ(Forced(table, Collective::kAllReduce), Algorithm::kShardedParameterServer);
  EXPECT_EQ(Forced(table, Collective::kBroadcast), Algorithm::kAuto);
  ASSERT_TRUE(ParseAlgorithmSpec("ps", &table).ok());
  EXPECT_EQ(Forced(table, Collective::kAllReduce), Algorithm::kParameterServer);
  EXPECT_EQ(Forced(table, Collective::kBroadcast), Algorithm::kParameterServer);
  EXPECT_EQ(Forced(table, Collective::kReduce), Algorithm::kParameterServer);
  EXPECT_EQ(Forced(table, Collective::kAllToAll), Algorithm::kAuto);

  Status status = ParseAlgorithmSpec("allreduce:pss", &table);
  EXPECT_EQ(status.code(), chorusInvalidArgument);
  EXPECT_NE(status.message().find("ps_sharded"), std::string::npos) << status.message();
}

TEST(Supports, PaperAlgorithms) {
  auto supported = [](Algorithm algo) {
    std::vector<Collective> out;
    for (size_t i = 0; i < static_cast<size_t>(Collective::kCount); ++i) {
      if (Supports(algo, static_cast<Collective>(i))) out.push_back(static_cast<Collective>(i));
    }
    return out;
  };
  using V = std::vector<Collective>;
  const V rooted = {Collective::kAllReduce, Collective::kBroadcast, Collective::kReduce};
  EXPECT_EQ(supported(Algorithm::kParameterServer), rooted);
  EXPECT_EQ(supported(Algorithm::kDoubleBinaryTree), rooted);
  EXPECT_EQ(supported(Algorithm::kShardedParameterServer), V{Collective::kAllReduce});
  EXPECT_EQ(supported(Algorithm::kHalvingDoubling), V{Collective::kAllReduce});
  EXPECT_EQ(supported(Algorithm::kChain), (V{Collective::kBroadcast, Collective::kReduce}));
  EXPECT_EQ(supported(Algorithm::kDirect),
            (V{Collective::kAllReduce, Collective::kAllGather, Collective::kReduceScatter}));
  EXPECT_EQ(supported(Algorithm::kOneShot), V{Collective::kAllReduce});
  EXPECT_TRUE(supported(Algorithm::kCount).empty());
}

TEST(Supports, RingEverywhereTreeForRootedReductions) {
  for (size_t i = 0; i < static_cast<size_t>(Collective::kCount); ++i) {
    const auto coll = static_cast<Collective>(i);
    EXPECT_TRUE(Supports(Algorithm::kRing, coll)) << CollectiveName(coll);
    EXPECT_FALSE(Supports(Algorithm::kAuto, coll));
    const bool tree = coll == Collective::kAllReduce || coll == Collective::kBroadcast || coll == Collective::kReduce;
    EXPECT_EQ(Supports(Algorithm::kTree, coll), tree) << CollectiveName(coll);
  }
}

CollectiveArgs Args(Collective coll, int nranks, size_t count) {
  return chorus::testing::RankArgs(coll, nranks, /*rank=*/0, count);
}

TEST(ChooseAlgorithm, DefaultsBySize) {
  const AlgorithmTable automatic;
  // <= 64 KiB: tree for the collectives that have one.
  EXPECT_EQ(ChooseAlgorithm(Args(Collective::kAllReduce, 2, 16 * 1024), automatic), Algorithm::kTree);
  EXPECT_EQ(ChooseAlgorithm(Args(Collective::kBroadcast, 4, 1), automatic), Algorithm::kTree);
  EXPECT_EQ(ChooseAlgorithm(Args(Collective::kReduce, 4, 0), automatic), Algorithm::kTree);
  // Just above 64 KiB: ring for few ranks, tree from 8 ranks up to 256 KiB.
  EXPECT_EQ(ChooseAlgorithm(Args(Collective::kAllReduce, 4, 16 * 1024 + 1), automatic), Algorithm::kRing);
  EXPECT_EQ(ChooseAlgorithm(Args(Collective::kAllReduce, 8, 16 * 1024 + 1), automatic), Algorithm::kTree);
  EXPECT_EQ(ChooseAlgorithm(Args(Collective::kAllReduce, 8, 64 * 1024), automatic), Algorithm::kTree);
  EXPECT_EQ(ChooseAlgorithm(Args(Collective::kAllReduce, 8, 64 * 1024 + 1), automatic), Algorithm::kRing);
  EXPECT_EQ(ChooseAlgorithm(Args(Collective::kBroadcast, 2, 1 << 20), automatic), Algorithm::kRing);
  // Collectives without a tree always get the ring.
  EXPECT_EQ(ChooseAlgorithm(Args(Collective::kAllGather, 8, 1), automatic), Algorithm::kRing);
  EXPECT_EQ(ChooseAlgorithm(Args(Collective::kAllToAll, 8, 1), automatic), Algorithm::kRing);
}

TEST(ChooseAlgorithm, ForcedEntriesWinWhenSupported) {
  AlgorithmTable table;
  ASSERT_TRUE(ParseAlgorithmSpec("allreduce:ring;broadcast:tree;allgather:tree", &table).ok());
  EXPECT_EQ(ChooseAlgorithm(Args(Collective::kAllReduce, 8, 1), table), Algorithm::kRing);
  EXPECT_EQ(ChooseAlgorithm(Args(Collective::kBroadcast, 2, 1 << 24), table), Algorithm::kTree);
  // Unsupported forced choice falls back to the ring.
  EXPECT_EQ(ChooseAlgorithm(Args(Collective::kAllGather, 8, 1), table), Algorithm::kRing);
  // Untouched entries keep the size-based default.
  EXPECT_EQ(ChooseAlgorithm(Args(Collective::kReduce, 8, 1), table), Algorithm::kTree);
}

TEST(Names, CollectivesAndAlgorithms) {
  EXPECT_STREQ(CollectiveName(Collective::kAllReduce), "allreduce");
  EXPECT_STREQ(CollectiveName(Collective::kReduceScatter), "reducescatter");
  EXPECT_STREQ(CollectiveName(Collective::kScatter), "scatter");
  EXPECT_STREQ(AlgorithmName(Algorithm::kAuto), "auto");
  EXPECT_STREQ(AlgorithmName(Algorithm::kRing), "ring");
  EXPECT_STREQ(AlgorithmName(Algorithm::kTree), "tree");
  EXPECT_STREQ(AlgorithmName(Algorithm::kParameterServer), "ps");
  EXPECT_STREQ(AlgorithmName(Algorithm::kShardedParameterServer), "ps_sharded");
  EXPECT_STREQ(AlgorithmName(Algorithm::kHalvingDoubling), "hd");
  EXPECT_STREQ(AlgorithmName(Algorithm::kDoubleBinaryTree), "dbtree");
  EXPECT_STREQ(AlgorithmName(Algorithm::kChain), "chain");
  // Existing values keep their numbers (logs and caches key on them).
  EXPECT_EQ(static_cast<int>(Algorithm::kRing), 1);
  EXPECT_EQ(static_cast<int>(Algorithm::kTree), 2);
}

// The automatic default never picks the explicit algorithms, at any size or
// rank count; forcing them works where they have a builder.
TEST(ChooseAlgorithm, PaperAlgorithmsOnlyWhenForced) {
  const AlgorithmTable automatic;
  for (size_t i = 0; i < static_cast<size_t>(Collective::kCount); ++i) {
    for (int nranks : {2, 3, 8, 64, 1024}) {
      for (size_t count : {size_t{0}, size_t{1}, size_t{1} << 14, size_t{1} << 16, size_t{1} << 26}) {
        const Algorithm algo = ChooseAlgorithm(Args(static_cast<Collective>(i), nranks, count), automatic);
        EXPECT_TRUE(algo == Algorithm::kRing || algo == Algorithm::kTree) << AlgorithmName(algo);
      }
    }
  }
  AlgorithmTable table;
  ASSERT_TRUE(ParseAlgorithmSpec("allreduce:hd;broadcast:chain;reduce:ps;allgather:dbtree", &table).ok());
  EXPECT_EQ(ChooseAlgorithm(Args(Collective::kAllReduce, 8, 1 << 20), table), Algorithm::kHalvingDoubling);
  EXPECT_EQ(ChooseAlgorithm(Args(Collective::kBroadcast, 8, 1), table), Algorithm::kChain);
  EXPECT_EQ(ChooseAlgorithm(Args(Collective::kReduce, 8, 1), table), Algorithm::kParameterServer);
  EXPECT_EQ(ChooseAlgorithm(Args(Collective::kAllGather, 8, 1), table), Algorithm::kRing);
}

TEST(BufferBytes, FollowNcclLayouts) {
  CollectiveArgs args = Args(Collective::kAllReduce, 4, 10);
  EXPECT_EQ(SendBufferBytes(args), 40u);
  EXPECT_EQ(RecvBufferBytes(args), 40u);
  args.coll = Collective::kAllGather;
  EXPECT_EQ(SendBufferBytes(args), 40u);
  EXPECT_EQ(RecvBufferBytes(args), 160u);
  args.coll = Collective::kGather;
  EXPECT_EQ(RecvBufferBytes(args), 160u);
  args.coll = Collective::kReduceScatter;
  EXPECT_EQ(SendBufferBytes(args), 160u);
  EXPECT_EQ(RecvBufferBytes(args), 40u);
  args.coll = Collective::kScatter;
  EXPECT_EQ(SendBufferBytes(args), 160u);
  args.coll = Collective::kAllToAll;
  EXPECT_EQ(SendBufferBytes(args), 160u);
  EXPECT_EQ(RecvBufferBytes(args), 160u);
  args.coll = Collective::kBroadcast;
  args.dtype = chorusFloat64;
  args.count = size_t{3} << 31;
  EXPECT_EQ(SendBufferBytes(args), size_t{3} << 34);
}

}  // namespace
}  // namespace chorus
