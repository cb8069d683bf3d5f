// HostStream: in-order execution on its own thread, first-error reporting,
// Query while busy, draining on destruction, and the polling hand-off
// (worker and Synchronize poll before they sleep).
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

// Issue, synchronize, issue, ...: each item is picked up by the polling
// worker or by a woken one, and Synchronize sees every result at once.
TEST(HostStreamTest, BackToBackIssueAndSynchronizeSeesEveryItem) {
  HostStream stream;
  int value = 0;  // touched by the worker, read after Synchronize
  for (int i = 1; i <= 2000; ++i) {
    stream.Enqueue([&value, i] {
      value = i;
      return i % 500 == 0 ? InternalError("item ", i) : Status::Ok();
    });
    Status status = stream.Synchronize();
    ASSERT_EQ(value, i);
    ASSERT_EQ(status.ok(), i % 500 != 0) << i;
  }
  EXPECT_TRUE(stream.Query().ok());
}

// Items that arrive after the worker's polling stage ran out (it sleeps
// then) still run, and so do items arriving while it polls.
TEST(HostStreamTest, ItemsRunWhetherTheWorkerPollsOrSleeps) {
  HostStream stream;
  std::atomic<int> ran{0};
  for (int pause_us : {0, 10, 200, 5000, 0}) {
    std::this_thread::sleep_for(std::chrono::microseconds(pause_us));
    stream.Enqueue([&] {
      ++ran;
      return Status::Ok();
    });
  }
  EXPECT_TRUE(stream.Synchronize().ok());
  EXPECT_EQ(ran.load(), 5);
}

// Synchronize must outwait its polling stage when an item runs long.
TEST(HostStreamTest, SynchronizeWaitsForALongItem) {
  HostStream stream;
  std::atomic<bool> done{false};
  stream.Enqueue([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    done = true;
    return Status::Ok();
  });
  EXPECT_TRUE(stream.Synchronize().ok());
  EXPECT_TRUE(done.load());
}

// A destroyed stream does not wait out the worker's polling stage for long:
// the worker sees the stop request while it polls.
TEST(HostStreamTest, DestructionRightAfterAnItemIsPrompt) {
  const auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < 20; ++i) {
    HostStream stream;
    stream.Enqueue([] { return Status::Ok(); });
    ASSERT_TRUE(stream.Synchronize().ok());
  }
  // 20 streams; each one's teardown is a join, far below a second.
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(2));
}

}  // namespace
}  // namespace chorus
