// CHORUS_CHECK=1: deliberately mismatched programs (wrong count, datatype,
// op, root, collective, order, count 0, a group that differs in a later
// call or in length; blocking and on host streams) are each reported on
// every rank as chorusInvalidUsage naming both sides, none hangs, and the
// communicator stays usable; matched programs (collectives, groups,
// send/recv) give the same results as without the check. Ranks are threads;
// over shared memory (the board exchanges the summaries) and over TCP (the
// executor does).
#include <gtest/gtest.h>

#include <cstdlib>
#include <functional>
#include <string>
#include <vector>

#include "tests/api/harness.h"

namespace chorus_test {
namespace {

constexpr int kRanks = 3;
constexpr int kTimeoutMs = 20000;
constexpr size_t kCount = 1024;

struct Outcome {
  chorusResult_t result = chorusInternalError;
  std::string message;
};

class CallCheckTest : public testing::TestWithParam<const char*> {
 protected:
  void SetUp() override {
    setenv("CHORUS_CHECK", "1", 1);
    setenv("CHORUS_TRANSPORT", GetParam(), 1);
    comms_ = ThreadComms::InitRank(kRanks, &config_);
    ASSERT_TRUE(comms_.ok()) << comms_.error();
  }
  void TearDown() override {
    unsetenv("CHORUS_CHECK");
    unsetenv("CHORUS_TRANSPORT");
  }

  // Runs call(rank, comm) on every rank; what each returned, with its
  // communicator's last error.
  std::vector<Outcome> OnEveryRank(const std::function<chorusResult_t(int, chorusComm_t)>& call) {
    std::vector<Outcome> outcomes(kRanks);
    comms_.Run(
        [&](int rank, chorusComm_t comm) {
          outcomes[rank].result = call(rank, comm);
          outcomes[rank].message = chorusGetLastError(comm);
        },
        Millis(3 * kTimeoutMs));
    return outcomes;
  }

  // Every rank failed with chorusInvalidUsage and a message holding every
  // one of `parts`; then a matched allreduce still works everywhere.
  void ExpectReportedEverywhere(const std::vector<Outcome>& outcomes, const std::vector<std::string>& parts) {
    for (int rank = 0; rank < kRanks; ++rank) {
      EXPECT_EQ(outcomes[rank].result, chorusInvalidUsage) << "rank " << rank << ": " << outcomes[rank].message;
      for (const std::string& part : parts) {
        EXPECT_NE(outcomes[rank].message.find(part), std::string::npos)
            << "rank " << rank << " lacks '" << part << "': " << outcomes[rank].message;
      }
    }
    ExpectAllReduceWorks();
  }

  void ExpectAllReduceWorks() {
    std::vector<Outcome> outcomes = OnEveryRank([](int rank, chorusComm_t comm) {
      std::vector<int32_t> data(kCount, rank + 1);
      chorusResult_t result = chorusAllReduce(data.data(), data.data(), kCount, chorusInt32, chorusSum, comm, nullptr);
      for (int32_t value : data) {
        if (result == chorusSuccess && value != kRanks * (kRanks + 1) / 2) return chorusInternalError;
      }
      return result;
    });
    for (int rank = 0; rank < kRanks; ++rank) {
      EXPECT_EQ(outcomes[rank].result, chorusSuccess) << "rank " << rank << ": " << outcomes[rank].message;
    }
  }

