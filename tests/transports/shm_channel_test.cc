// One shared-memory ring driven directly: ShmOutbound writes, ShmInbound
// reads, both in this thread over a ring in local memory, so the test sees
// which bytes of the ring the sender wrote.
#include "transports/shm/shm_channel.h"

#include <unistd.h>

#include <cstring>
#include <memory>
#include <vector>

#include <gtest/gtest.h>

#include "tests/transports/shm_test_util.h"

namespace chorus {
namespace shm {
namespace {

constexpr uint8_t kUntouched = 0xab;
constexpr size_t kRingBytes = 1 << 20;

struct Ring {
  Ring() : data(kRingBytes, kUntouched) {
    std::memset(static_cast<void*>(&control), 0, sizeof(control));
    std::memset(static_cast<void*>(&sender), 0, sizeof(sender));
    std::memset(static_cast<void*>(&receiver), 0, sizeof(receiver));
    outbound = std::make_unique<ShmOutbound>(&control, data.data(), kRingBytes, &receiver, SIZE_MAX, nullptr);
    inbound = std::make_unique<ShmInbound>(&control, data.data(), kRingBytes, &sender, PullMethod::kNone, getpid(),
                                           "rank 0", &stats, nullptr, nullptr);
  }
  // The offset past the last byte the sender ever wrote.
  size_t WrittenSpan() const {
    size_t end = kRingBytes;
    while (end > 0 && data[end - 1] == kUntouched) --end;
    return end;
  }

  RingControl control;
  SegmentHeader sender, receiver;
  std::vector<uint8_t> data;
  ShmStats stats;
  std::unique_ptr<ShmOutbound> outbound;
  std::unique_ptr<ShmInbound> inbound;
};

using shm_test::FillPattern;
using shm_test::Request;

// Sends `count` messages of `bytes`, with `lag` of them in the ring before
// the receiver takes the oldest; checks each on arrival.
void Stream(Ring* ring, size_t bytes, int count, int lag) {
  std::vector<std::vector<uint8_t>> sent(count), received(count);
  std::vector<TransferRequest> sends(count), recvs(count);
  int next_recv = 0;
  for (int i = 0; i < count + lag; ++i) {
    if (i < count) {
      sent[i].resize(bytes);
      FillPattern(&sent[i], 0, 1, static_cast<size_t>(i));
      sends[i] = Request(sent[i].data(), bytes, static_cast<uint64_t>(i));
      ring->outbound->Push(&sends[i]);
      bool progressed = false;
      ring->outbound->Pump(&progressed);
    }
    if (i < lag) continue;
    received[next_recv].assign(bytes, 0);
    recvs[next_recv] = Request(received[next_recv].data(), bytes, static_cast<uint64_t>(next_recv));
    ring->inbound->Push(&recvs[next_recv]);
    for (int round = 0; round < 100 && !recvs[next_recv].done; ++round) {
      bool progressed = false;
      ring->outbound->Pump(&progressed);
      ASSERT_TRUE(ring->inbound->Pump(&progressed).ok());
    }
    ASSERT_TRUE(recvs[next_recv].done) << "message " << next_recv;
    ASSERT_EQ(received[next_recv], sent[next_recv]) << "message " << next_recv;
    ++next_recv;
  }
  EXPECT_EQ(next_recv, count);
  for (const TransferRequest& send : sends) EXPECT_TRUE(send.done);
}

TEST(ShmChannelTest, DrainedRingRestartsAtItsStart) {
  // 1,000 messages of 4 KiB, each received before the next is sent: 4 MiB
  // in all, four times the ring, but the sender's writes stay within the
  // rewind point, one check interval and two records.
  Ring ring;
  Stream(&ring, 4096, 1000, 0);
  const size_t record = sizeof(RecordHeader) + 4096;
  EXPECT_LE(ring.WrittenSpan(), kRewindBytes + kRewindCheckBytes + 2 * record);
  EXPECT_GE(ring.WrittenSpan(), kRewindBytes);
}

TEST(ShmChannelTest, MessagesInFlightTakeTheRingTheyNeed) {
  // 100 messages ahead of the receiver: the sender restarts at offset 0
  // once the receiver has read past the first record of the lap, so it
  // walks about what is in flight plus the rewind point.
  const size_t record = sizeof(RecordHeader) + 4096;
  Ring ring;
  Stream(&ring, 4096, 2000, 100);
  EXPECT_GE(ring.WrittenSpan(), 100 * record);
  EXPECT_LE(ring.WrittenSpan(), 100 * record + kRewindBytes + kRewindCheckBytes + 2 * record);
}

TEST(ShmChannelTest, FullRingStillWrapsInOrder) {
  // 240 of the 252 records the ring holds in flight: they need nearly all
  // of it, and arrive intact and in order across its end.
  const size_t record = sizeof(RecordHeader) + 4096;
  Ring ring;
  Stream(&ring, 4096, 2000, 240);
  EXPECT_GE(ring.WrittenSpan(), 240 * record);
}

TEST(ShmChannelTest, FewInFlightKeepEveryMessage) {
  // Sizes that do not divide the ring, a few in flight.
  for (int lag : {1, 2, 5}) {
    Ring ring;
    Stream(&ring, 3000 + 64 * lag, 1500, lag);
  }
}

}  // namespace
}  // namespace shm
}  // namespace chorus
