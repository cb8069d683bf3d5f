// Events on host streams: per-operation completion (chorusEventRecord,
// Query, Synchronize), streams waiting on each other's events, sticky
// failures, and bad handles.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "tests/api/harness.h"

namespace chorus_test {
namespace {

// Owns a stream and an event; both destroyed at scope exit.
struct StreamAndEvent {
  StreamAndEvent() {
    EXPECT_EQ(chorusStreamCreate(&stream), chorusSuccess);
    EXPECT_EQ(chorusEventCreate(&event), chorusSuccess);
  }
  ~StreamAndEvent() {
    if (event != nullptr) {
      EXPECT_EQ(chorusEventDestroy(event), chorusSuccess);
    }
    if (stream != nullptr) {
      EXPECT_EQ(chorusStreamDestroy(stream), chorusSuccess);
    }
  }
  StreamAndEvent(const StreamAndEvent&) = delete;
  StreamAndEvent& operator=(const StreamAndEvent&) = delete;
  chorusStream_t stream = nullptr;
  chorusEvent_t event = nullptr;
};

TEST(EventsTest, AnEventNeverRecordedIsComplete) {
  StreamAndEvent s;
  EXPECT_EQ(chorusEventQuery(s.event), chorusSuccess);
  EXPECT_EQ(chorusEventSynchronize(s.event), chorusSuccess);
  EXPECT_EQ(chorusStreamWaitEvent(s.stream, s.event), chorusSuccess);
  EXPECT_EQ(chorusStreamSynchronize(s.stream), chorusSuccess);
}

TEST(EventsTest, RecordOnTheNullStreamCompletesAtOnce) {
  StreamAndEvent s;
  ASSERT_EQ(chorusEventRecord(s.event, nullptr), chorusSuccess);
  EXPECT_EQ(chorusEventQuery(s.event), chorusSuccess);
}

TEST(EventsTest, NullHandlesAreRejectedWithAMessage) {
  chorusStream_t stream = nullptr;
  ASSERT_EQ(chorusStreamCreate(&stream), chorusSuccess);
  EXPECT_EQ(chorusEventCreate(nullptr), chorusInvalidArgument);
  EXPECT_NE(std::strstr(chorusGetLastError(nullptr), "event is NULL"), nullptr) << chorusGetLastError(nullptr);
  EXPECT_EQ(chorusEventRecord(nullptr, stream), chorusInvalidArgument);
  EXPECT_EQ(chorusEventQuery(nullptr), chorusInvalidArgument);
  EXPECT_EQ(chorusEventSynchronize(nullptr), chorusInvalidArgument);
  EXPECT_EQ(chorusStreamWaitEvent(stream, nullptr), chorusInvalidArgument);
  EXPECT_EQ(chorusEventDestroy(nullptr), chorusInvalidArgument);
  EXPECT_EQ(chorusStreamDestroy(stream), chorusSuccess);
}

// Rank 0 enqueues two allreduces with an event after each. Rank 1 issues
// the first only after rank 0 has seen both events pending, and the second
// only after rank 0 has seen the first complete and the second still
// pending: each event follows its own operation.
TEST(EventsTest, EachEventCompletesWithItsOwnOperation) {
  ThreadComms comms = ThreadComms::InitRank(2);
  ASSERT_TRUE(comms.ok()) << comms.error();
  std::atomic<int> stage{0};
  auto wait_stage = [&](int at_least) {
    const auto end = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (stage.load() < at_least && std::chrono::steady_clock::now() < end) {
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
  };
  comms.Run([&](int rank, chorusComm_t comm) {
    StreamAndEvent first;
    chorusEvent_t second = nullptr;
    ASSERT_EQ(chorusEventCreate(&second), chorusSuccess);
    std::vector<float> a(4096, static_cast<float>(rank + 1)), b(4096, static_cast<float>(10 * (rank + 1)));
    if (rank == 1) wait_stage(1);
    ASSERT_EQ(chorusAllReduce(a.data(), a.data(), a.size(), chorusFloat32, chorusSum, comm, first.stream),
              chorusSuccess);
    ASSERT_EQ(chorusEventRecord(first.event, first.stream), chorusSuccess);
    if (rank == 1) wait_stage(2);
    ASSERT_EQ(chorusAllReduce(b.data(), b.data(), b.size(), chorusFloat32, chorusSum, comm, first.stream),
              chorusSuccess);
    ASSERT_EQ(chorusEventRecord(second, first.stream), chorusSuccess);
    if (rank == 0) {
      EXPECT_EQ(chorusEventQuery(first.event), chorusInProgress);
      EXPECT_EQ(chorusEventQuery(second), chorusInProgress);
      stage.store(1);
      EXPECT_EQ(chorusEventSynchronize(first.event), chorusSuccess);
      EXPECT_EQ(a[0], 3.0f);
      EXPECT_EQ(chorusEventQuery(second), chorusInProgress);
      stage.store(2);
    }
    EXPECT_EQ(chorusEventSynchronize(second), chorusSuccess);
    EXPECT_EQ(chorusEventQuery(second), chorusSuccess);
    size_t wrong = 0;
    for (size_t i = 0; i < a.size(); ++i) wrong += (a[i] != 3.0f) + (b[i] != 30.0f);
    EXPECT_EQ(wrong, 0u) << "rank " << rank;
    EXPECT_EQ(chorusEventDestroy(second), chorusSuccess);
  });
}

// A second stream waits (in its queue) for the first stream's allreduce,
// then broadcasts its result on another communicator (so that no ordering
// of the first communicator's own calls helps): without the wait it would
// send the old values.
TEST(EventsTest, StreamWaitEventOrdersWorkAcrossStreams) {
  constexpr int kRanks = 3;
  constexpr size_t kCount = 1 << 18;
  ThreadComms comms = ThreadComms::InitRank(kRanks);
  ASSERT_TRUE(comms.ok()) << comms.error();
  comms.Run([&](int rank, chorusComm_t comm) {
    chorusComm_t other = nullptr;
    ASSERT_EQ(chorusCommSplit(comm, 0, rank, &other, nullptr), chorusSuccess);
    StreamAndEvent producer;
    chorusStream_t consumer = nullptr;
    ASSERT_EQ(chorusStreamCreate(&consumer), chorusSuccess);
    std::vector<int32_t> data(kCount, rank + 1), copy(kCount, -1);
    // Rank 0's allreduce cannot finish before the slowest rank joins it.
    std::this_thread::sleep_for(std::chrono::milliseconds(20 * rank));
    ASSERT_EQ(chorusAllReduce(data.data(), data.data(), kCount, chorusInt32, chorusSum, comm, producer.stream),
              chorusSuccess);
    ASSERT_EQ(chorusEventRecord(producer.event, producer.stream), chorusSuccess);
    ASSERT_EQ(chorusStreamWaitEvent(consumer, producer.event), chorusSuccess);
    ASSERT_EQ(chorusBroadcast(data.data(), copy.data(), kCount, chorusInt32, 0, other, consumer), chorusSuccess);
    ASSERT_EQ(chorusStreamSynchronize(consumer), chorusSuccess);
    size_t wrong = 0;
    for (size_t i = 0; i < kCount; ++i) wrong += copy[i] != kRanks * (kRanks + 1) / 2;
    EXPECT_EQ(wrong, 0u) << "rank " << rank;
    EXPECT_EQ(chorusStreamDestroy(consumer), chorusSuccess);
    EXPECT_EQ(chorusCommDestroy(other), chorusSuccess);
  });
}

// Recording again moves the event to the later point.
TEST(EventsTest, RecordingAgainMovesTheEvent) {
  ThreadComms comms = ThreadComms::InitRank(2);
  ASSERT_TRUE(comms.ok()) << comms.error();
  std::atomic<bool> seen_pending{false};
  comms.Run([&](int rank, chorusComm_t comm) {
    StreamAndEvent s;
    std::vector<int64_t> data(1024, rank);
    ASSERT_EQ(chorusEventRecord(s.event, s.stream), chorusSuccess);
    ASSERT_EQ(chorusEventSynchronize(s.event), chorusSuccess);  // empty stream: done
    if (rank == 1) {
      while (!seen_pending.load()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    ASSERT_EQ(chorusAllReduce(data.data(), data.data(), data.size(), chorusInt64, chorusSum, comm, s.stream),
              chorusSuccess);
    ASSERT_EQ(chorusEventRecord(s.event, s.stream), chorusSuccess);
    if (rank == 0) {
      EXPECT_EQ(chorusEventQuery(s.event), chorusInProgress);
      seen_pending.store(true);
    }
    EXPECT_EQ(chorusEventSynchronize(s.event), chorusSuccess);
    EXPECT_EQ(data[0], 1);
  });
}

// Destroying an event whose record is still queued is safe, and the stream
// goes on.
TEST(EventsTest, DestroyingAPendingEventIsSafe) {
  ThreadComms comms = ThreadComms::InitRank(2);
  ASSERT_TRUE(comms.ok()) << comms.error();
  comms.Run([&](int rank, chorusComm_t comm) {
    chorusStream_t stream = nullptr;
    ASSERT_EQ(chorusStreamCreate(&stream), chorusSuccess);
    std::vector<uint8_t> data(1 << 20, static_cast<uint8_t>(rank + 1));
    for (int i = 0; i < 8; ++i) {
      chorusEvent_t event = nullptr;
      ASSERT_EQ(chorusEventCreate(&event), chorusSuccess);
      ASSERT_EQ(chorusAllReduce(data.data(), data.data(), data.size(), chorusUint8, chorusMax, comm, stream),
                chorusSuccess);
      ASSERT_EQ(chorusEventRecord(event, stream), chorusSuccess);
      ASSERT_EQ(chorusEventDestroy(event), chorusSuccess);
    }
    EXPECT_EQ(chorusStreamSynchronize(stream), chorusSuccess);
    EXPECT_EQ(data[0], 2);
    EXPECT_EQ(chorusStreamDestroy(stream), chorusSuccess);
  });
}

// Rank 0's allreduce times out (rank 1 never joins): the event after it
// completes with the failure and its message, within the timeout; a stream
// waiting on that event reports the failure too.
TEST(EventsTest, AFailedOperationFailsItsEventAndTheStreamsWaitingOnIt) {
  chorusConfig_t config = MakeConfig(nullptr, /*timeout_ms=*/1000);
  ThreadComms comms = ThreadComms::InitRank(2, &config);
  ASSERT_TRUE(comms.ok()) << comms.error();
  StreamAndEvent s;
  chorusStream_t waiter = nullptr;
  ASSERT_EQ(chorusStreamCreate(&waiter), chorusSuccess);
  std::vector<int32_t> data(1024, 1);
  const auto start = std::chrono::steady_clock::now();
  ASSERT_EQ(chorusAllReduce(data.data(), data.data(), data.size(), chorusInt32, chorusSum, comms[0], s.stream),
            chorusSuccess);
  ASSERT_EQ(chorusEventRecord(s.event, s.stream), chorusSuccess);
  ASSERT_EQ(chorusStreamWaitEvent(waiter, s.event), chorusSuccess);
  const chorusResult_t synced = chorusEventSynchronize(s.event);
  EXPECT_TRUE(synced == chorusTimeout || synced == chorusRemoteError) << "got " << synced;
  EXPECT_GT(std::string(chorusGetLastError(nullptr)).size(), 0u);
  EXPECT_EQ(chorusEventQuery(s.event), synced);
  EXPECT_EQ(chorusStreamSynchronize(waiter), synced);
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(), 10.0);
  EXPECT_EQ(chorusStreamDestroy(waiter), chorusSuccess);
  comms.AbortAll();
}

}  // namespace
}  // namespace chorus_test
