// How ExecuteSchedules fails: mismatched messages, abort, dead or silent
// peers, malformed schedules. Every failure must be prompt and name the
// peer involved; none may hang.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>
#include <vector>

#include "algorithms/algorithm.h"
#include "core/executor.h"
#include "core/workspace.h"
#include "inproc_transport.h"
#include "rank_threads.h"

namespace chorus::testing {
namespace {

using Clock = std::chrono::steady_clock;

int64_t MillisecondsSince(Clock::time_point start) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - start).count();
}

// A one-step schedule moving `bytes` bytes to or from `peer`.
Schedule OneStep(StepKind kind, int peer, size_t bytes) {
  Schedule schedule;
  schedule.algorithm = "test";
  Step step;
  step.kind = kind;
  step.peer = peer;
  step.src = {BufferId::kSend, 0};
  step.dst = {BufferId::kRecv, 0};
  step.bytes = bytes;
  schedule.Add(step);
  return schedule;
}

// Every rank's ring allreduce of `count` int32, or none (a failure reported)
// when one does not build.
std::vector<Schedule> RingAllReduceSchedules(int nranks, size_t count) {
  std::vector<Schedule> schedules(nranks);
  for (int r = 0; r < nranks; ++r) {
    CollectiveArgs args;
    args.coll = Collective::kAllReduce;
    args.count = count;
    args.dtype = chorusInt32;
    args.nranks = nranks;
    args.rank = r;
    const Status built = BuildSchedule(args, Algorithm::kRing, &schedules[r]);
    EXPECT_TRUE(built.ok()) << "rank " << r << ": " << built.message();
    if (!built.ok()) return {};
  }
  return schedules;
}

// Runs `schedule` with its own send and receive buffers of 64 KiB.
class SingleRun {
 public:
  explicit SingleRun(Schedule schedule)
      : schedule_(std::move(schedule)), send_(65536, 1), recv_(65536, 0), scratch_(schedule_.scratch_bytes) {}

  Status Run(Transport* transport, int rank, uint64_t tag, const std::atomic<bool>& abort, Deadline deadline,
             size_t chunk_bytes = 4096) {
    BoundSchedule bound{&schedule_, send_.data(), recv_.data(), scratch_.data(), tag};
    ExecutorOptions options;
    options.chunk_bytes = chunk_bytes;
    options.staging = &staging_;
    return ExecuteSchedules(transport, rank, {bound}, options, abort, deadline);
  }

 private:
  Schedule schedule_;
  std::vector<uint8_t> send_, recv_, scratch_;
  Workspace staging_;
};

TEST(ExecutorErrorsTest, TagMismatchIsInternalErrorNamingThePeer) {
  InprocFabric fabric(2);
  const std::atomic<bool> abort{false};
  std::vector<Status> results = RunRanks(fabric, [&](int rank, Transport* transport) {
    SingleRun run(OneStep(rank == 0 ? StepKind::kRecv : StepKind::kSend, 1 - rank, 1024));
    return run.Run(transport, rank, /*tag=*/rank == 0 ? 7 : 8, abort, Deadline::AfterMs(5000));
  });
  EXPECT_EQ(results[0].code(), chorusInternalError) << results[0].message();
  EXPECT_NE(results[0].message().find("peer 1"), std::string::npos) << results[0].message();
  // The sender learns through the receiver's shutdown, naming it.
  EXPECT_EQ(results[1].code(), chorusRemoteError) << results[1].message();
  EXPECT_NE(results[1].message().find("peer 0"), std::string::npos) << results[1].message();
}

TEST(ExecutorErrorsTest, LengthMismatchIsInternalError) {
  InprocFabric fabric(2);
  const std::atomic<bool> abort{false};
  std::vector<Status> results = RunRanks(fabric, [&](int rank, Transport* transport) {
    SingleRun run(OneStep(rank == 0 ? StepKind::kRecv : StepKind::kSend, 1 - rank, rank == 0 ? 1000 : 1008));
    return run.Run(transport, rank, 5, abort, Deadline::AfterMs(5000));
  });
  EXPECT_EQ(results[0].code(), chorusInternalError) << results[0].message();
  EXPECT_NE(results[0].message().find("peer 1"), std::string::npos) << results[0].message();
  EXPECT_FALSE(results[1].ok());
}

