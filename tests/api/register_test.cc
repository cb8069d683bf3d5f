// chorusCommRegister / chorusCommDeregister through the public API:
// collectives and point-to-point on registered buffers (whole, sliced,
// partly covered) give exactly the results they give unregistered, and bad
// handles and ranges are refused with a clear message. Over ibverbs (the
// soft-RoCE stage of ./test.sh) the same runs move registered buffers by
// direct RDMA writes.
#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "tests/api/harness.h"

namespace chorus_test {
namespace {

// Past the ibverbs transport's 64 KiB direct threshold, chunked and odd.
constexpr size_t kCount = (1 << 20) + 3;

TEST(RegisterTest, CollectivesAndPointToPointOnRegisteredBuffersGiveExactResults) {
  constexpr int kRanks = 3;
  ThreadComms comms = ThreadComms::InitRank(kRanks);
  ASSERT_TRUE(comms.ok()) << comms.error();
  comms.Run([&](int rank, chorusComm_t comm) {
    std::vector<int32_t> send(kCount), recv(kCount * kRanks, -1), half(kCount, -1);
    void* send_handle = nullptr;
    void* recv_handle = nullptr;
    void* half_handle = nullptr;
    ASSERT_EQ(chorusCommRegister(comm, send.data(), send.size() * sizeof(int32_t), &send_handle), chorusSuccess)
        << chorusGetLastError(comm);
    ASSERT_EQ(chorusCommRegister(comm, recv.data(), recv.size() * sizeof(int32_t), &recv_handle), chorusSuccess)
        << chorusGetLastError(comm);
    // Only the first half of `half` is registered: operations on it as a
    // whole go as unregistered ones do.
    ASSERT_EQ(chorusCommRegister(comm, half.data(), half.size() / 2 * sizeof(int32_t), &half_handle), chorusSuccess)
        << chorusGetLastError(comm);
    EXPECT_NE(send_handle, recv_handle);
    for (int round = 0; round < 3; ++round) {
      for (size_t i = 0; i < kCount; ++i) send[i] = static_cast<int32_t>((rank + 1) * (i % 1000) + round);
      // Out of place, between two registrations.
      ASSERT_EQ(chorusAllReduce(send.data(), recv.data(), kCount, chorusInt32, chorusSum, comm, nullptr), chorusSuccess)
          << chorusGetLastError(comm);
      for (size_t i = 0; i < kCount; ++i) {
        ASSERT_EQ(recv[i], static_cast<int32_t>(6 * (i % 1000) + 3 * round)) << "allreduce element " << i;
      }
      // In place on a slice of a registration.
      ASSERT_EQ(chorusAllReduce(recv.data() + 1, recv.data() + 1, kCount - 1, chorusInt32, chorusMax, comm, nullptr),
                chorusSuccess)
          << chorusGetLastError(comm);
      ASSERT_EQ(recv[1], static_cast<int32_t>(6 + 3 * round));
      ASSERT_EQ(chorusAllGather(send.data(), recv.data(), kCount, chorusInt32, comm, nullptr), chorusSuccess)
          << chorusGetLastError(comm);
      for (int from = 0; from < kRanks; ++from) {
        for (size_t i = 0; i < kCount; i += 997) {
          ASSERT_EQ(recv[from * kCount + i], static_cast<int32_t>((from + 1) * (i % 1000) + round))
              << "allgather block " << from << " element " << i;
        }
      }
      // A ring of sends: registered sender, partly registered receiver.
      ASSERT_EQ(chorusGroupStart(), chorusSuccess);
      ASSERT_EQ(chorusSend(send.data(), kCount, chorusInt32, (rank + 1) % kRanks, comm, nullptr), chorusSuccess);
      ASSERT_EQ(chorusRecv(half.data(), kCount, chorusInt32, (rank + kRanks - 1) % kRanks, comm, nullptr),
                chorusSuccess);
      ASSERT_EQ(chorusGroupEnd(), chorusSuccess) << chorusGetLastError(comm);
      const int from = (rank + kRanks - 1) % kRanks;
      for (size_t i = 0; i < kCount; ++i) {
        ASSERT_EQ(half[i], static_cast<int32_t>((from + 1) * (i % 1000) + round)) << "received element " << i;
      }
      ASSERT_EQ(chorusBroadcast(send.data(), recv.data(), kCount, chorusInt32, round % kRanks, comm, nullptr),
                chorusSuccess)
          << chorusGetLastError(comm);
      for (size_t i = 0; i < kCount; i += 101) {
        ASSERT_EQ(recv[i], static_cast<int32_t>((round % kRanks + 1) * (i % 1000) + round)) << "broadcast " << i;
      }
    }
    EXPECT_EQ(chorusCommDeregister(comm, half_handle), chorusSuccess) << chorusGetLastError(comm);
    EXPECT_EQ(chorusCommDeregister(comm, recv_handle), chorusSuccess) << chorusGetLastError(comm);
    // Deregistered buffers are plain buffers again.
    ASSERT_EQ(chorusAllReduce(send.data(), recv.data(), kCount, chorusInt32, chorusSum, comm, nullptr), chorusSuccess)
        << chorusGetLastError(comm);
    ASSERT_EQ(recv[kCount - 1], static_cast<int32_t>(6 * ((kCount - 1) % 1000) + 6));
    EXPECT_EQ(chorusCommDeregister(comm, send_handle), chorusSuccess) << chorusGetLastError(comm);
  });
}

void ExpectRefused(chorusResult_t result, chorusComm_t comm, const std::string& call, const std::string& reason) {
  EXPECT_EQ(result, chorusInvalidArgument) << call;
  const std::string message = chorusGetLastError(comm);
  EXPECT_NE(message.find(call), std::string::npos) << message;
  EXPECT_NE(message.find(reason), std::string::npos) << message;
}

TEST(RegisterTest, BadArgumentsAndHandlesAreRefusedAndLeaveTheHandleAlone) {
  ThreadComms comms = ThreadComms::InitRank(2);
  ASSERT_TRUE(comms.ok()) << comms.error();
  std::vector<float> buffer(64);
  void* const untouched = &buffer;
  void* handle = untouched;
  EXPECT_EQ(chorusCommRegister(nullptr, buffer.data(), 256, &handle), chorusInvalidArgument);
  ExpectRefused(chorusCommRegister(comms[0], nullptr, 256, &handle), comms[0], "chorusCommRegister",
                "buffer is NULL");
  ExpectRefused(chorusCommRegister(comms[0], buffer.data(), 0, &handle), comms[0], "chorusCommRegister",
                "size is 0");
  ExpectRefused(chorusCommRegister(comms[0], buffer.data(), 256, nullptr), comms[0], "chorusCommRegister",
                "handle is NULL");
  EXPECT_EQ(handle, untouched);
  ExpectRefused(chorusCommDeregister(comms[0], nullptr), comms[0], "chorusCommDeregister", "handle is NULL");
  ExpectRefused(chorusCommDeregister(comms[0], untouched), comms[0], "chorusCommDeregister",
                "no registration of this communicator");
  // One communicator's handle is not another's; a handle goes once.
  ASSERT_EQ(chorusCommRegister(comms[0], buffer.data(), 256, &handle), chorusSuccess) << chorusGetLastError(comms[0]);
  ExpectRefused(chorusCommDeregister(comms[1], handle), comms[1], "chorusCommDeregister",
                "no registration of this communicator");
  EXPECT_EQ(chorusCommDeregister(comms[0], handle), chorusSuccess);
  ExpectRefused(chorusCommDeregister(comms[0], handle), comms[0], "chorusCommDeregister", "deregistered already?");
  EXPECT_EQ(chorusCommDeregister(nullptr, handle), chorusInvalidArgument);
}

TEST(RegisterTest, RegistrationsLeftAtDestroyAreReleasedWithTheCommunicator) {
  std::vector<double> buffer(1 << 16);
  {
    ThreadComms comms = ThreadComms::InitRank(2);
    ASSERT_TRUE(comms.ok()) << comms.error();
    comms.Run([&](int rank, chorusComm_t comm) {
      void* handle = nullptr;
      ASSERT_EQ(chorusCommRegister(comm, buffer.data() + rank * 1024, 1024 * sizeof(double), &handle), chorusSuccess);
      ASSERT_EQ(chorusAllReduce(buffer.data() + rank * 1024, buffer.data() + rank * 1024, 1024, chorusFloat64,
                                chorusSum, comm, nullptr),
                chorusSuccess);
    });
  }  // destroyed with their registrations
  EXPECT_EQ(buffer[0], 0.0);
}

}  // namespace
}  // namespace chorus_test
