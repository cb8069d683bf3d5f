// What the ibverbs device tests share: the reason a host cannot run them,
// the options of a small transport on soft-RoCE, and a connected mesh.
// Only with libibverbs (CHORUS_HAVE_IBVERBS).
#pragma once

#include <infiniband/verbs.h>

#include <memory>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "tests/transports/transport_test_util.h"
#include "transports/ibverbs/ib_transport.h"

namespace chorus {
namespace ib_test {

// Longer than the other transports' tests: soft-RoCE is emulated.
constexpr int kTestTimeoutMs = 30000;

// Why the device tests cannot run here, or empty.
inline std::string NoDeviceReason() {
  int count = 0;
  ibv_device** list = ibv_get_device_list(&count);
  if (list != nullptr) ibv_free_device_list(list);
  return count > 0 ? std::string() : "no RDMA device";
}

#define SKIP_WITHOUT_DEVICE()                                  \
  do {                                                         \
    const std::string reason = ::chorus::ib_test::NoDeviceReason(); \
    if (!reason.empty()) GTEST_SKIP() << reason;               \
  } while (0)

inline IbOptions Options(int rank, int nranks) {
  IbOptions options;
  options.rank = rank;
  options.nranks = nranks;
  options.slots = 8;
  options.slot_bytes = 64 * 1024;  // 8 MiB messages are 129 chunks: the ring wraps many times
  options.ack_timeout = 14;        // a dead peer is found in about half a second of retries
  return options;
}

inline std::vector<std::unique_ptr<Transport>> ConnectedMesh(int nranks) {
  return transport_test::ConnectedMesh(
      nranks,
      [nranks](int rank, std::unique_ptr<Transport>* transport) {
        return CreateIbTransport(Options(rank, nranks), transport);
      },
      kTestTimeoutMs);
}

inline Status WaitAll(Transport* transport, const std::vector<TransferRequest*>& requests,
                      int timeout_ms = kTestTimeoutMs) {
  return transport_test::WaitAll(transport, requests, timeout_ms);
}

}  // namespace ib_test
}  // namespace chorus
