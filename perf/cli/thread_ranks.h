// Runs a block of ranks of one communicator as threads of this process.
#pragma once

#include "chorus/chorus.h"
#include "perf/cli/collectives.h"
#include "perf/cli/options.h"

namespace chorus::perf {

struct RankBlock {
  int first_rank = 0;  // global rank of this process's first thread
  int count = 1;       // ranks (threads) in this process
  int nranks = 1;      // ranks in the communicator
  int processes = 1;
};

// Each thread joins `id` as rank first_rank + i and runs the sweep. Returns
// the worst exit code.
int RunThreadRanks(CollectiveKind kind, const Options& options, const chorusUniqueId& id, const RankBlock& block);

// The communicator configuration the flags ask for (-A, -T).
chorusConfig_t ConfigFromOptions(const Options& options);

}  // namespace chorus::perf
