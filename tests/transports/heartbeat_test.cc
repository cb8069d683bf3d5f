// The heartbeat (bootstrap/heartbeat.h) on loopback: ranks that beat are
// never reported; a rank that stops beating is, after a few periods, once,
// by name; a rank that says goodbye is not; datagrams without the secret
// (or replayed) keep no rank alive.
#include "bootstrap/heartbeat.h"

#include <gtest/gtest.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "transports/socket/socket_address.h"

namespace chorus {
namespace {

constexpr int kPeriodMs = 100;

struct Reports {
  std::mutex mutex;
  std::vector<std::string> messages;
  std::atomic<int> count{0};
  std::function<void(const Status&)> Sink() {
    return [this](const Status& status) {
      std::lock_guard<std::mutex> lock(mutex);
      messages.push_back(status.message());
      ++count;
    };
  }
};

std::vector<std::unique_ptr<Heartbeat>> OpenRanks(int nranks, const uint8_t secret[16]) {
  std::vector<std::unique_ptr<Heartbeat>> ranks(nranks);
  for (int rank = 0; rank < nranks; ++rank) {
    EXPECT_TRUE(Heartbeat::Open("127.0.0.1:0", rank, nranks, secret, kPeriodMs, &ranks[rank]).ok());
  }
  return ranks;
}

std::vector<std::string> AddressesOf(const std::vector<std::unique_ptr<Heartbeat>>& ranks) {
  std::vector<std::string> addresses;
  for (const auto& rank : ranks) addresses.push_back(rank->address());
  return addresses;
}

const uint8_t kSecret[16] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16};

TEST(HeartbeatTest, BeatingRanksAreNeverReported) {
  auto ranks = OpenRanks(3, kSecret);
  Reports reports;
  for (auto& rank : ranks) ASSERT_TRUE(rank->Start(AddressesOf(ranks), reports.Sink()).ok());
  std::this_thread::sleep_for(std::chrono::milliseconds(20 * kPeriodMs));
  EXPECT_EQ(reports.count.load(), 0) << (reports.messages.empty() ? "" : reports.messages[0]);
}

TEST(HeartbeatTest, ARankThatStopsBeatingIsReportedOnceByName) {
  auto ranks = OpenRanks(3, kSecret);
  Reports reports;
  // Rank 2 never starts: as a stopped process, it sends nothing. Silence
  // counts from each rank's Start, so the clock starts before them.
  const auto start = std::chrono::steady_clock::now();
  for (int rank = 0; rank < 2; ++rank) ASSERT_TRUE(ranks[rank]->Start(AddressesOf(ranks), reports.Sink()).ok());
  while (reports.count.load() < 2 && std::chrono::steady_clock::now() - start < std::chrono::seconds(20)) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  ASSERT_EQ(reports.count.load(), 2);
  // Not before kSilentPeriods periods.
  EXPECT_GE(std::chrono::steady_clock::now() - start, std::chrono::milliseconds(Heartbeat::kSilentPeriods * kPeriodMs));
  std::this_thread::sleep_for(std::chrono::milliseconds(10 * kPeriodMs));
  EXPECT_EQ(reports.count.load(), 2) << "reported once per rank";
  for (const std::string& message : reports.messages) {
    EXPECT_NE(message.find("rank 2 sent no heartbeat"), std::string::npos) << message;
    EXPECT_NE(message.find("CHORUS_HEARTBEAT_MS=100"), std::string::npos) << message;
  }
}

TEST(HeartbeatTest, ARankThatSaysGoodbyeIsNotReported) {
  auto ranks = OpenRanks(2, kSecret);
  Reports reports;
  for (auto& rank : ranks) ASSERT_TRUE(rank->Start(AddressesOf(ranks), reports.Sink()).ok());
  std::this_thread::sleep_for(std::chrono::milliseconds(3 * kPeriodMs));
  ranks[1].reset();  // its communicator ends
  std::this_thread::sleep_for(std::chrono::milliseconds(10 * kPeriodMs));
  EXPECT_EQ(reports.count.load(), 0) << (reports.messages.empty() ? "" : reports.messages[0]);
}

// A stranger (another secret) beating for rank 1 keeps it no more alive
// than silence does.
TEST(HeartbeatTest, DatagramsWithoutTheSecretKeepNoRankAlive) {
  auto ranks = OpenRanks(2, kSecret);
  uint8_t other_secret[16] = {};
  std::unique_ptr<Heartbeat> impostor;
  ASSERT_TRUE(Heartbeat::Open("127.0.0.1:0", 1, 2, other_secret, kPeriodMs / 5, &impostor).ok());
  Reports reports, ignored;
  ASSERT_TRUE(ranks[0]->Start(AddressesOf(ranks), reports.Sink()).ok());
  // The impostor beats to rank 0 five times per period.
  ASSERT_TRUE(impostor->Start({ranks[0]->address(), impostor->address()}, ignored.Sink()).ok());
  const auto start = std::chrono::steady_clock::now();
  while (reports.count.load() == 0 && std::chrono::steady_clock::now() - start < std::chrono::seconds(20)) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  ASSERT_EQ(reports.count.load(), 1);
  EXPECT_NE(reports.messages[0].find("rank 1 sent no heartbeat"), std::string::npos) << reports.messages[0];
}

TEST(HeartbeatTest, RejectsBadArguments) {
  std::unique_ptr<Heartbeat> heartbeat;
  EXPECT_EQ(Heartbeat::Open("127.0.0.1:0", 0, 2, kSecret, 0, &heartbeat).code(), chorusInvalidArgument);
  ASSERT_TRUE(Heartbeat::Open("127.0.0.1:0", 0, 2, kSecret, kPeriodMs, &heartbeat).ok());
  Reports reports;
  EXPECT_EQ(heartbeat->Start({heartbeat->address()}, reports.Sink()).code(), chorusInvalidArgument);
}

}  // namespace
}  // namespace chorus