  chorusConfig_t config_ = MakeConfig(nullptr, kTimeoutMs);
  ThreadComms comms_;
};

// ---- Matched programs ----

TEST_P(CallCheckTest, MatchedCollectivesGroupsAndSendRecvAreUnaffected) {
  std::vector<Outcome> outcomes = OnEveryRank([](int rank, chorusComm_t comm) {
    std::vector<float> data(kCount, 1.0f + rank);
    chorusResult_t result = chorusAllReduce(data.data(), data.data(), kCount, chorusFloat32, chorusAvg, comm, nullptr);
    if (result != chorusSuccess || data[7] != 2.0f) return result == chorusSuccess ? chorusInternalError : result;
    std::vector<int64_t> root_data(kCount, rank == 2 ? 42 : -1);
    result = chorusBroadcast(root_data.data(), root_data.data(), kCount, chorusInt64, 2, comm, nullptr);
    if (result != chorusSuccess || root_data[kCount - 1] != 42) return result == chorusSuccess ? chorusInternalError : result;
    // A group of three collectives, and one count-0 call.
    std::vector<int32_t> a(kCount, rank), b(kCount, 1), gathered(kCount * kRanks, -1);
    chorusGroupStart();
    chorusAllReduce(a.data(), a.data(), kCount, chorusInt32, chorusMax, comm, nullptr);
    chorusAllReduce(b.data(), b.data(), kCount, chorusInt32, chorusSum, comm, nullptr);
    chorusAllGather(a.data(), gathered.data(), 4, chorusInt32, comm, nullptr);
    result = chorusGroupEnd();
    if (result != chorusSuccess) return result;
    if (a[0] != kRanks - 1 || b[0] != kRanks) return chorusInternalError;
    result = chorusAllReduce(nullptr, nullptr, 0, chorusInt32, chorusSum, comm, nullptr);
    if (result != chorusSuccess) return result;
    // Send/recv around the ring (not checked, and not disturbed).
    int out = rank, in = -1;
    chorusGroupStart();
    chorusSend(&out, 1, chorusInt32, (rank + 1) % kRanks, comm, nullptr);
    chorusRecv(&in, 1, chorusInt32, (rank + kRanks - 1) % kRanks, comm, nullptr);
    result = chorusGroupEnd();
    if (result != chorusSuccess) return result;
    return in == (rank + kRanks - 1) % kRanks ? chorusSuccess : chorusInternalError;
  });
  for (int rank = 0; rank < kRanks; ++rank) {
    EXPECT_EQ(outcomes[rank].result, chorusSuccess) << "rank " << rank << ": " << outcomes[rank].message;
  }
}

// ---- Mismatched single calls ----

TEST_P(CallCheckTest, WrongCountIsReportedOnEveryRank) {
  ExpectReportedEverywhere(OnEveryRank([](int rank, chorusComm_t comm) {
                             std::vector<float> data(kCount, 1.0f);
                             const size_t count = rank == 1 ? 512 : kCount;
                             return chorusAllReduce(data.data(), data.data(), count, chorusFloat32, chorusSum, comm,
                                                    nullptr);
                           }),
                           {"rank 1 called AllReduce(count=512, float32, sum) as call #1; rank 0 called "
                            "AllReduce(count=1024, float32, sum)"});
}

TEST_P(CallCheckTest, WrongDatatypeIsReportedOnEveryRank) {
  ExpectReportedEverywhere(OnEveryRank([](int rank, chorusComm_t comm) {
                             std::vector<int32_t> data(kCount, 1);
                             const chorusDataType_t type = rank == 2 ? chorusInt32 : chorusFloat32;
                             return chorusAllReduce(data.data(), data.data(), kCount, type, chorusSum, comm, nullptr);
                           }),
                           {"rank 2 called AllReduce(count=1024, int32, sum) as call #1; rank 0 called "
                            "AllReduce(count=1024, float32, sum)"});
}

TEST_P(CallCheckTest, WrongOpIsReportedOnEveryRank) {
  ExpectReportedEverywhere(OnEveryRank([](int rank, chorusComm_t comm) {
                             std::vector<float> data(kCount, 1.0f);
                             const chorusRedOp_t op = rank == 0 ? chorusMax : chorusSum;
                             return chorusAllReduce(data.data(), data.data(), kCount, chorusFloat32, op, comm, nullptr);
                           }),
                           // Rank 0 is the odd one out: both others differ from it.
                           {"rank 1 called AllReduce(count=1024, float32, sum) as call #1; rank 0 called "
                            "AllReduce(count=1024, float32, max) (ranks 1, 2 differ from rank 0)"});
}

TEST_P(CallCheckTest, WrongRootIsReportedOnEveryRank) {
  ExpectReportedEverywhere(OnEveryRank([](int rank, chorusComm_t comm) {
                             std::vector<uint8_t> data(kCount, 1);
                             const int root = rank == 2 ? 1 : 0;
                             return chorusBroadcast(data.data(), data.data(), kCount, chorusUint8, root, comm, nullptr);
                           }),
                           {"rank 2 called Broadcast(count=1024, uint8, root 1) as call #1; rank 0 called "
                            "Broadcast(count=1024, uint8, root 0)"});
}

TEST_P(CallCheckTest, DifferentCollectivesAreReportedOnEveryRank) {
  ExpectReportedEverywhere(OnEveryRank([](int rank, chorusComm_t comm) {
                             std::vector<float> data(kCount, 1.0f);
                             if (rank == 1) {
                               return chorusBroadcast(data.data(), data.data(), kCount, chorusUint8, 0, comm, nullptr);
                             }
                             return chorusAllReduce(data.data(), data.data(), kCount, chorusFloat32, chorusSum, comm,
                                                    nullptr);
                           }),
                           {"rank 1 called Broadcast(count=1024, uint8, root 0) as call #1; rank 0 called "
                            "AllReduce(count=1024, float32, sum)"});
}

TEST_P(CallCheckTest, CallsInADifferentOrderAreEachReported) {
  std::vector<Outcome> first(kRanks), second(kRanks);
  OnEveryRank([&](int rank, chorusComm_t comm) {
    std::vector<float> data(kCount, 1.0f);
    auto all_reduce = [&] {
      return chorusAllReduce(data.data(), data.data(), kCount, chorusFloat32, chorusSum, comm, nullptr);
    };
    auto broadcast = [&] { return chorusBroadcast(data.data(), data.data(), 16, chorusFloat32, 0, comm, nullptr); };
    first[rank].result = rank == 2 ? broadcast() : all_reduce();
    first[rank].message = chorusGetLastError(comm);
    second[rank].result = rank == 2 ? all_reduce() : broadcast();
    second[rank].message = chorusGetLastError(comm);
    return chorusSuccess;
  });
  ExpectReportedEverywhere(first, {"rank 2 called Broadcast(count=16, float32, root 0) as call #1; rank 0 called "
                                   "AllReduce(count=1024, float32, sum)"});
  ExpectReportedEverywhere(second, {"rank 2 called AllReduce(count=1024, float32, sum) as call #2; rank 0 called "
                                    "Broadcast(count=16, float32, root 0)"});
}

TEST_P(CallCheckTest, ACountOfZeroMeetsTheOthersCall) {
  ExpectReportedEverywhere(OnEveryRank([](int rank, chorusComm_t comm) {
                             std::vector<float> data(kCount, 1.0f);
                             const size_t count = rank == 1 ? 0 : kCount;
                             return chorusAllReduce(data.data(), data.data(), count, chorusFloat32, chorusSum, comm,
                                                    nullptr);
                           }),
                           {"rank 1 called AllReduce(count=0, float32, sum) as call #1"});
}

// ---- Groups ----

TEST_P(CallCheckTest, AGroupDifferingInALaterCallNamesThatCall) {
  ExpectReportedEverywhere(
      OnEveryRank([](int rank, chorusComm_t comm) {
        std::vector<float> a(kCount, 1.0f), b(kCount, 1.0f);
        chorusGroupStart();
        chorusAllReduce(a.data(), a.data(), kCount, chorusFloat32, chorusSum, comm, nullptr);
        chorusReduce(b.data(), b.data(), kCount, chorusFloat32, chorusSum, rank == 1 ? 2 : 0, comm, nullptr);
        return chorusGroupEnd();
      }),
      {"rank 1 called Reduce(count=1024, float32, sum, root 2) (2 of a group of 2) as call #2; rank 0 called "
       "Reduce(count=1024, float32, sum, root 0) (2 of a group of 2)"});
}

TEST_P(CallCheckTest, AShorterGroupIsReported) {
  ExpectReportedEverywhere(OnEveryRank([](int rank, chorusComm_t comm) {
                             std::vector<float> a(kCount, 1.0f), b(kCount, 1.0f);
                             chorusGroupStart();
                             chorusAllReduce(a.data(), a.data(), kCount, chorusFloat32, chorusSum, comm, nullptr);
                             if (rank != 2) {
                               chorusAllReduce(b.data(), b.data(), kCount, chorusFloat32, chorusSum, comm, nullptr);
                             }
                             return chorusGroupEnd();
                           }),
                           {"rank 2 called nothing more (its group holds 1 collective) as call #2; rank 0 called "
                            "AllReduce(count=1024, float32, sum) (2 of a group of 2)"});
}

// ---- Host streams ----

TEST_P(CallCheckTest, AMismatchOnAHostStreamIsReportedAtSynchronize) {
  ExpectReportedEverywhere(OnEveryRank([](int rank, chorusComm_t comm) {
                             chorusStream_t stream = nullptr;
                             if (chorusStreamCreate(&stream) != chorusSuccess) return chorusInternalError;
                             std::vector<double> data(kCount, 1.0);
                             const size_t count = rank == 0 ? kCount - 1 : kCount;
                             chorusResult_t result =
                                 chorusAllReduce(data.data(), data.data(), count, chorusFloat64, chorusSum, comm, stream);
                             if (result == chorusSuccess) result = chorusStreamSynchronize(stream);
                             chorusStreamDestroy(stream);
                             return result;
                           }),
                           {"rank 1 called AllReduce(count=1024, float64, sum) as call #1; rank 0 called "
                            "AllReduce(count=1023, float64, sum)"});
}

INSTANTIATE_TEST_SUITE_P(Transports, CallCheckTest, testing::Values("auto", "tcp"),
                         [](const testing::TestParamInfo<const char*>& info) {
                           return std::string(info.param) == "auto" ? std::string("SharedMemory")
                                                                    : std::string("Tcp");
                         });

// ---- Outside the fixture ----

// Ranks as processes (the board between processes): every rank reports the
// mismatch, then a matched call works.
TEST(CallCheckProcessTest, AMismatchBetweenProcessesIsReportedOnEveryRank) {
  setenv("CHORUS_CHECK", "1", 1);
  const RendezvousProcess rendezvous;  // this process stays single-threaded for ForkRanks
  ASSERT_TRUE(rendezvous.ok()) << rendezvous.error();
  const chorusUniqueId id = rendezvous.id();
  const std::vector<ChildOutcome> outcomes = ForkRanks(
      2,
      [&](int rank) {
        chorusConfig_t config = MakeConfig(nullptr, kTimeoutMs);
        chorusComm_t comm = nullptr;
        if (chorusCommInitRankConfig(&comm, 2, id, rank, &config) != chorusSuccess) return 10;
        std::vector<float> data(kCount, 1.0f);
        const chorusRedOp_t op = rank == 1 ? chorusMin : chorusSum;
        if (chorusAllReduce(data.data(), data.data(), kCount, chorusFloat32, op, comm, nullptr) != chorusInvalidUsage) {
          return 11;
        }
        const std::string message = chorusGetLastError(comm);
        if (message.find("rank 1 called AllReduce(count=1024, float32, min) as call #1; rank 0 called "
                         "AllReduce(count=1024, float32, sum)") == std::string::npos) {
          return 12;
        }
        if (chorusAllReduce(data.data(), data.data(), kCount, chorusFloat32, chorusSum, comm, nullptr) != chorusSuccess ||
            data[0] != 2.0f) {
          return 13;
        }
        chorusCommDestroy(comm);
        return 0;
      },
      Millis(3 * kTimeoutMs));
  unsetenv("CHORUS_CHECK");
  for (const ChildOutcome& outcome : outcomes) {
    EXPECT_TRUE(outcome.exited && outcome.exit_code == 0) << Describe(outcome);
  }
}

// A rank that never makes the call: the others end at their deadline
// (naming the check), never hang.
TEST(CallCheckDeadlineTest, ARankThatNeverCallsEndsTheOthersAtTheDeadline) {
  setenv("CHORUS_CHECK", "1", 1);
  const chorusConfig_t config = MakeConfig(nullptr, 1000);
  ThreadComms comms = ThreadComms::InitRank(2, &config);
  ASSERT_TRUE(comms.ok()) << comms.error();
  comms.Run([](int rank, chorusComm_t comm) {
    if (rank == 1) return;
    float value = 1.0f;
    const chorusResult_t result = chorusAllReduce(&value, &value, 1, chorusFloat32, chorusSum, comm, nullptr);
    EXPECT_TRUE(result == chorusTimeout || result == chorusRemoteError) << Describe(result, comm);
    EXPECT_NE(std::string(chorusGetLastError(comm)).find("CHORUS_CHECK: rank 0 sharing call #1"), std::string::npos)
        << chorusGetLastError(comm);
  });
  unsetenv("CHORUS_CHECK");
}

TEST(CallCheckSettingTest, ABadValueFailsCreationNamingTheVariable) {
  setenv("CHORUS_CHECK", "yes", 1);
  chorusUniqueId id;
  const chorusResult_t made = chorusGetUniqueId(&id);
  unsetenv("CHORUS_CHECK");
  EXPECT_EQ(made, chorusInvalidArgument);
  EXPECT_NE(std::string(chorusGetLastError(nullptr)).find("CHORUS_CHECK must be 0 or 1"), std::string::npos)
      << chorusGetLastError(nullptr);
}

}  // namespace
}  // namespace chorus_test
