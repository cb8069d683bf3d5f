// Paced receives (schedule.h rule 5): a parameter-server Reduce to rank 0
// folds rank 1's stream, then rank 2's, chunk by chunk. While rank 2 has not
// started, rank 0 must read no more than `pace_chunks` chunks of rank 1's
// stream; with pacing off it reads all of it. Counted at the endpoint: the
// receives the executor posts.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <thread>
#include <vector>

#include "algorithms/algorithm.h"
#include "core/executor.h"
#include "core/workspace.h"
#include "inproc_transport.h"

namespace chorus::testing {
namespace {

constexpr size_t kChunkBytes = 1024;
constexpr size_t kChunks = 16;
constexpr size_t kCount = kChunks * kChunkBytes / sizeof(int32_t);
constexpr int kRanks = 3;

// Counts the receives posted to each peer, then forwards them.
class CountingEndpoint : public Endpoint {
 public:
  explicit CountingEndpoint(Endpoint* inner) : inner_(inner) {}
  int peer() const override { return inner_->peer(); }
  Status PostSend(TransferRequest* request) override { return inner_->PostSend(request); }
  Status PostRecv(TransferRequest* request) override {
    posted_receives.fetch_add(1);
    return inner_->PostRecv(request);
  }
  bool combine_on_receive() const override { return inner_->combine_on_receive(); }

  std::atomic<size_t> posted_receives{0};

 private:
  Endpoint* inner_;
};

class CountingTransport : public BorrowedTransport {
 public:
  explicit CountingTransport(Transport* inner) : BorrowedTransport(inner) {
    for (int peer = 0; peer < kRanks; ++peer) {
      Endpoint* endpoint = inner->endpoint(peer);
      endpoints_.push_back(endpoint == nullptr ? nullptr : std::make_unique<CountingEndpoint>(endpoint));
    }
  }
  Endpoint* endpoint(int peer) override { return endpoints_[peer].get(); }
  size_t posted_from(int peer) const { return endpoints_[peer]->posted_receives.load(); }

 private:
  std::vector<std::unique_ptr<CountingEndpoint>> endpoints_;
};

// Receives rank 0 had posted from rank 1 while rank 2 was held back (for
// long enough that rank 0 had read everything it was allowed to), with the
// Reduce's result checked after rank 2 ran.
size_t ReceivesAheadOfTheSlowStream(size_t pace_chunks) {
  InprocFabric fabric(kRanks);
  CountingTransport root_transport(fabric.transport(0));
  std::vector<Schedule> schedules(kRanks);
  std::vector<std::vector<int32_t>> send(kRanks, std::vector<int32_t>(kCount));
  std::vector<int32_t> result(kCount, -1);
  for (int r = 0; r < kRanks; ++r) {
    CollectiveArgs args;
    args.coll = Collective::kReduce;
    args.count = kCount;
    args.dtype = chorusInt32;
    args.root = 0;
    args.nranks = kRanks;
    args.rank = r;
    EXPECT_TRUE(BuildSchedule(args, Algorithm::kParameterServer, &schedules[r]).ok());
    for (size_t i = 0; i < kCount; ++i) send[r][i] = static_cast<int32_t>(i * 3 + r * 1000);
  }
  const std::atomic<bool> abort{false};
  std::atomic<bool> release_rank2{false};
  std::vector<Status> results(kRanks);
  auto run = [&](int r, Transport* transport) {
    BoundSchedule bound;
    bound.schedule = &schedules[r];
    bound.send = reinterpret_cast<uint8_t*>(send[r].data());
    bound.recv = r == 0 ? reinterpret_cast<uint8_t*>(result.data()) : nullptr;
    bound.tag = 7;
    Workspace staging;
    ExecutorOptions options;
    options.chunk_bytes = kChunkBytes;
    options.pace_chunks = pace_chunks;
    options.staging = &staging;
    results[r] = ExecuteSchedules(transport, r, {bound}, options, abort, Deadline::AfterMs(20000));
    if (!results[r].ok()) transport->Shutdown();
  };
  std::thread root([&] { run(0, &root_transport); });
  std::thread rank1([&] { run(1, fabric.transport(1)); });
  std::thread rank2([&] {
    const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(20);
    while (!release_rank2.load() && std::chrono::steady_clock::now() < give_up) {
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    run(2, fabric.transport(2));
  });
  // Rank 1 sends at once and rank 0 posts what it may: wait until that has
  // stood still for 200 ms.
  size_t ahead = 0;
  for (int still = 0; still < 200; ++still) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
    const size_t now = root_transport.posted_from(1);
    if (now != ahead) still = 0;
    ahead = now;
  }
  release_rank2.store(true);
  root.join();
  rank1.join();
  rank2.join();
  for (int r = 0; r < kRanks; ++r) EXPECT_TRUE(results[r].ok()) << "rank " << r << ": " << results[r].message();
  size_t wrong = 0;
  for (size_t i = 0; i < kCount; ++i) wrong += result[i] != static_cast<int32_t>(i * 9 + 3000) ? 1 : 0;
  EXPECT_EQ(wrong, 0u) << "elements of the Reduce's result differ from the sum";
  EXPECT_EQ(root_transport.posted_from(1), kChunks);
  EXPECT_EQ(root_transport.posted_from(2), kChunks);
  return ahead;
}

TEST(ExecutorPacingTest, FanInReadsOnlyLookaheadChunksAheadOfTheSlowStream) {
  EXPECT_EQ(ReceivesAheadOfTheSlowStream(/*pace_chunks=*/2), 2u);
  EXPECT_EQ(ReceivesAheadOfTheSlowStream(/*pace_chunks=*/5), 5u);
}

TEST(ExecutorPacingTest, WithoutPacingTheFirstStreamIsReadToTheEnd) {
  EXPECT_EQ(ReceivesAheadOfTheSlowStream(/*pace_chunks=*/0), kChunks);
}

}  // namespace
}  // namespace chorus::testing
