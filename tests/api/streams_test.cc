// Host streams: collectives enqueued on one stream run in order, Query
// reports progress, Synchronize returns the error of a failed operation, and
// a NULL stream makes the call blocking.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "tests/api/harness.h"

namespace chorus_test {
namespace {

// Owns a stream; destroyed at scope exit.
class Stream {
 public:
  Stream() { result_ = chorusStreamCreate(&stream_); }
  ~Stream() {
    if (stream_ != nullptr) (void)chorusStreamDestroy(stream_);
  }
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;
  chorusResult_t create_result() const { return result_; }
  chorusStream_t get() const { return stream_; }

 private:
  chorusStream_t stream_ = nullptr;
  chorusResult_t result_ = chorusInternalError;
};

TEST(StreamsTest, CreateQueryAndDestroyAnIdleStream) {
  Stream stream;
  ASSERT_EQ(stream.create_result(), chorusSuccess);
  ASSERT_NE(stream.get(), nullptr);
  EXPECT_EQ(chorusStreamQuery(stream.get()), chorusSuccess);
  EXPECT_EQ(chorusStreamSynchronize(stream.get()), chorusSuccess);
}

// allreduce (in place) -> broadcast of the result from root 1 into another
// buffer -> allreduce of that buffer: each step reads the previous one's
// output, so only in-order execution gives the expected values.
TEST(StreamsTest, CollectivesOnOneStreamRunInOrder) {
  constexpr int kRanks = 3;
  constexpr size_t kCount = 70001;
  ThreadComms comms = ThreadComms::InitRank(kRanks);
  ASSERT_TRUE(comms.ok()) << comms.error();
  comms.Run([&](int rank, chorusComm_t comm) {
    Stream stream;
    ASSERT_EQ(stream.create_result(), chorusSuccess);
    std::vector<int64_t> a(kCount);
    std::vector<int64_t> b(kCount, -1);
    for (size_t i = 0; i < kCount; ++i) a[i] = static_cast<int64_t>(i) + rank;
    ASSERT_EQ(chorusAllReduce(a.data(), a.data(), kCount, chorusInt64, chorusSum, comm, stream.get()), chorusSuccess);
    ASSERT_EQ(chorusBroadcast(a.data(), b.data(), kCount, chorusInt64, 1, comm, stream.get()), chorusSuccess);
    ASSERT_EQ(chorusAllReduce(b.data(), b.data(), kCount, chorusInt64, chorusSum, comm, stream.get()), chorusSuccess);
    const chorusResult_t synced = chorusStreamSynchronize(stream.get());
    ASSERT_EQ(synced, chorusSuccess) << Describe(synced, comm);
    EXPECT_EQ(chorusStreamQuery(stream.get()), chorusSuccess);
    size_t wrong = 0;
    for (size_t i = 0; i < kCount; ++i) {
      const int64_t sum = kRanks * static_cast<int64_t>(i) + kRanks * (kRanks - 1) / 2;
      wrong += a[i] != sum;
      wrong += b[i] != kRanks * sum;
    }
    EXPECT_EQ(wrong, 0u) << "rank " << rank;
  });
}

// Rank 0 enqueues an allreduce that cannot finish until rank 1 issues its
// own, which rank 1 only does after rank 0 has seen chorusInProgress.
TEST(StreamsTest, QueryReportsInProgressThenSuccess) {
  ThreadComms comms = ThreadComms::InitRank(2);
  ASSERT_TRUE(comms.ok()) << comms.error();
  std::atomic<bool> queried{false};
  comms.Run([&](int rank, chorusComm_t comm) {
    Stream stream;
    ASSERT_EQ(stream.create_result(), chorusSuccess);
    std::vector<float> data(1 << 16, static_cast<float>(rank + 1));
    if (rank == 1) {
      while (!queried.load()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    const chorusResult_t issued =
        chorusAllReduce(data.data(), data.data(), data.size(), chorusFloat32, chorusSum, comm, stream.get());
    if (rank == 0) {
      const chorusResult_t query = chorusStreamQuery(stream.get());
      queried.store(true);
      ASSERT_EQ(issued, chorusSuccess) << Describe(issued, comm);
      EXPECT_EQ(query, chorusInProgress);
    }
    ASSERT_EQ(issued, chorusSuccess) << Describe(issued, comm);
    EXPECT_EQ(chorusStreamSynchronize(stream.get()), chorusSuccess);
    EXPECT_EQ(chorusStreamQuery(stream.get()), chorusSuccess);
    size_t wrong = 0;
    for (float value : data) wrong += value != 3.0f;
    EXPECT_EQ(wrong, 0u) << "rank " << rank;
  });
}

// Rank 0 enqueues an allreduce on a stream that rank 1 never joins, so it
// times out after 1 s; each test then looks at how the stream reports it.
class FailedOperationTest : public testing::Test {
 protected:
  void SetUp() override {
    config_ = MakeConfig(nullptr, /*timeout_ms=*/1000);
    comms_ = ThreadComms::InitRank(2, &config_);
    ASSERT_TRUE(comms_.ok()) << comms_.error();
    ASSERT_EQ(stream_.create_result(), chorusSuccess);
    start_ = std::chrono::steady_clock::now();
    ASSERT_EQ(chorusAllReduce(data_.data(), data_.data(), data_.size(), chorusInt32, chorusSum, comm(), stream_.get()),
              chorusSuccess)
        << "the failure must come later, from the stream";
  }
  void TearDown() override {
    EXPECT_LT(SecondsSinceStart(), 10.0);
    EXPECT_GT(std::string(chorusGetLastError(comm())).size(), 0u);
    comms_.AbortAll();  // the ranks disagree on what ran: do not wait for them
  }

  chorusComm_t comm() const { return comms_[0]; }
  double SecondsSinceStart() const {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  }
  // Polls Query until the operation has ended (or 10 s passed).
  chorusResult_t QueryUntilDone() {
    chorusResult_t query = chorusStreamQuery(stream_.get());
    while (query == chorusInProgress && SecondsSinceStart() < 10) {
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
      query = chorusStreamQuery(stream_.get());
    }
    return query;
  }

  chorusConfig_t config_{};
  ThreadComms comms_;
  Stream stream_;
  std::vector<int32_t> data_ = std::vector<int32_t>(1024, 1);
  std::chrono::steady_clock::time_point start_;
};

TEST_F(FailedOperationTest, SynchronizeReturnsTheError) {
  const chorusResult_t synced = chorusStreamSynchronize(stream_.get());
  EXPECT_TRUE(synced == chorusTimeout || synced == chorusRemoteError) << "got " << Describe(synced, comm());
}

TEST_F(FailedOperationTest, QueryReturnsTheErrorOnceTheOperationEnded) {
  const chorusResult_t query = QueryUntilDone();
  EXPECT_TRUE(query == chorusTimeout || query == chorusRemoteError) << "got " << Describe(query, comm());
}

// chorus.h: Synchronize "returns the first failure's code"; a Query in
// between must not swallow it.
TEST_F(FailedOperationTest, QueryDoesNotConsumeTheErrorSynchronizeReturns) {
  const chorusResult_t query = QueryUntilDone();
  const chorusResult_t synced = chorusStreamSynchronize(stream_.get());
  EXPECT_NE(query, chorusSuccess);
  EXPECT_EQ(synced, query) << "Synchronize got " << Describe(synced, comm());
}

// With a NULL stream the result is in place when the call returns.
TEST(StreamsTest, NullStreamBlocksUntilDone) {
  constexpr int kRanks = 4;
  ThreadComms comms = ThreadComms::InitRank(kRanks);
  ASSERT_TRUE(comms.ok()) << comms.error();
  comms.Run([&](int rank, chorusComm_t comm) {
    for (int round = 0; round < 5; ++round) {
      std::vector<int32_t> data(100000 + round, rank + round);
      ASSERT_EQ(chorusAllReduce(data.data(), data.data(), data.size(), chorusInt32, chorusMax, comm, nullptr),
                chorusSuccess);
      size_t wrong = 0;
      for (int32_t value : data) wrong += value != kRanks - 1 + round;
      EXPECT_EQ(wrong, 0u) << "rank " << rank << " round " << round;
    }
  });
}

// chorusStreamDestroy without a Synchronize first still lets queued work finish.
TEST(StreamsTest, DestroyWaitsForPendingWork) {
  constexpr int kRanks = 2;
  ThreadComms comms = ThreadComms::InitRank(kRanks);
  ASSERT_TRUE(comms.ok()) << comms.error();
  comms.Run([&](int rank, chorusComm_t comm) {
    std::vector<uint32_t> data(1 << 18, static_cast<uint32_t>(rank + 1));
    chorusStream_t stream = nullptr;
    ASSERT_EQ(chorusStreamCreate(&stream), chorusSuccess);
    for (int i = 0; i < 4; ++i) {
      ASSERT_EQ(chorusAllReduce(data.data(), data.data(), data.size(), chorusUint32, chorusSum, comm, stream),
                chorusSuccess);
    }
    EXPECT_EQ(chorusStreamDestroy(stream), chorusSuccess);
    // (1+2) doubled three times: every allreduce ran before Destroy returned.
    size_t wrong = 0;
    for (uint32_t value : data) wrong += value != 24u;
    EXPECT_EQ(wrong, 0u) << "rank " << rank;
  });
}

// Host memory is chorusMemoryHost in every build: without CUDA, without a
// driver (as in CI), and with a GPU (the runtime knows pageable memory).
TEST(StreamsTest, PointerGetMemoryKindOfHostMemory) {
  std::vector<float> heap(16);
  int stack = 0;
  for (const void* pointer : {static_cast<const void*>(heap.data()), static_cast<const void*>(&stack),
                              static_cast<const void*>(nullptr)}) {
    chorusMemoryKind_t kind = chorusMemoryCudaDevice;
    ASSERT_EQ(chorusPointerGetMemoryKind(pointer, &kind), chorusSuccess);
    EXPECT_EQ(kind, chorusMemoryHost);
  }
  EXPECT_EQ(chorusPointerGetMemoryKind(heap.data(), nullptr), chorusInvalidArgument);
  EXPECT_NE(std::string(chorusGetLastError(nullptr)).find("kind is NULL"), std::string::npos);
}

}  // namespace
}  // namespace chorus_test
