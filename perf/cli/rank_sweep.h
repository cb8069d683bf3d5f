// The benchmark one rank runs: for each type, op and root, warm up, then for
// each size time the out-of-place and the in-place call, validate them and
// (rank 0) print the row. Every rank runs it on its own communicator; the
// ranks agree on times and wrong counts through collectives on that
// communicator.
#pragma once

#include "chorus/chorus.h"
#include "perf/cli/collectives.h"
#include "perf/cli/options.h"

namespace chorus::perf {

// Exit codes of a sweep (and of the CLIs).
inline constexpr int kExitOk = 0;
inline constexpr int kExitWrongResults = 1;
inline constexpr int kExitCallFailed = 2;

struct RankPlace {
  int local_index = 0;  // this rank's index among the ranks of its process
  int processes = 1;    // processes taking part (for the header)
};

// Runs the whole sweep on `comm` and returns an exit code. Rank 0 prints.
// Ends `comm`: destroys it after a complete sweep, aborts it after a failed
// call (peers may be gone).
int RunRankSweep(CollectiveKind kind, const Options& options, chorusComm_t comm, const RankPlace& place);

}  // namespace chorus::perf
