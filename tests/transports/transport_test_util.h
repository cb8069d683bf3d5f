// What the transport tests share: ranks as threads, a connected mesh of one
// transport per rank, driving Progress until requests finish, and the byte
// pattern every exchange checks.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "transports/transport.h"

namespace chorus {
namespace transport_test {

constexpr int kTestTimeoutMs = 20000;

// The byte rank `from` sends rank `to` at `index`: differs between pairs,
// and (index >> 9) keeps it from repeating every 256 bytes.
inline uint8_t Pattern(int from, int to, size_t index) {
  return static_cast<uint8_t>(from * 31 + to * 7 + index * 13 + (index >> 9));
}

// Runs body(rank) for every rank in its own thread.
inline void ForEachRank(int nranks, const std::function<void(int)>& body) {
  std::vector<std::thread> threads;
  for (int rank = 0; rank < nranks; ++rank) threads.emplace_back(body, rank);
  for (auto& thread : threads) thread.join();
}

// Drives Progress until every request is done.
inline Status WaitAll(Transport* transport, const std::vector<TransferRequest*>& requests,
                      int timeout_ms = kTestTimeoutMs) {
  const Deadline deadline = Deadline::AfterMs(timeout_ms);
  while (true) {
    bool all_done = true;
    for (const TransferRequest* request : requests) all_done = all_done && request->done;
    if (all_done) return Status::Ok();
    if (deadline.Expired()) return TimeoutError("test requests did not finish");
    CHORUS_RETURN_IF_ERROR(transport->Progress(10));
  }
}

// Rank `rank` sends every size to every other rank and receives every size
// from each (tag 1000 + the size's index), all in flight at once, and checks
// every byte. With `registered`, the send and receive buffers are
// registered with the transport first. Returns the first failure.
inline Status ExchangeAllSizes(Transport* transport, int rank, int nranks, const std::vector<size_t>& sizes,
                               bool registered = false, int timeout_ms = kTestTimeoutMs) {
  std::vector<std::vector<uint8_t>> send_buffers, recv_buffers;
  std::vector<TransferRequest> requests(2 * sizes.size() * nranks);
  std::vector<MemoryHandle> handles;
  std::vector<TransferRequest*> pending;
  for (int peer = 0; peer < nranks; ++peer) {
    if (peer == rank) continue;
    for (size_t size : sizes) {
      send_buffers.emplace_back(size);
      for (size_t i = 0; i < size; ++i) send_buffers.back()[i] = Pattern(rank, peer, i);
      recv_buffers.emplace_back(size, 0xEE);
    }
  }
  size_t next = 0, buffer = 0;
  for (int peer = 0; peer < nranks; ++peer) {
    if (peer == rank) continue;
    for (size_t s = 0; s < sizes.size(); ++s, ++buffer) {
      TransferRequest& recv = requests[next++];
      recv.buffer = recv_buffers[buffer].data();
      recv.bytes = sizes[s];
      recv.tag = 1000 + s;
      if (registered && sizes[s] > 0) {
        CHORUS_RETURN_IF_ERROR(transport->RegisterMemory(recv.buffer, recv.bytes, MemoryKind::kHost, &recv.memory));
        handles.push_back(recv.memory);
      }
      CHORUS_RETURN_IF_ERROR(transport->endpoint(peer)->PostRecv(&recv));
      pending.push_back(&recv);
      TransferRequest& send = requests[next++];
      send.buffer = send_buffers[buffer].data();
      send.bytes = sizes[s];
      send.tag = 1000 + s;
      if (registered && sizes[s] > 0) {
        MemoryHandle handle;
        CHORUS_RETURN_IF_ERROR(transport->RegisterMemory(send.buffer, send.bytes, MemoryKind::kHost, &handle));
        handles.push_back(handle);
        send.memory = handle;
      }
      CHORUS_RETURN_IF_ERROR(transport->endpoint(peer)->PostSend(&send));
      pending.push_back(&send);
    }
  }
  Status status = WaitAll(transport, pending, timeout_ms);
  for (const MemoryHandle& handle : handles) transport->DeregisterMemory(handle);
  CHORUS_RETURN_IF_ERROR(status);
  buffer = 0;
  for (int peer = 0; peer < nranks; ++peer) {
    if (peer == rank) continue;
    for (size_t s = 0; s < sizes.size(); ++s, ++buffer) {
      for (size_t i = 0; i < sizes[s]; ++i) {
        if (recv_buffers[buffer][i] != Pattern(peer, rank, i)) {
          return InternalError("rank ", rank, ": byte ", i, " of the ", sizes[s], "-byte message from ", peer,
                               " is wrong");
        }
      }
    }
  }
  return Status::Ok();
}

// Makes rank `rank`'s transport, not yet connected.
using CreateTransport = std::function<Status(int rank, std::unique_ptr<Transport>* transport)>;

// Creates `nranks` transports, then connects them all at once (one thread
// per rank, as ranks do). Empty, with the failure reported, if any step fails.
inline std::vector<std::unique_ptr<Transport>> ConnectedMesh(int nranks, const CreateTransport& create,
                                                             int timeout_ms = kTestTimeoutMs) {
  std::vector<std::unique_ptr<Transport>> transports(nranks);
  std::vector<std::string> addresses;
  for (int rank = 0; rank < nranks; ++rank) {
    const Status created = create(rank, &transports[rank]);
    EXPECT_TRUE(created.ok()) << created.message();
    if (!created.ok()) return {};
    addresses.push_back(transports[rank]->LocalAddress());
  }
  std::vector<Status> results(nranks);
  ForEachRank(nranks, [&](int rank) {
    results[rank] = transports[rank]->Connect(addresses, Deadline::AfterMs(timeout_ms));
  });
  for (const Status& status : results) {
    EXPECT_TRUE(status.ok()) << status.message();
    if (!status.ok()) return {};
  }
  return transports;
}

// Destroys the transports at once, one thread each, as ranks do: a transport
// that flushes its endpoints on the way out needs its peers to progress.
inline void DestroyTogether(std::vector<std::unique_ptr<Transport>>* transports) {
  ForEachRank(static_cast<int>(transports->size()), [transports](int rank) { (*transports)[rank].reset(); });
}

}  // namespace transport_test
}  // namespace chorus
