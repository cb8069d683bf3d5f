// ScheduleCache: one schedule per call shape and algorithm (the memo of
// recent shapes is SelectionCache's, selection_table_test.cc).
#include <gtest/gtest.h>

#include <memory>

#include "core/schedule_cache.h"

namespace chorus {
namespace {

CollectiveArgs AllReduceOf(size_t count) {
  CollectiveArgs args;
  args.coll = Collective::kAllReduce;
  args.count = count;
  args.dtype = chorusFloat32;
  args.op = ReduceOp::kSum;
  args.nranks = 2;
  args.rank = 0;
  return args;
}

TEST(ScheduleCacheTest, GetBuildsOnceAndReturnsTheSameSchedule) {
  ScheduleCache cache;
  std::shared_ptr<const Schedule> first, second, other;
  ASSERT_TRUE(cache.Get(AllReduceOf(2), Algorithm::kRing, &first).ok());
  ASSERT_TRUE(cache.Get(AllReduceOf(2), Algorithm::kRing, &second).ok());
  ASSERT_TRUE(cache.Get(AllReduceOf(3), Algorithm::kRing, &other).ok());
  EXPECT_EQ(first.get(), second.get());
  EXPECT_NE(first.get(), other.get());
  EXPECT_EQ(first->algorithm, "ring");
}

}  // namespace
}  // namespace chorus
