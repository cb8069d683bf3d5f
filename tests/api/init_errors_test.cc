// Bad input at communicator creation (rank and size out of range, NULL
// pointers, a corrupt unique id, a bad config) is rejected with
// chorusInvalidArgument and a message from chorusGetLastError(NULL); and
// chorusCommAbort unblocks an operation that another thread is waiting in.
#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "tests/api/harness.h"

namespace chorus_test {
namespace {

std::string LastInitError() { return chorusGetLastError(nullptr); }

// Creation must fail before contacting anyone, so a 1-rank id is enough.
class InitErrorsTest : public testing::Test {
 protected:
  void SetUp() override { ASSERT_EQ(chorusGetUniqueId(&id_), chorusSuccess); }

  void ExpectInitRejected(int nranks, const chorusUniqueId& id, int rank, const char* what) {
    chorusComm_t comm = nullptr;
    chorusConfig_t config = MakeConfig(nullptr, 3000);  // a wrong guess fails, never hangs
    const chorusResult_t result = chorusCommInitRankConfig(&comm, nranks, id, rank, &config);
    EXPECT_EQ(result, chorusInvalidArgument) << what << ": " << chorusGetErrorString(result);
    EXPECT_FALSE(LastInitError().empty()) << what;
    if (result == chorusSuccess && comm != nullptr) (void)chorusCommDestroy(comm);
  }

  chorusUniqueId id_{};
};

TEST_F(InitErrorsTest, RanksAndSizesOutOfRange) {
  ExpectInitRejected(0, id_, 0, "nranks 0");
  ExpectInitRejected(-3, id_, 0, "nranks -3");
  ExpectInitRejected(2, id_, 2, "rank == nranks");
  ExpectInitRejected(2, id_, -1, "rank -1");
  ExpectInitRejected(1, id_, 5, "rank 5 of 1");
}

TEST_F(InitErrorsTest, NullOutputs) {
  EXPECT_EQ(chorusCommInitRank(nullptr, 1, id_, 0), chorusInvalidArgument);
  EXPECT_FALSE(LastInitError().empty());
  EXPECT_EQ(chorusGetUniqueId(nullptr), chorusInvalidArgument);
  EXPECT_EQ(chorusCommInitAll(nullptr, 2, nullptr), chorusInvalidArgument);
  chorusComm_t comms[2] = {nullptr, nullptr};
  EXPECT_EQ(chorusCommInitAll(comms, 0, nullptr), chorusInvalidArgument);
  EXPECT_EQ(chorusCommInitAll(comms, -1, nullptr), chorusInvalidArgument);
  EXPECT_EQ(comms[0], nullptr);
}

TEST_F(InitErrorsTest, CorruptUniqueId) {
  chorusUniqueId flipped_head = id_;
  for (int i = 0; i < 4; ++i) flipped_head.internal[i] = static_cast<char>(~flipped_head.internal[i]);
  ExpectInitRejected(1, flipped_head, 0, "first 4 bytes flipped");

  chorusUniqueId flipped_middle = id_;
  flipped_middle.internal[CHORUS_UNIQUE_ID_BYTES / 2] ^= 0x10;
  ExpectInitRejected(1, flipped_middle, 0, "one bit in the middle flipped");

  chorusUniqueId all_flipped = id_;
  for (char& byte : all_flipped.internal) byte = static_cast<char>(~byte);
  ExpectInitRejected(1, all_flipped, 0, "every byte flipped");

  chorusUniqueId zeros{};
  ExpectInitRejected(1, zeros, 0, "all zeros");
}

TEST_F(InitErrorsTest, ConfigWithBadMagic) {
  chorusConfig_t config = MakeConfig();
  config.magic = 0;
  chorusComm_t comm = nullptr;
  EXPECT_EQ(chorusCommInitRankConfig(&comm, 1, id_, 0, &config), chorusInvalidArgument);
  EXPECT_FALSE(LastInitError().empty());
}

TEST_F(InitErrorsTest, TheIdStillWorksAfterRejectedAttempts) {
  ExpectInitRejected(1, id_, 3, "rank 3 of 1");
  chorusComm_t comm = nullptr;
  ASSERT_EQ(chorusCommInitRank(&comm, 1, id_, 0), chorusSuccess) << LastInitError();
  int count = 0;
  EXPECT_EQ(chorusCommCount(comm, &count), chorusSuccess);
  EXPECT_EQ(count, 1);
  EXPECT_EQ(chorusCommDestroy(comm), chorusSuccess);
}

// Rank 1 never joins the allreduce; aborting rank 0's communicator from
// another thread must end rank 0's wait at once, long before its timeout.
TEST(AbortTest, AbortUnblocksAnOperationInAnotherThread) {
  chorusConfig_t config = MakeConfig(nullptr, /*timeout_ms=*/60000);
  ThreadComms comms = ThreadComms::InitRank(2, &config);
  ASSERT_TRUE(comms.ok()) << comms.error();
  chorusComm_t waiting = comms.Release(0);
  std::vector<int32_t> data(1 << 16, 1);
  chorusResult_t result = chorusSuccess;
  double seconds = 0;
  std::thread blocked([&] {
    const auto start = std::chrono::steady_clock::now();
    result = chorusAllReduce(data.data(), data.data(), data.size(), chorusInt32, chorusSum, waiting, nullptr);
    seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  EXPECT_EQ(chorusCommAbort(waiting), chorusSuccess);
  blocked.join();
  EXPECT_TRUE(result == chorusRemoteError || result == chorusInvalidUsage) << chorusGetErrorString(result);
  EXPECT_LT(seconds, 10.0);
  comms.AbortAll();  // rank 1 never ran the allreduce: do not wait for it
}

// After chorusCommAbort the handle is dead: every later call on it fails
// with chorusInvalidUsage, explains why, and writes nothing.
TEST(AbortTest, CallsOnAnAbortedCommAreInvalidUsage) {
  ThreadComms comms = ThreadComms::InitRank(1);
  ASSERT_TRUE(comms.ok()) << comms.error();
  chorusComm_t comm = comms.Release(0);
  ASSERT_EQ(chorusCommAbort(comm), chorusSuccess);
  std::vector<int32_t> send(16, 1);
  std::vector<int32_t> recv(16, -7);
  EXPECT_EQ(chorusAllReduce(send.data(), recv.data(), 16, chorusInt32, chorusSum, comm, nullptr), chorusInvalidUsage);
  EXPECT_FALSE(std::string(chorusGetLastError(comm)).empty());
  EXPECT_EQ(chorusBroadcast(send.data(), recv.data(), 16, chorusInt32, 0, comm, nullptr), chorusInvalidUsage);
  EXPECT_EQ(chorusSend(send.data(), 16, chorusInt32, 0, comm, nullptr), chorusInvalidUsage);
  EXPECT_EQ(recv, std::vector<int32_t>(16, -7));
  int count = -1;
  EXPECT_EQ(chorusCommCount(comm, &count), chorusInvalidUsage);
  EXPECT_EQ(count, -1);
}

}  // namespace
}  // namespace chorus_test
