// Runs one function per rank, each on its own thread, over an in-process
// fabric, the way the communicator drives a transport: a rank that fails
// shuts its transport down so that its peers fail promptly too.
#pragma once

#include <functional>
#include <thread>
#include <vector>

#include "base/status.h"
#include "inproc_transport.h"

namespace chorus::testing {

using RankFunction = std::function<Status(int rank, Transport* transport)>;

inline std::vector<Status> RunRanks(InprocFabric& fabric, const RankFunction& function) {
  std::vector<Status> results(fabric.nranks());
  std::vector<std::thread> threads;
  for (int rank = 0; rank < fabric.nranks(); ++rank) {
    threads.emplace_back([&, rank] {
      Transport* transport = fabric.transport(rank);
      results[rank] = function(rank, transport);
      if (!results[rank].ok()) transport->Shutdown();
    });
  }
  for (std::thread& thread : threads) thread.join();
  return results;
}

}  // namespace chorus::testing
