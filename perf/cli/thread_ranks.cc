#include "perf/cli/thread_ranks.h"

#include <algorithm>
#include <cstdio>
#include <thread>
#include <vector>

#include "perf/cli/rank_sweep.h"

namespace chorus::perf {

chorusConfig_t ConfigFromOptions(const Options& options) {
  chorusConfig_t config = CHORUS_CONFIG_INITIALIZER;
  config.algo = options.algo.empty() ? nullptr : options.algo.c_str();
  if (options.timeout_s > 0) config.timeoutMs = options.timeout_s * 1000;
  return config;
}

int RunThreadRanks(CollectiveKind kind, const Options& options, const chorusUniqueId& id, const RankBlock& block) {
  std::vector<int> codes(static_cast<size_t>(block.count), kExitCallFailed);
  std::vector<std::thread> threads;
  for (int i = 0; i < block.count; ++i) {
    threads.emplace_back([&, i] {
      const int rank = block.first_rank + i;
      chorusConfig_t config = ConfigFromOptions(options);
      chorusComm_t comm = nullptr;
      const chorusResult_t result = chorusCommInitRankConfig(&comm, block.nranks, id, rank, &config);
      if (result != chorusSuccess) {
        std::fprintf(stderr, "rank %d: chorusCommInitRankConfig failed: %s: %s\n", rank,
                     chorusGetErrorString(result), chorusGetLastError(nullptr));
        return;
      }
      codes[static_cast<size_t>(i)] = RunRankSweep(kind, options, comm, RankPlace{i, block.processes});
    });
  }
  for (std::thread& thread : threads) thread.join();
  return *std::max_element(codes.begin(), codes.end());
}

}  // namespace chorus::perf