// A real collective whose ranks disagree on the tag (they called different
// operations): nobody succeeds, nobody hangs, and the mismatch is reported
// as an internal error by a receiver.
TEST(ExecutorErrorsTest, CollectiveWithMismatchedTagsFailsEverywhere) {
  constexpr int kRanks = 3;
  const std::vector<Schedule> schedules = RingAllReduceSchedules(kRanks, 4096);
  ASSERT_EQ(schedules.size(), size_t{kRanks});
  InprocFabric fabric(kRanks);
  const std::atomic<bool> abort{false};
  const Clock::time_point start = Clock::now();
  std::vector<Status> results = RunRanks(fabric, [&](int rank, Transport* transport) {
    SingleRun run(schedules[rank]);
    return run.Run(transport, rank, rank == 2 ? 99 : 1, abort, Deadline::AfterMs(10000));
  });
  EXPECT_LT(MillisecondsSince(start), 2000);
  int internal = 0;
  for (int r = 0; r < kRanks; ++r) {
    EXPECT_FALSE(results[r].ok()) << "rank " << r;
    EXPECT_NE(results[r].code(), chorusTimeout) << results[r].message();
    if (results[r].code() == chorusInternalError) {
      ++internal;
      EXPECT_NE(results[r].message().find("peer"), std::string::npos) << results[r].message();
    }
  }
  EXPECT_GE(internal, 1);
}

// Rank 0 runs one `kind` step with rank 1, which never runs (rank 0 would
// wait forever); another thread raises the abort flag after 50 ms, then
// wakes the transport if `wake_transport`. The run must end within 1 s.
void ExpectAbortEndsRun(StepKind kind, bool wake_transport) {
  InprocFabric fabric(2);
  std::atomic<bool> abort{false};
  std::thread aborter([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    abort.store(true);
    if (wake_transport) fabric.transport(0)->Wakeup();
  });
  SingleRun run(OneStep(kind, 1, 1024));
  const Clock::time_point start = Clock::now();
  Status status = run.Run(fabric.transport(0), 0, 1, abort, Deadline::AfterMs(30000));
  const int64_t elapsed = MillisecondsSince(start);
  aborter.join();
  EXPECT_EQ(status.code(), chorusRemoteError) << status.message();
  EXPECT_LT(elapsed, 1000);
}

TEST(ExecutorErrorsTest, AbortFromAnotherThreadReturnsPromptly) {
  ExpectAbortEndsRun(StepKind::kRecv, /*wake_transport=*/false);
}

// Abort in the middle of a real collective that cannot finish (rank 3 never
// joins): every running rank returns promptly.
TEST(ExecutorErrorsTest, AbortStopsEveryRankOfACollective) {
  constexpr int kRanks = 4;
  const std::vector<Schedule> schedules = RingAllReduceSchedules(kRanks, 12345);
  ASSERT_EQ(schedules.size(), size_t{kRanks});
  InprocFabric fabric(kRanks);
  std::atomic<bool> abort{false};
  std::thread aborter([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    abort.store(true);
  });
  const Clock::time_point start = Clock::now();
  std::vector<Status> results = RunRanks(fabric, [&](int rank, Transport* transport) {
    if (rank == kRanks - 1) return Status::Ok();
    SingleRun run(schedules[rank]);
    return run.Run(transport, rank, 1, abort, Deadline::AfterMs(30000), /*chunk_bytes=*/64);
  });
  const int64_t elapsed = MillisecondsSince(start);
  aborter.join();
  for (int r = 0; r + 1 < kRanks; ++r) {
    EXPECT_EQ(results[r].code(), chorusRemoteError) << "rank " << r << ": " << results[r].message();
  }
  EXPECT_LT(elapsed, 1000);
}

// What Communicator::Abort does: raise the flag, then wake the transport.
TEST(ExecutorErrorsTest, AbortWithWakeupReturnsPromptly) {
  ExpectAbortEndsRun(StepKind::kSend, /*wake_transport=*/true);
}

TEST(ExecutorErrorsTest, AbortBeforeStartFailsAtOnce) {
  InprocFabric fabric(2);
  const std::atomic<bool> abort{true};
  SingleRun run(OneStep(StepKind::kRecv, 1, 1024));
  Status status = run.Run(fabric.transport(0), 0, 1, abort, Deadline::AfterMs(30000));
  EXPECT_EQ(status.code(), chorusRemoteError) << status.message();
}

