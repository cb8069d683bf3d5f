// Reachability: after a collective failed, which ranks still answer at all.
// A rank whose ring stalled times out waiting for its neighbour, who waits
// for its own, so its error names a live rank while the one that broke the
// ring (a host cut off, a process gone) may be anywhere. One connection
// attempt to every rank's recovery listener (bootstrap/shrink.h, open from
// creation on) tells three cases apart: it connects (the host answers and a
// process listens: the rank lives, though it may be stopped), it is refused
// (the rank's process exited or released the communicator), or nothing
// answers within the window (its host is down or cut off from this one).
// The attempts run side by side and are closed unused: the listener drops
// them as abandoned connections.
#pragma once

#include <string>
#include <vector>

#include "base/status.h"

namespace chorus {

struct Reachability {
  std::vector<int> gone;         // refused: the process exited or left
  std::vector<int> unreachable;  // no answer within the window, or no route
  int probed = 0;                // ranks asked
};

// Probes `ranks` (indexes into `addresses`, rank order kept), at most
// kMaxProbesAtOnce connections at a time, each given `window_ms`; a batch
// whose ranks all connect takes kResetGraceMs after the last connection.
Status ProbeRanks(const std::vector<std::string>& addresses, const std::vector<int>& ranks, int window_ms,
                  Reachability* out);

// What a failure's message gains from `reachability`: empty when every
// probed rank answered, else a sentence starting with "; ".
std::string DescribeReachability(const Reachability& reachability, int window_ms);

constexpr int kMaxProbesAtOnce = 256;
// How long a completed connection is watched for a reset (its listener
// closing as its process exits) before it counts as an answer.
constexpr int kResetGraceMs = 100;

}  // namespace chorus
