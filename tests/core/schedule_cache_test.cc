// ScheduleCache: one schedule per call shape and algorithm, and the memo of
// which schedule a requested algorithm (kAuto included) resolved to, which
// lets repeated small calls skip the algorithm choice.
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

TEST(ScheduleCacheTest, ResolvedShapesAreFoundUntilEightNewerOnesReplaceThem) {
  ScheduleCache cache;
  std::shared_ptr<const Schedule> ring, found;
  ASSERT_TRUE(cache.Get(AllReduceOf(2), Algorithm::kRing, &ring).ok());
  EXPECT_FALSE(cache.FindResolved(AllReduceOf(2), Algorithm::kAuto, &found));
  cache.RememberResolved(AllReduceOf(2), Algorithm::kAuto, ring);
  ASSERT_TRUE(cache.FindResolved(AllReduceOf(2), Algorithm::kAuto, &found));
  EXPECT_EQ(found.get(), ring.get());

  // Another requested algorithm, count, op or placement is another shape.
  EXPECT_FALSE(cache.FindResolved(AllReduceOf(2), Algorithm::kTree, &found));
  EXPECT_FALSE(cache.FindResolved(AllReduceOf(4), Algorithm::kAuto, &found));
  CollectiveArgs max = AllReduceOf(2);
  max.op = ReduceOp::kMax;
  EXPECT_FALSE(cache.FindResolved(max, Algorithm::kAuto, &found));
  CollectiveArgs in_place = AllReduceOf(2);
  in_place.in_place = true;
  EXPECT_FALSE(cache.FindResolved(in_place, Algorithm::kAuto, &found));

  // The memo is small and round robin: the oldest shape goes first.
  for (size_t count = 100; count < 107; ++count) {
    std::shared_ptr<const Schedule> schedule;
    ASSERT_TRUE(cache.Get(AllReduceOf(count), Algorithm::kRing, &schedule).ok());
    cache.RememberResolved(AllReduceOf(count), Algorithm::kAuto, schedule);
  }
  EXPECT_TRUE(cache.FindResolved(AllReduceOf(2), Algorithm::kAuto, &found));
  std::shared_ptr<const Schedule> eighth;
  ASSERT_TRUE(cache.Get(AllReduceOf(107), Algorithm::kRing, &eighth).ok());
  cache.RememberResolved(AllReduceOf(107), Algorithm::kAuto, eighth);
  EXPECT_FALSE(cache.FindResolved(AllReduceOf(2), Algorithm::kAuto, &found));
  EXPECT_TRUE(cache.FindResolved(AllReduceOf(107), Algorithm::kAuto, &found));
  EXPECT_EQ(found.get(), eighth.get());
}

}  // namespace
}  // namespace chorus