TEST(ExecutorErrorsTest, SilentPeerTimesOutNamingIt) {
  InprocFabric fabric(2);  // rank 1 never sends
  const std::atomic<bool> abort{false};
  SingleRun run(OneStep(StepKind::kRecv, 1, 1024));
  const Clock::time_point start = Clock::now();
  Status status = run.Run(fabric.transport(0), 0, 1, abort, Deadline::AfterMs(300));
  const int64_t elapsed = MillisecondsSince(start);
  EXPECT_EQ(status.code(), chorusTimeout) << status.message();
  EXPECT_NE(status.message().find("peer 1"), std::string::npos) << status.message();
  EXPECT_GE(elapsed, 290);
  EXPECT_LT(elapsed, 1000);
}

TEST(ExecutorErrorsTest, PeerThatNeverReceivesTimesOutNamingIt) {
  InprocFabric fabric(3);
  const std::atomic<bool> abort{false};
  SingleRun run(OneStep(StepKind::kSend, 2, 1024));
  Status status = run.Run(fabric.transport(0), 0, 1, abort, Deadline::AfterMs(200));
  EXPECT_EQ(status.code(), chorusTimeout) << status.message();
  EXPECT_NE(status.message().find("peer 2"), std::string::npos) << status.message();
  EXPECT_EQ(status.message().find("peer 1"), std::string::npos) << status.message();
}

// A peer that dies (its transport shuts down) fails its partners promptly,
// long before their deadline, with a remote error naming it.
TEST(ExecutorErrorsTest, DeadPeerIsRemoteErrorNamingIt) {
  InprocFabric fabric(2);
  const std::atomic<bool> abort{false};
  std::thread killer([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    fabric.transport(1)->Shutdown();
  });
  SingleRun run(OneStep(StepKind::kRecv, 1, 1024));
  const Clock::time_point start = Clock::now();
  Status status = run.Run(fabric.transport(0), 0, 1, abort, Deadline::AfterMs(30000));
  const int64_t elapsed = MillisecondsSince(start);
  killer.join();
  EXPECT_EQ(status.code(), chorusRemoteError) << status.message();
  EXPECT_NE(status.message().find("peer 1"), std::string::npos) << status.message();
  EXPECT_LT(elapsed, 1000);
}

TEST(ExecutorErrorsTest, DependencyOnLaterStepIsRejected) {
  Schedule schedule;
  schedule.algorithm = "test";
  Step copy;
  copy.kind = StepKind::kCopy;
  copy.src = {BufferId::kSend, 0};
  copy.dst = {BufferId::kRecv, 0};
  copy.bytes = 64;
  copy.deps = {1};
  schedule.Add(copy);
  copy.deps = {};
  schedule.Add(copy);
  InprocFabric fabric(1);
  const std::atomic<bool> abort{false};
  SingleRun run(schedule);
  Status status = run.Run(fabric.transport(0), 0, 1, abort, Deadline::AfterMs(1000));
  EXPECT_EQ(status.code(), chorusInternalError) << status.message();
}

TEST(ExecutorErrorsTest, DependencyOnItselfIsRejected) {
  Schedule schedule = OneStep(StepKind::kCopy, -1, 64);
  schedule.steps[0].deps = {0};
  InprocFabric fabric(1);
  const std::atomic<bool> abort{false};
  SingleRun run(schedule);
  Status status = run.Run(fabric.transport(0), 0, 1, abort, Deadline::AfterMs(1000));
  EXPECT_EQ(status.code(), chorusInternalError) << status.message();
}

TEST(ExecutorErrorsTest, SendToSelfOrUnknownPeerIsRejected) {
  InprocFabric fabric(2);
  const std::atomic<bool> abort{false};
  for (int peer : {0, -1, 2}) {
    SingleRun run(OneStep(StepKind::kSend, peer, 64));
    Status status = run.Run(fabric.transport(0), 0, 1, abort, Deadline::AfterMs(1000));
    EXPECT_EQ(status.code(), chorusInternalError) << "peer " << peer << ": " << status.message();
  }
}

// Nothing to do finishes at once, even with no live peer.
TEST(ExecutorErrorsTest, EmptyStepsNeedNoPeer) {
  InprocFabric fabric(2);
  const std::atomic<bool> abort{false};
  SingleRun run(OneStep(StepKind::kRecv, 1, 0));
  EXPECT_TRUE(run.Run(fabric.transport(0), 0, 1, abort, Deadline::AfterMs(1000)).ok());
}

}  // namespace
}  // namespace chorus::testing
