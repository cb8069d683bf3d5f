// The harness must catch what it exists to catch: missing dependencies,
// mismatched messages, deadlocks, and buffer misuse.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <vector>

#include "schedule_checker.h"
#include "virtual_executor.h"

namespace chorus::testing {
namespace {

Step MakeStep(StepKind kind, int peer, BufferRange src, BufferRange dst, size_t bytes,
              std::vector<uint32_t> deps = {}) {
  Step step;
  step.kind = kind;
  step.peer = peer;
  step.src = src;
  step.dst = dst;
  step.bytes = bytes;
  step.deps = std::move(deps);
  return step;
}

Schedule Int32Schedule() {
  Schedule schedule;
  schedule.dtype = chorusInt32;
  schedule.element_size = 4;
  return schedule;
}

constexpr BufferRange kSend0{BufferId::kSend, 0};
constexpr BufferRange kRecv0{BufferId::kRecv, 0};

// Two ranks with 16-byte send and recv buffers each.
struct TwoRanks {
  std::vector<uint8_t> send[2];
  std::vector<uint8_t> recv[2];
  std::vector<RankMemory> memory{2};
  TwoRanks() {
    for (int r = 0; r < 2; ++r) {
      send[r].assign(16, static_cast<uint8_t>(10 + r));
      recv[r].assign(16, static_cast<uint8_t>(20 + r));
      memory[r] = RankMemory{send[r].data(), 16, recv[r].data(), 16};
    }
  }
};

// Rank r sends its recv buffer to the other rank and receives the other's
// into the same bytes: the receive must wait for the send (write after read).
std::vector<Schedule> SwapThroughRecv(bool declare_dependency) {
  std::vector<Schedule> schedules(2, Int32Schedule());
  for (int r = 0; r < 2; ++r) {
    schedules[r].steps.push_back(MakeStep(StepKind::kSend, 1 - r, kRecv0, {}, 16));
    schedules[r].steps.push_back(MakeStep(StepKind::kRecv, 1 - r, {}, kRecv0, 16,
                                          declare_dependency ? std::vector<uint32_t>{0} : std::vector<uint32_t>{}));
  }
  return schedules;
}

TEST(ScheduleChecker, AcceptsACorrectSwap) {
  TwoRanks ranks;
  EXPECT_EQ(CheckSchedules(SwapThroughRecv(true), ranks.memory), "");
}

TEST(ScheduleChecker, FindsAMissingDependency) {
  TwoRanks ranks;
  const std::string error = CheckSchedules(SwapThroughRecv(false), ranks.memory);
  EXPECT_NE(error.find("no dependency orders conflicting steps (read then write)"), std::string::npos) << error;
}

TEST(VirtualExecutor, RandomOrderExposesAMissingDependency) {
  int wrong = 0;
  int right = 0;
  for (uint64_t seed = 1; seed <= 40; ++seed) {
    TwoRanks ranks;
    VirtualRunOptions options;
    options.seed = seed;
    options.chunk_bytes = 8;
    ASSERT_EQ(RunVirtualRanks(SwapThroughRecv(false), ranks.memory, options), "");
    const bool swapped = ranks.recv[0][0] == 21 && ranks.recv[1][15] == 20;
    (swapped ? right : wrong) += 1;
  }
  EXPECT_GT(wrong, 0);
  EXPECT_GT(right, 0);
}

TEST(VirtualExecutor, RendezvousExposesADeadlockThatEagerHides) {
  // Each rank's receive waits for its own send, which under rendezvous waits
  // for the peer's receive: a cycle only buffered sends break.
  TwoRanks eager_ranks;
  VirtualRunOptions options;
  EXPECT_EQ(RunVirtualRanks(SwapThroughRecv(true), eager_ranks.memory, options), "");
  EXPECT_EQ(eager_ranks.recv[0][0], 21);
  TwoRanks rendezvous_ranks;
  options.rendezvous = true;
  const std::string error = RunVirtualRanks(SwapThroughRecv(true), rendezvous_ranks.memory, options);
  EXPECT_NE(error.find("deadlock"), std::string::npos) << error;
  EXPECT_NE(error.find("#0 send peer=1"), std::string::npos) << error;  // schedule dumped
}

TEST(VirtualExecutor, ReportsADeadlock) {
  std::vector<Schedule> schedules(2, Int32Schedule());
  for (int r = 0; r < 2; ++r) {
    schedules[r].steps.push_back(MakeStep(StepKind::kRecv, 1 - r, {}, kRecv0, 16));
    schedules[r].steps.push_back(MakeStep(StepKind::kSend, 1 - r, kRecv0, {}, 16, {0}));
  }
  TwoRanks ranks;
  const std::string error = RunVirtualRanks(schedules, ranks.memory, VirtualRunOptions{});
  EXPECT_NE(error.find("deadlock"), std::string::npos) << error;
  EXPECT_NE(error.find("r0#0(0/1)"), std::string::npos) << error;
}

TEST(VirtualExecutor, ReportsMismatchedChunkLengths) {
  std::vector<Schedule> schedules(2, Int32Schedule());
  schedules[0].steps.push_back(MakeStep(StepKind::kSend, 1, kSend0, {}, 8));
  schedules[1].steps.push_back(MakeStep(StepKind::kRecv, 0, {}, kRecv0, 12));
  TwoRanks ranks;
  for (bool rendezvous : {false, true}) {
    VirtualRunOptions options;
    options.rendezvous = rendezvous;
    const std::string error = RunVirtualRanks(schedules, ranks.memory, options);
    EXPECT_NE(error.find("chunk length mismatch: rank 0 step 0 chunk 0 sends 8 bytes but rank 1 "
                         "step 0 chunk 0 expects 12 bytes"),
              std::string::npos)
        << error;
  }
  const std::string error = CheckSchedules(schedules, ranks.memory);
  EXPECT_NE(error.find("message 0 is 8 bytes sent but 12 bytes received"), std::string::npos) << error;
}

TEST(VirtualExecutor, ChunksPipelineAcrossRanks) {
  // Rank 0 sends 16 bytes; rank 1 forwards them back as they arrive. With a
  // 4-byte chunk the forward of chunk k needs only chunk k received.
  std::vector<Schedule> schedules(2, Int32Schedule());
  schedules[0].steps.push_back(MakeStep(StepKind::kSend, 1, kSend0, {}, 16));
  schedules[0].steps.push_back(MakeStep(StepKind::kRecv, 1, {}, kRecv0, 16));
  schedules[1].steps.push_back(MakeStep(StepKind::kRecv, 0, {}, kRecv0, 16));
  schedules[1].steps.push_back(MakeStep(StepKind::kSend, 0, kRecv0, {}, 16, {0}));
  for (uint64_t seed = 1; seed <= 5; ++seed) {
    TwoRanks ranks;
    VirtualRunOptions options;
    options.chunk_bytes = 5;  // rounds down to one int32
    options.seed = seed;
    options.rendezvous = seed % 2;
    ASSERT_EQ(CheckSchedules(schedules, ranks.memory), "");
    ASSERT_EQ(RunVirtualRanks(schedules, ranks.memory, options), "");
    EXPECT_EQ(ranks.recv[0], ranks.send[0]);
  }
}

TEST(ScheduleChecker, RejectsAnInsufficientPrefixDependency) {
  // The send reads bytes [4, 12) of recv, the copy wrote [0, 8): equal
  // lengths, so the executor would let send chunk 0 wait only for copy chunk
  // 0, yet it reads bytes copy chunk 1 writes.
  std::vector<Schedule> schedules(2, Int32Schedule());
  schedules[0].steps.push_back(MakeStep(StepKind::kCopy, -1, kSend0, kRecv0, 8));
  schedules[0].steps.push_back(MakeStep(StepKind::kSend, 1, BufferRange{BufferId::kRecv, 4}, {}, 8, {0}));
  schedules[1].steps.push_back(MakeStep(StepKind::kRecv, 0, {}, kRecv0, 8));
  TwoRanks ranks;
  const std::string error = CheckSchedules(schedules, ranks.memory);
  EXPECT_NE(error.find("only a prefix dependency orders"), std::string::npos) << error;
}

TEST(ScheduleChecker, RejectsBufferMisuse) {
  TwoRanks ranks;
  auto check_one = [&](Step step, RankMemory memory, size_t scratch = 0) {
    std::vector<Schedule> schedules(1, Int32Schedule());
    schedules[0].scratch_bytes = scratch;
    schedules[0].steps.push_back(std::move(step));
    return CheckSchedules(schedules, {memory});
  };
  const RankMemory full = ranks.memory[0];
  EXPECT_NE(check_one(MakeStep(StepKind::kCopy, -1, kRecv0, kSend0, 8), full).find("send buffer is const"),
            std::string::npos);
  EXPECT_NE(check_one(MakeStep(StepKind::kCopy, -1, kSend0, kRecv0, 0), full).find("zero bytes"), std::string::npos);
  EXPECT_NE(check_one(MakeStep(StepKind::kCopy, -1, kSend0, kRecv0, 6), full).find("element size"), std::string::npos);
  EXPECT_NE(check_one(MakeStep(StepKind::kCopy, -1, kSend0, BufferRange{BufferId::kRecv, 12}, 8), full).find("exceeds"),
            std::string::npos);
  EXPECT_NE(
      check_one(MakeStep(StepKind::kCopy, -1, kSend0, BufferRange{BufferId::kScratch, 0}, 8), full, 4).find("exceeds"),
      std::string::npos);
  RankMemory no_recv = full;
  no_recv.recv = nullptr;
  EXPECT_NE(check_one(MakeStep(StepKind::kCopy, -1, kSend0, kRecv0, 8), no_recv).find("unbound recv buffer"),
            std::string::npos);
  EXPECT_NE(check_one(MakeStep(StepKind::kSend, 0, kSend0, {}, 8), full).find("invalid peer"), std::string::npos);
}

TEST(VirtualExecutor, ChunkSizeRoundsDownToWholeElements) {
  EXPECT_EQ(EffectiveChunkBytes(7, 4), 4u);
  EXPECT_EQ(EffectiveChunkBytes(3, 4), 4u);
  EXPECT_EQ(EffectiveChunkBytes(100, 8), 96u);
  EXPECT_EQ(EffectiveChunkBytes(1, 1), 1u);
}

}  // namespace
}  // namespace chorus::testing
