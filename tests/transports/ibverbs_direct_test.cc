// Registered buffers over IbTransport on a real RDMA device: a receive into
// registered memory offers its buffer and the sender writes it directly; a
// send posted first announces itself and goes direct or by slot as the
// receive answers; mismatches are found by either side. Ranks as threads;
// every test skips where there is no device or no libibverbs.
#include <chrono>
#include <cstdint>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "chorus_build_config.h"
#if CHORUS_HAVE_IBVERBS
#include "tests/transports/ib_test_util.h"
#endif

namespace chorus {
namespace {

#if CHORUS_HAVE_IBVERBS

using ib_test::ConnectedMesh;
using ib_test::WaitAll;
using transport_test::DestroyTogether;
using transport_test::ForEachRank;
using transport_test::Pattern;

// One rank's messages of `sizes`: message k has tag 100 + k; rank 0's
// buffers hold the pattern it sends rank 1, rank 1's are filled with 0xEE.
struct Messages {
  Messages(int rank, const std::vector<size_t>& sizes) : requests(sizes.size()) {
    for (size_t k = 0; k < sizes.size(); ++k) {
      buffers.emplace_back(sizes[k]);
      for (size_t i = 0; i < sizes[k]; ++i) buffers[k][i] = rank == 0 ? Pattern(0, 1, i + k) : 0xEE;
      requests[k].buffer = buffers[k].data();
      requests[k].bytes = sizes[k];
      requests[k].tag = 100 + k;
    }
  }

  // Registers message k's buffer (nothing to register at 0 bytes).
  Status Register(Transport* transport, size_t k) {
    TransferRequest& request = requests[k];
    if (request.bytes == 0) return Status::Ok();
    const Status status = transport->RegisterMemory(request.buffer, request.bytes, MemoryKind::kHost, &request.memory);
    if (status.ok()) handles.push_back(request.memory);
    return status;
  }

  void Deregister(Transport* transport) {
    for (const MemoryHandle& handle : handles) transport->DeregisterMemory(handle);
    handles.clear();
  }

  // On rank 1: every byte is what rank 0 sent.
  Status CheckReceived() const {
    for (size_t k = 0; k < buffers.size(); ++k) {
      for (size_t i = 0; i < buffers[k].size(); ++i) {
        if (buffers[k][i] != Pattern(0, 1, i + k)) {
          return InternalError("byte ", i, " of message ", k, " (", buffers[k].size(), " bytes) is wrong");
        }
      }
    }
    return Status::Ok();
  }

