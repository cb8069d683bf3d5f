// Runs the schedules of N virtual ranks in one process, in memory, under the
// execution rules at the top of algorithms/schedule.h, in a random but valid
// order chosen by a seed:
//  - every step is cut into chunks of chunk_bytes rounded down to a multiple
//    of the element size (at least one element);
//  - chunk k of a step runs once its equal-length dependencies have finished
//    chunks 0..k and its other dependencies have finished completely;
//  - the k-th send chunk from A to B meets the k-th receive chunk on B from
//    A; both lengths must agree. Sends to a peer, and receives from a peer,
//    are issued in step order (what a stream transport imposes);
//  - sends are eager (buffered) or, with `rendezvous`, complete only together
//    with their matching receive, which exposes more deadlocks.
// Returns an empty string on success, else what went wrong, including
// DescribeSchedule of the ranks involved.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "algorithms/schedule.h"

namespace chorus::testing {

// The user buffers bound for one rank; nullptr means "not bound" (NCCL lets
// non-root ranks pass no buffer where it is unused) and touching it fails.
struct RankMemory {
  uint8_t* send = nullptr;
  size_t send_bytes = 0;
  uint8_t* recv = nullptr;
  size_t recv_bytes = 0;
};

struct VirtualRunOptions {
  size_t chunk_bytes = 64;
  uint64_t seed = 1;
  bool rendezvous = false;
};

std::string RunVirtualRanks(const std::vector<Schedule>& schedules, const std::vector<RankMemory>& memory,
                            const VirtualRunOptions& options);

// The chunk size the executor uses for a schedule.
size_t EffectiveChunkBytes(size_t chunk_bytes, size_t element_size);

}  // namespace chorus::testing
