// Properties of the built schedules beyond "the result is right": sizes
// beyond 2^31 elements, trivial cases, and the pipelining the executor needs.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <vector>

#include "algorithms/algorithm.h"
#include "algorithms/schedule_builder.h"
#include "collective_case.h"
#include "schedule_checker.h"

namespace chorus::testing {
namespace {

const Collective kAll[] = {Collective::kAllReduce, Collective::kBroadcast,     Collective::kReduce,
                           Collective::kAllGather, Collective::kReduceScatter, Collective::kAllToAll,
                           Collective::kGather,    Collective::kScatter};

// Counts beyond 2^31 elements: checked statically with made-up addresses
// (the checker never dereferences), for every collective and algorithm.
TEST(ScheduleProperties, HugeCountsStayConsistent) {
  const size_t count = (size_t{1} << 31) + 3;  // 16 GiB of float64 per block
  const int p = 5;
  for (Collective coll : kAll) {
    for (size_t a = 1; a < static_cast<size_t>(Algorithm::kCount); ++a) {
      const auto algo = static_cast<Algorithm>(a);
      if (!Supports(algo, coll)) continue;
      for (bool in_place : {false, true}) {
        CollectiveArgs args = RankArgs(coll, p, 0, count, chorusFloat64);
        args.root = 2;
        args.in_place = in_place;
        std::vector<Schedule> schedules = BuildEveryRank(args, algo);
        std::vector<RankMemory> memory(p);
        for (int r = 0; r < p; ++r) {
          args.rank = r;
          const size_t block = count * 8;
          uintptr_t base = (uintptr_t{1} << 40) * (r + 1);
          memory[r].send_bytes = SendBufferBytes(args);
          memory[r].recv_bytes = RecvBufferBytes(args);
          memory[r].send = reinterpret_cast<uint8_t*>(base);
          memory[r].recv = reinterpret_cast<uint8_t*>(base + (uintptr_t{1} << 39));
          if (in_place) {
            memory[r].recv = memory[r].send;
            if (coll == Collective::kAllGather || coll == Collective::kGather) {
              memory[r].send += r * block;
            }
            if (coll == Collective::kReduceScatter || coll == Collective::kScatter) {
              memory[r].recv += r * block;
            }
          }
        }
        const std::string error = CheckSchedules(schedules, memory);
        EXPECT_TRUE(error.empty()) << CollectiveName(coll) << "/" << AlgorithmName(algo) << ": "
                                   << error.substr(0, 2000);
      }
    }
  }
}

TEST(ScheduleProperties, RingAllReduceSegmentsCoverHugeBuffer) {
  const size_t count = (size_t{1} << 32) + 7;
  const int p = 3;
  Schedule schedule;
  ASSERT_TRUE(BuildSchedule(RankArgs(Collective::kAllReduce, p, 1, count), Algorithm::kRing, &schedule).ok());
  // Each rank sends 2(p-1) segments; the segments it receives in the
  // allgather plus the one it finished itself cover the whole buffer.
  size_t received = 0;
  size_t sent = 0;
  for (const Step& step : schedule.steps) {
    if (step.kind == StepKind::kSend) sent += step.bytes;
    if (step.kind == StepKind::kRecv) received += step.bytes;
  }
  const size_t seg_bytes_rank2 = (count / 3) * 4;  // rank 1 finishes segment 2 (short one)
  EXPECT_EQ(received + seg_bytes_rank2, count * 4);
  EXPECT_GT(sent, size_t{1} << 33);
}

TEST(ScheduleProperties, ZeroCountIsEmpty) {
  for (Collective coll : kAll) {
    for (size_t a = 1; a < static_cast<size_t>(Algorithm::kCount); ++a) {
      const auto algo = static_cast<Algorithm>(a);
      if (!Supports(algo, coll)) continue;
      Schedule schedule;
      schedule.steps.resize(3);  // stale content must be cleared
      ASSERT_TRUE(BuildSchedule(RankArgs(coll, 4, 1, 0), algo, &schedule).ok());
      EXPECT_TRUE(schedule.steps.empty()) << CollectiveName(coll);
      EXPECT_EQ(schedule.scratch_bytes, 0u);
      EXPECT_EQ(schedule.algorithm, AlgorithmName(algo));
    }
  }
}

TEST(ScheduleProperties, OneRankIsALocalCopy) {
  for (Collective coll : kAll) {
    Schedule schedule;
    CollectiveArgs args = RankArgs(coll, 1, 0, 10, chorusInt32);
    ASSERT_TRUE(BuildSchedule(args, Algorithm::kRing, &schedule).ok());
    ASSERT_EQ(schedule.steps.size(), 1u) << CollectiveName(coll);
    EXPECT_EQ(schedule.steps[0].kind, StepKind::kCopy);
    EXPECT_EQ(schedule.steps[0].bytes, 40u);
    args.in_place = true;
    ASSERT_TRUE(BuildSchedule(args, Algorithm::kRing, &schedule).ok());
    EXPECT_TRUE(schedule.steps.empty()) << CollectiveName(coll);
  }
}

// The executor pipelines a dependency only when both steps have the same
// length. The chain and tree algorithms must be fully pipelined, and the
// ring allreduce must pipeline every segment hand-off. (Halving-doubling
// cannot: each round sends half of what it just reduced.)
TEST(ScheduleProperties, ChainsAndTreesPipelineEveryDependency) {
  struct Case {
    Collective coll;
    Algorithm algo;
  };
  const Case cases[] = {{Collective::kAllReduce, Algorithm::kRing},
                        {Collective::kAllReduce, Algorithm::kTree},
                        {Collective::kBroadcast, Algorithm::kRing},
                        {Collective::kBroadcast, Algorithm::kTree},
                        {Collective::kReduce, Algorithm::kRing},
                        {Collective::kReduce, Algorithm::kTree},
                        {Collective::kAllGather, Algorithm::kRing},
                        {Collective::kReduceScatter, Algorithm::kRing},
                        {Collective::kAllReduce, Algorithm::kParameterServer},
                        {Collective::kBroadcast, Algorithm::kParameterServer},
                        {Collective::kReduce, Algorithm::kParameterServer},
                        {Collective::kAllReduce, Algorithm::kShardedParameterServer},
                        {Collective::kAllReduce, Algorithm::kDoubleBinaryTree},
                        {Collective::kBroadcast, Algorithm::kDoubleBinaryTree},
                        {Collective::kReduce, Algorithm::kDoubleBinaryTree},
                        {Collective::kBroadcast, Algorithm::kChain},
                        {Collective::kReduce, Algorithm::kChain},
                        {Collective::kAllReduce, Algorithm::kDirect},
                        {Collective::kReduceScatter, Algorithm::kDirect},
                        {Collective::kAllGather, Algorithm::kDirect},
                        {Collective::kAllReduce, Algorithm::kOneShot}};
  for (const Case& c : cases) {
    for (int p : {2, 3, 8, 13}) {
      for (bool in_place : {false, true}) {
        CollectiveArgs args = RankArgs(c.coll, p, 0, 1000 * p + 1);  // uneven segments
        args.root = p / 2;
        args.in_place = in_place;
        for (const Schedule& schedule : BuildEveryRank(args, c.algo)) {
          for (size_t i = 0; i < schedule.steps.size(); ++i) {
            for (uint32_t dep : schedule.steps[i].deps) {
              EXPECT_EQ(schedule.steps[dep].bytes, schedule.steps[i].bytes)
                  << CollectiveName(c.coll) << "/" << AlgorithmName(c.algo) << " p=" << p << " step " << i << " dep "
                  << dep << "\n"
                  << DescribeSchedule(schedule);
            }
          }
        }
      }
    }
  }
}

TEST(ScheduleProperties, TreeAllReduceHasLogarithmicDepth) {
  // Rank 0 of 16 receives from 4 children and sends to 4: 2*log2(16) messages.
  Schedule schedule;
  ASSERT_TRUE(BuildSchedule(RankArgs(Collective::kAllReduce, 16, 0, 100), Algorithm::kTree, &schedule).ok());
  EXPECT_EQ(schedule.steps.size(), 8u) << DescribeSchedule(schedule);
  EXPECT_EQ(schedule.algorithm, "tree");
}

TEST(ScheduleProperties, RingAllReduceMovesTwiceTheBufferOverP) {
  const int p = 4;
  const size_t count = 4000;
  Schedule schedule;
  ASSERT_TRUE(BuildSchedule(RankArgs(Collective::kAllReduce, p, 2, count), Algorithm::kRing, &schedule).ok());
  size_t sent = 0;
  for (const Step& step : schedule.steps) {
    if (step.kind == StepKind::kSend) sent += step.bytes;
  }
  EXPECT_EQ(sent, 2 * (p - 1) * count / p * 4);
}

TEST(ScheduleProperties, BuildScheduleRejectsBadArguments) {
  Schedule schedule;
  CollectiveArgs args = RankArgs(Collective::kAllReduce, 4, 0, 10);
  EXPECT_EQ(BuildSchedule(args, Algorithm::kAuto, &schedule).code(), chorusInvalidArgument);
  args.coll = Collective::kAllGather;
  EXPECT_EQ(BuildSchedule(args, Algorithm::kTree, &schedule).code(), chorusInvalidArgument);
  args = RankArgs(Collective::kAllReduce, 4, 4, 10);
  EXPECT_EQ(BuildSchedule(args, Algorithm::kRing, &schedule).code(), chorusInvalidArgument);
  args = RankArgs(Collective::kBroadcast, 4, 1, 10);
  args.root = -1;
  EXPECT_EQ(BuildSchedule(args, Algorithm::kRing, &schedule).code(), chorusInvalidArgument);
  args = RankArgs(Collective::kAllReduce, 0, 0, 10);
  EXPECT_EQ(BuildSchedule(args, Algorithm::kRing, &schedule).code(), chorusInvalidArgument);
  args = RankArgs(Collective::kAllReduce, 4, 0, 10);
  args.dtype = chorusNumTypes;  // one past the last type
  EXPECT_EQ(BuildSchedule(args, Algorithm::kRing, &schedule).code(), chorusInvalidArgument);
  args = RankArgs(Collective::kAllGather, 4, 0, SIZE_MAX / 8, chorusFloat64);
  EXPECT_EQ(BuildSchedule(args, Algorithm::kRing, &schedule).code(), chorusInvalidArgument);
}

TEST(ScheduleProperties, DescribeScheduleNamesEveryStep) {
  Schedule schedule;
  ASSERT_TRUE(BuildSchedule(RankArgs(Collective::kAllReduce, 3, 0, 6, chorusInt32), Algorithm::kRing, &schedule).ok());
  const std::string text = DescribeSchedule(schedule);
  EXPECT_NE(text.find("algorithm=ring dtype=int32 op=sum element_size=4"), std::string::npos) << text;
  EXPECT_NE(text.find("#0 send peer=1 src=send+0 bytes=8"), std::string::npos) << text;
  EXPECT_NE(text.find("recvreduce peer=2 src=send+16 dst=recv+16 bytes=8"), std::string::npos) << text;
  EXPECT_NE(text.find("deps=["), std::string::npos) << text;
}

// schedule.h rule 5: exactly the fan-in receives of the tree and the central
// parameter server (AllReduce and Reduce) are paced; no other algorithm
// marks any step, and pacing a step that is not a receive is an error.
TEST(ScheduleProperties, OnlyFanInReceivesArePaced) {
  for (int p = 1; p <= 9; ++p) {
    for (size_t a = 1; a < static_cast<size_t>(Algorithm::kCount); ++a) {
      const auto algo = static_cast<Algorithm>(a);
      for (Collective coll : kAll) {
        if (!Supports(algo, coll)) continue;
        CollectiveArgs args = RankArgs(coll, p, 0, 1000, chorusInt32);
        const bool fan_in = (algo == Algorithm::kTree || algo == Algorithm::kParameterServer) &&
                            (coll == Collective::kAllReduce || coll == Collective::kReduce);
        size_t paced_total = 0;
        for (const Schedule& schedule : BuildEveryRank(args, algo)) {
          for (const Step& step : schedule.steps) {
            if (!step.paced) continue;
            ++paced_total;
            EXPECT_EQ(step.kind, StepKind::kRecvReduce) << AlgorithmName(algo) << " p=" << p;
          }
        }
        // Every rank but the root folds each peer in once.
        EXPECT_EQ(paced_total, fan_in ? static_cast<size_t>(p - 1) : 0u)
            << AlgorithmName(algo) << " " << CollectiveName(coll) << " p=" << p;
      }
    }
  }
  Schedule schedule;
  ScheduleBuilder builder(RankArgs(Collective::kAllReduce, 2, 0, 4, chorusInt32), Algorithm::kRing, &schedule);
  builder.Pace(builder.RecvReduce(1, BufferRange{BufferId::kSend, 0}, BufferRange{BufferId::kRecv, 0}, 16));
  EXPECT_TRUE(builder.Finish().ok());
  builder.Pace(builder.Send(1, BufferRange{BufferId::kRecv, 0}, 16));
  EXPECT_EQ(builder.Finish().code(), chorusInternalError);
  EXPECT_NE(DescribeSchedule(schedule).find("recvreduce peer=1 src=send+0 dst=recv+0 bytes=16 paced"),
            std::string::npos)
      << DescribeSchedule(schedule);
}

// hd's receives wait for each other in step order (an allgather receive
// would otherwise read a partner that is ahead while the current step's
// partner is late), and After() adds ordering-only dependencies in order,
// once, and only on earlier steps.
TEST(ScheduleProperties, HalvingDoublingReceivesRunInStepOrder) {
  for (int p = 2; p <= 12; ++p) {
    for (const Schedule& schedule :
         BuildEveryRank(RankArgs(Collective::kAllReduce, p, 0, 1000, chorusInt32), Algorithm::kHalvingDoubling)) {
      int64_t previous = -1;
      for (size_t i = 0; i < schedule.steps.size(); ++i) {
        const Step& step = schedule.steps[i];
        if (step.kind != StepKind::kRecv && step.kind != StepKind::kRecvReduce) continue;
        if (previous >= 0) {
          EXPECT_TRUE(std::find(step.deps.begin(), step.deps.end(), static_cast<uint32_t>(previous)) != step.deps.end())
              << "p=" << p << " step " << i << " does not wait for receive " << previous << "\n"
              << DescribeSchedule(schedule);
        }
        EXPECT_TRUE(std::is_sorted(step.deps.begin(), step.deps.end()));
        previous = static_cast<int64_t>(i);
      }
    }
  }
  Schedule schedule;
  ScheduleBuilder builder(RankArgs(Collective::kAllReduce, 3, 0, 8, chorusInt32), Algorithm::kRing, &schedule);
  const int64_t first = builder.Recv(1, BufferRange{BufferId::kRecv, 0}, 16);
  const int64_t second = builder.Recv(2, BufferRange{BufferId::kRecv, 16}, 16);
  builder.After(second, first);
  builder.After(second, first);
  builder.After(second, ScheduleBuilder::kNoStep);
  ASSERT_TRUE(builder.Finish().ok());
  EXPECT_EQ(schedule.steps[second].deps, std::vector<uint32_t>{static_cast<uint32_t>(first)});
  builder.After(first, second);
  EXPECT_EQ(builder.Finish().code(), chorusInternalError);
}

}  // namespace
}  // namespace chorus::testing
