// Schedule: an algorithm's plan for one rank, as data. Algorithms build
// schedules and never touch the network; the executor (src/core) runs any
// schedule over any transport, and tests run them on virtual ranks.
//
// Execution rules (the executor and every test harness honour them):
//  1. A step may start once all steps listed in `deps` allow it. Dependencies
//     are *prefix* dependencies so that long steps pipeline: the executor
//     cuts every step into chunks of `chunk_bytes` (rounded down to a
//     multiple of element_size); chunk [a, b) of step S may run when each
//     dependency D with D.bytes == S.bytes has finished its own chunks
//     covering [0, b); a dependency with a different length must be
//     complete. So only declare equal-length dependencies when chunk k of S
//     really needs only chunk k of D (e.g. "send the segment I just
//     reduced").
//  2. Steps without a dependency path between them may run concurrently in
//     any order: the builder declares every read-after-write,
//     write-after-read and write-after-write hazard on overlapping bytes.
//  3. Messages between two ranks match in order: the k-th send chunk from A
//     to B matches the k-th receive chunk on B from A, where chunks are
//     enumerated in step order, then chunk order. A Send of n bytes to B
//     must therefore face a Recv/RecvReduce of n bytes from A at the same
//     position in B's schedule. A rank never sends to itself (use kCopy).
//  4. Offsets and lengths are in bytes and multiples of element_size.
//  5. A receive marked `paced` may be held back: the executor posts its chunk
//     n only while n is less than a lookahead (ExecutorOptions::pace_chunks)
//     plus the finished prefix of each step that depends on it chunk by
//     chunk. That keeps a fan-in point (a tree parent, a parameter server)
//     from reading one inbound stream far ahead of the stream it is folded
//     with or the send that forwards it, so TCP flow control shares the
//     port. Mark only receives where this cannot deadlock: everything the
//     dependants wait on, on any rank, must come earlier in its channel's
//     order than this receive's later chunks (true for the one-way fan-in of
//     a reduce phase; false for a ring, whose next receive from the same
//     peer waits on the send that depends on this one).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "base/dtype.h"

namespace chorus {

// The buffers a schedule may address. The executor binds kSend/kRecv to the
// user's buffers (they alias when the call is in place, with NCCL's layout
// rules) and allocates kScratch of Schedule::scratch_bytes.
enum class BufferId : uint8_t { kSend = 0, kRecv = 1, kScratch = 2 };

struct BufferRange {
  BufferId buffer = BufferId::kSend;
  size_t offset = 0;  // bytes
};

enum class StepKind : uint8_t {
  kSend,        // send `bytes` at src to `peer`
  kRecv,        // receive `bytes` from `peer` into dst
  kRecvReduce,  // dst = src (op) bytes received from `peer`; src may equal dst
  kCopy,        // dst = src (a no-op when both resolve to the same address)
  kReduce,      // dst = src (op) src2
};

struct Step {
  StepKind kind = StepKind::kCopy;
  int peer = -1;  // kSend, kRecv, kRecvReduce
  BufferRange src;
  BufferRange src2;  // kReduce only
  BufferRange dst;
  size_t bytes = 0;
  std::vector<uint32_t> deps;  // indices of earlier steps of this schedule
  bool paced = false;          // kRecv/kRecvReduce only: rule 5
};

struct Schedule {
  std::vector<Step> steps;
  size_t scratch_bytes = 0;
  size_t element_size = 1;
  DataType dtype = chorusUint8;
  ReduceOp op = ReduceOp::kSum;
  std::string algorithm;  // e.g. "ring", "tree" (for logs and tests)

  // Appends a step and returns its index.
  uint32_t Add(Step step) {
    steps.push_back(std::move(step));
    return static_cast<uint32_t>(steps.size() - 1);
  }
};

// Human-readable dump, one step per line (debugging and test failures).
std::string DescribeSchedule(const Schedule& schedule);

}  // namespace chorus
