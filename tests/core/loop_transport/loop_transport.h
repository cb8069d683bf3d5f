// "loop": a test-only transport between ranks that are threads of one
// process, over in-process queues (InprocFabric). It shows what adding a
// transport takes: this folder, and one line in a registry table; here the
// test's own table, since the transport is not part of the library:
//
//   LoopFabric fabric(3);
//   TransportRegistry registry({LoopTransportDescriptor(&fabric), TcpTransportDescriptor()});
//   options.transports = &registry;  // CHORUS_TRANSPORT may now name "loop"
//
// A built-in transport is listed in transports/registry.cc instead.
#pragma once

#include <atomic>
#include <memory>

#include "tests/core/inproc_transport.h"
#include "transports/transport_registry.h"

namespace chorus::testing {

// One per communicator: the queues of its ranks, and what the test checks.
struct LoopFabric {
  explicit LoopFabric(int nranks) : inproc(nranks) {}
  InprocFabric inproc;
  std::atomic<int> created{0};          // transports created
  std::atomic<long> messages_sent{0};   // PostSend calls through "loop"
  int fail_rank = -1;                   // this rank's create fails (a fallback test)
  int island_from = -1;                 // ranks from here on cannot reach the others
};

// Preference 1: `auto` puts it before shm and tcp.
TransportDescriptor LoopTransportDescriptor(LoopFabric* fabric);

}  // namespace chorus::testing
