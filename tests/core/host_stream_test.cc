// HostStream: in-order execution on its own thread, first-error reporting,
// Query while busy, and draining on destruction.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <thread>
#include <vector>

#include "core/host_stream.h"

namespace chorus {
namespace {

// A latch whose wait is bounded, so that a failing test cannot hang.
class TimedLatch {
 public:
  void CountDown() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      open_ = true;
    }
    cv_.notify_all();
  }
  bool Wait(int timeout_ms = 5000) {
    std::unique_lock<std::mutex> lock(mutex_);
    return cv_.wait_for(lock, std::chrono::milliseconds(timeout_ms), [&] { return open_; });
  }

 private:
  std::mutex mutex_;
  std::condition_variable cv_;
  bool open_ = false;
};

TEST(HostStreamTest, RunsItemsInOrderOnOneOtherThread) {
  HostStream stream;
  std::vector<int> order;  // touched by the worker only until Synchronize
  std::vector<std::thread::id> threads;
  for (int i = 0; i < 100; ++i) {
    stream.Enqueue([&, i] {
      order.push_back(i);
      threads.push_back(std::this_thread::get_id());
      return Status::Ok();
    });
  }
  ASSERT_TRUE(stream.Synchronize().ok());
  ASSERT_EQ(order.size(), 100u);
  for (int i = 0; i < 100; ++i) EXPECT_EQ(order[i], i);
  for (std::thread::id id : threads) {
    EXPECT_EQ(id, threads[0]);
    EXPECT_NE(id, std::this_thread::get_id());
  }
}

TEST(HostStreamTest, SynchronizeOnAnIdleStreamReturnsOk) {
  HostStream stream;
  EXPECT_TRUE(stream.Synchronize().ok());
  EXPECT_TRUE(stream.Query().ok());
}

TEST(HostStreamTest, SynchronizeReturnsTheFirstErrorAndClearsIt) {
  HostStream stream;
  std::atomic<int> ran{0};
  stream.Enqueue([&] {
    ++ran;
    return Status::Ok();
  });
  stream.Enqueue([&] {
    ++ran;
    return InternalError("first failure");
  });
  stream.Enqueue([&] {
    ++ran;
    return TimeoutError("second failure");
  });
  Status status = stream.Synchronize();
  EXPECT_EQ(status.code(), chorusInternalError);
  EXPECT_EQ(status.message(), "first failure");
  EXPECT_EQ(ran.load(), 3);
  EXPECT_TRUE(stream.Synchronize().ok());
  // A later failure is reported afresh.
  stream.Enqueue([] { return RemoteError("later"); });
  EXPECT_EQ(stream.Synchronize().code(), chorusRemoteError);
}

TEST(HostStreamTest, QueryIsInProgressWhileAnItemRuns) {
  HostStream stream;
  TimedLatch started, release;
  stream.Enqueue([&] {
    started.CountDown();
    release.Wait();
    return Status::Ok();
  });
  stream.Enqueue([] { return Status::Ok(); });
  ASSERT_TRUE(started.Wait());
  EXPECT_EQ(stream.Query().code(), chorusInProgress);
  release.CountDown();
  EXPECT_TRUE(stream.Synchronize().ok());
  EXPECT_TRUE(stream.Query().ok());
}

TEST(HostStreamTest, QueryIsInProgressWhileItemsAreQueued) {
  HostStream stream;
  TimedLatch release;
  stream.Enqueue([&] {
    release.Wait();
    return Status::Ok();
  });
  for (int i = 0; i < 3; ++i) {
    stream.Enqueue([] { return Status::Ok(); });
    EXPECT_EQ(stream.Query().code(), chorusInProgress);
  }
  release.CountDown();
  EXPECT_TRUE(stream.Synchronize().ok());
}

TEST(HostStreamTest, QueryReturnsTheErrorAndLeavesItForSynchronize) {
  HostStream stream;
  stream.Enqueue([] { return InternalError("broken"); });
  Status status = Status(chorusInProgress, "");
  for (int i = 0; i < 5000 && status.code() == chorusInProgress; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
    status = stream.Query();
  }
  EXPECT_EQ(status.code(), chorusInternalError);
  EXPECT_EQ(status.message(), "broken");
  EXPECT_EQ(stream.Query().code(), chorusInternalError);
  EXPECT_EQ(stream.Synchronize().code(), chorusInternalError);
  EXPECT_TRUE(stream.Query().ok());
  EXPECT_TRUE(stream.Synchronize().ok());
}

TEST(HostStreamTest, DestructorDrainsPendingItems) {
  std::atomic<int> ran{0};
  {
    HostStream stream;
    stream.Enqueue([&] {
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
      ++ran;
      return Status::Ok();
    });
    for (int i = 0; i < 50; ++i) {
      stream.Enqueue([&ran, i] {
        ++ran;
        return i % 7 == 0 ? InternalError("ignored at destruction") : Status::Ok();
      });
    }
  }
  EXPECT_EQ(ran.load(), 51);
}

TEST(HostStreamTest, ItemsFromManyThreadsAllRun) {
  HostStream stream;
  std::atomic<int> ran{0};
  std::vector<std::thread> producers;
  for (int t = 0; t < 4; ++t) {
    producers.emplace_back([&] {
      for (int i = 0; i < 250; ++i)
        stream.Enqueue([&] {
          ++ran;
          return Status::Ok();
        });
    });
  }
  for (std::thread& producer : producers) producer.join();
  EXPECT_TRUE(stream.Synchronize().ok());
  EXPECT_EQ(ran.load(), 1000);
}

}  // namespace
}  // namespace chorus