  std::vector<std::vector<uint8_t>> buffers;
  std::vector<TransferRequest> requests;
  std::vector<MemoryHandle> handles;
};

// What one rank of RunPair does: `endpoint` reaches the other rank.
using PairBody = std::function<Status(int rank, Transport* transport, Endpoint* endpoint, Messages* messages)>;

// Runs `body` on two connected ranks as threads, each with its Messages of
// `sizes` (deregistered after it); `direct` gets each rank's counts of
// direct messages. Returns the first failure.
Status RunPair(const std::vector<size_t>& sizes, IbTransport::DirectCounts direct[2], const PairBody& body) {
  auto transports = ConnectedMesh(2);
  if (transports.size() != 2) return InternalError("no mesh");
  std::vector<Status> results(2);
  ForEachRank(2, [&](int rank) {
    Transport* transport = transports[rank].get();
    Messages messages(rank, sizes);
    results[rank] = body(rank, transport, transport->endpoint(1 - rank), &messages);
    messages.Deregister(transport);
    direct[rank] = static_cast<IbTransport*>(transport)->direct_counts();
  });
  DestroyTogether(&transports);
  return results[0].ok() ? results[1] : results[0];
}

// Rank 1 posts receives into `sizes` buffers (registered when
// `recv_registered`), then tells rank 0 with a small message, so that its
// offers reach rank 0 before rank 0 sends (RC keeps them in order); rank 0
// sends them (from registered buffers when `send_registered`). Checks every
// byte; `direct` gets rank 0's and rank 1's counts of direct messages.
Status OfferedExchange(const std::vector<size_t>& sizes, const std::vector<bool>& send_registered,
                       bool recv_registered, IbTransport::DirectCounts direct[2]) {
  return RunPair(sizes, direct, [&](int rank, Transport* transport, Endpoint* endpoint, Messages* messages) {
    std::vector<TransferRequest*> pending;
    uint8_t go = 0;
    TransferRequest signal;
    signal.buffer = &go;
    signal.bytes = 1;
    signal.tag = 1;
    Status status;
    if (rank == 0) status = endpoint->PostRecv(&signal);
    for (size_t k = 0; k < sizes.size() && status.ok(); ++k) {
      if (rank == 0 ? send_registered[k] : recv_registered) status = messages->Register(transport, k);
      if (status.ok() && rank == 1) status = endpoint->PostRecv(&messages->requests[k]);
    }
    if (status.ok() && rank == 1) status = endpoint->PostSend(&signal);
    if (status.ok() && rank == 0) status = WaitAll(transport, {&signal});
    for (size_t k = 0; k < sizes.size() && status.ok() && rank == 0; ++k) {
      status = endpoint->PostSend(&messages->requests[k]);
    }
    for (TransferRequest& request : messages->requests) pending.push_back(&request);
    if (rank == 1) pending.push_back(&signal);
    if (status.ok()) status = WaitAll(transport, pending);
    if (status.ok() && rank == 1) status = messages->CheckReceived();
    return status;
  });
}

TEST(IbDirectTest, RegisteredBuffersOnBothSidesGoDirectFromTheOffer) {
  SKIP_WITHOUT_DEVICE();
  // At and past the 64 KiB default, 1 MiB in one write, 8 MiB over the
  // 8-slot ring many times over; 1000 bytes stays below and goes by slot.
  const std::vector<size_t> sizes = {65536, 1000, 65536 + 7, 1 << 20, 8 << 20};
  IbTransport::DirectCounts direct[2];
  const Status status = OfferedExchange(sizes, std::vector<bool>(sizes.size(), true), true, direct);
  ASSERT_TRUE(status.ok()) << status.message();
  EXPECT_EQ(direct[0].sent, 4u);
  EXPECT_EQ(direct[1].received, 4u);
  EXPECT_EQ(direct[0].received, 0u);
  EXPECT_EQ(direct[1].sent, 0u);
}

TEST(IbDirectTest, AnOfferTheSenderCannotTakeGoesStaleAndLaterOnesStillWork) {
  SKIP_WITHOUT_DEVICE();
  // Messages 0 and 2 leave unregistered buffers (by slot, their offers go
  // stale); 1 and 3 go direct, in order with them.
  const std::vector<size_t> sizes = {1 << 20, 1 << 20, 300000, 300000};
  IbTransport::DirectCounts direct[2];
  const Status status = OfferedExchange(sizes, {false, true, false, true}, true, direct);
  ASSERT_TRUE(status.ok()) << status.message();
  EXPECT_EQ(direct[0].sent, 2u);
  EXPECT_EQ(direct[1].received, 2u);
}

TEST(IbDirectTest, UnregisteredReceivesAreNeverOffered) {
  SKIP_WITHOUT_DEVICE();
  const std::vector<size_t> sizes = {1 << 20, 8 << 20};
  IbTransport::DirectCounts direct[2];
  const Status status = OfferedExchange(sizes, {true, true}, false, direct);
  ASSERT_TRUE(status.ok()) << status.message();
  EXPECT_EQ(direct[0].sent, 0u);
  EXPECT_EQ(direct[1].received, 0u);
}

TEST(IbDirectTest, ManyOfferedReceivesBeyondTheWindowStayInOrder) {
  SKIP_WITHOUT_DEVICE();
  // 40 receives: more than the 16 offered at once, so later offers follow
  // as earlier messages complete; every other one from an unregistered
  // buffer.
  std::vector<size_t> sizes;
  std::vector<bool> registered;
  for (int k = 0; k < 40; ++k) {
    sizes.push_back(65536 + 64 * k);
    registered.push_back(k % 2 == 0);
  }
  IbTransport::DirectCounts direct[2];
  const Status status = OfferedExchange(sizes, registered, true, direct);
  ASSERT_TRUE(status.ok()) << status.message();
  // Every registered one: a sender waits for the answer of each.
  EXPECT_EQ(direct[0].sent, 20u);
  EXPECT_EQ(direct[1].received, 20u);
}

// Rank 0 posts its sends at once; rank 1 posts its receives `delay_ms`
// later (registered when `recv_registered`; reducing on arrival when
// `combine`). Checks every byte (or the sum folded); `direct` as above.
Status LateReceives(const std::vector<size_t>& sizes, bool recv_registered, bool combine, int delay_ms,
                    IbTransport::DirectCounts direct[2]) {
  struct Sum {
    uint64_t total = 0;
    static void Fold(void* context, size_t, const void* incoming, size_t bytes) {
      for (size_t i = 0; i < bytes; ++i) static_cast<Sum*>(context)->total += static_cast<const uint8_t*>(incoming)[i];
    }
  };
  return RunPair(sizes, direct, [&](int rank, Transport* transport, Endpoint* endpoint, Messages* messages) {
    std::vector<TransferRequest*> pending;
    std::vector<Sum> sums(sizes.size());
    std::vector<ReceiveCombiner> combiners(sizes.size());
    Status status;
    if (rank == 1) std::this_thread::sleep_for(std::chrono::milliseconds(delay_ms));
    for (size_t k = 0; k < sizes.size() && status.ok(); ++k) {
      TransferRequest& request = messages->requests[k];
      if (rank == 0 || recv_registered) status = messages->Register(transport, k);
      if (rank == 1 && combine) {
        combiners[k].fn = Sum::Fold;
        combiners[k].context = &sums[k];
        request.combine = &combiners[k];
      }
      if (status.ok()) status = rank == 0 ? endpoint->PostSend(&request) : endpoint->PostRecv(&request);
      pending.push_back(&request);
    }
    if (status.ok()) status = WaitAll(transport, pending);
    if (status.ok() && rank == 1 && !combine) status = messages->CheckReceived();
    for (size_t k = 0; k < sizes.size() && status.ok() && rank == 1 && combine; ++k) {
      uint64_t expected = 0;
      for (size_t i = 0; i < sizes[k]; ++i) expected += Pattern(0, 1, i + k);
      if (sums[k].total != expected) status = InternalError("message ", k, " folded wrong");
    }
    return status;
  });
}

TEST(IbDirectTest, SendsPostedBeforeTheirReceivesAnnounceAndGoDirect) {
  SKIP_WITHOUT_DEVICE();
  const std::vector<size_t> sizes = {1 << 20, 65536, 3 << 20, 1000, 200000};
  IbTransport::DirectCounts direct[2];
  const Status status = LateReceives(sizes, true, false, 300, direct);
  ASSERT_TRUE(status.ok()) << status.message();
  EXPECT_EQ(direct[0].sent, 4u);  // all but the 1000 bytes
  EXPECT_EQ(direct[1].received, 4u);
}

TEST(IbDirectTest, AnnouncedSendsToUnregisteredOrReducingReceivesAreDeclined) {
  SKIP_WITHOUT_DEVICE();
  const std::vector<size_t> sizes = {1 << 20, 65536, 1000, 3 << 20};
  for (bool combine : {false, true}) {
    IbTransport::DirectCounts direct[2];
    const Status status = LateReceives(sizes, combine, combine, 300, direct);
    ASSERT_TRUE(status.ok()) << status.message();
    EXPECT_EQ(direct[0].sent, 0u);
    EXPECT_EQ(direct[1].received, 0u);
  }
}

// Rank 0 sends 1 MiB with tag 6 from a registered buffer; rank 1 receives
// 1 MiB with tag 5 into a registered buffer. `offered`: rank 1 posts first
// and tells rank 0, so the offer meets the send; else rank 0 first sends a
// small message (so that its ring on rank 1 exists) and rank 1 posts 300 ms
// late, so rank 0 announces. Returns both ranks' results.
std::vector<Status> DirectMismatch(bool offered) {
  auto transports = ConnectedMesh(2);
  if (transports.size() != 2) return {InternalError("no mesh"), InternalError("no mesh")};
  std::vector<uint8_t> out(1 << 20, 1), in(1 << 20);
  TransferRequest send, recv, signals[2];
  uint8_t go[2] = {};
  for (int rank = 0; rank < 2; ++rank) {
    signals[rank].buffer = &go[rank];
    signals[rank].bytes = 1;
  }
  std::vector<Status> results = {transports[0]->RegisterMemory(out.data(), out.size(), MemoryKind::kHost, &send.memory),
                                 transports[1]->RegisterMemory(in.data(), in.size(), MemoryKind::kHost, &recv.memory)};
  send.buffer = out.data();
  send.bytes = out.size();
  send.tag = 6;
  recv.buffer = in.data();
  recv.bytes = in.size();
  recv.tag = 5;
  if (results[0].ok() && results[1].ok()) {
    ForEachRank(2, [&](int rank) {
      Transport* transport = transports[rank].get();
      Endpoint* endpoint = transport->endpoint(1 - rank);
      Status& status = results[rank];
      TransferRequest* signal = &signals[rank];
      if (!offered) {
        status = rank == 0 ? endpoint->PostSend(signal) : endpoint->PostRecv(signal);
        if (status.ok()) status = WaitAll(transport, {signal});
      }
      if (rank == 1) {
        if (!offered) {
          // The announcement arrives meanwhile; taking it in before posting
          // lets the receive meet it before answering.
          std::this_thread::sleep_for(std::chrono::milliseconds(300));
          if (status.ok()) status = transport->Progress(0);
        }
        if (status.ok()) status = endpoint->PostRecv(&recv);
        if (status.ok() && offered) status = endpoint->PostSend(signal);
        if (status.ok()) status = WaitAll(transport, {&recv}, 5000);
      } else {
        if (offered) status = endpoint->PostRecv(signal);
        if (status.ok() && offered) status = WaitAll(transport, {signal});
        if (status.ok()) status = endpoint->PostSend(&send);
        if (status.ok()) status = WaitAll(transport, {&send}, 5000);
      }
    });
  }
  transports[0]->DeregisterMemory(send.memory);
  transports[1]->DeregisterMemory(recv.memory);
  DestroyTogether(&transports);
  return results;
}

TEST(IbDirectTest, AnOfferedBufferOfAnotherTagFailsTheSenderNamingThePeer) {
  SKIP_WITHOUT_DEVICE();
  const std::vector<Status> results = DirectMismatch(true);
  EXPECT_EQ(results[0].code(), chorusInternalError) << results[0].message();
  EXPECT_NE(results[0].message().find("mismatch with rank 1"), std::string::npos) << results[0].message();
  EXPECT_NE(results[0].message().find("it expects tag 5 with 1048576 bytes, this rank sends tag 6"),
            std::string::npos)
      << results[0].message();
  EXPECT_FALSE(results[1].ok());
}

TEST(IbDirectTest, AnAnnouncementOfAnotherTagFailsTheReceiverNamingThePeer) {
  SKIP_WITHOUT_DEVICE();
  const std::vector<Status> results = DirectMismatch(false);
  EXPECT_EQ(results[1].code(), chorusInternalError) << results[1].message();
  EXPECT_NE(results[1].message().find("mismatch with rank 0"), std::string::npos) << results[1].message();
  EXPECT_NE(results[1].message().find("expected tag 5 with 1048576 bytes, got tag 6"), std::string::npos)
      << results[1].message();
  EXPECT_FALSE(results[0].ok());
}
#endif

}  // namespace
}  // namespace chorus
