// ScheduleBuilder: appends steps to a Schedule in an order that would be
// correct if run one step at a time, and derives the dependencies itself.
//
// Every builder lists its steps sequentially; the builder resolves each byte
// range to real memory (kSend and kRecv alias as collective.h describes when
// the call is in place) and declares a dependency on every earlier step that
// touches overlapping bytes with a read-after-write, write-after-read or
// write-after-write hazard. Hand-written dependency lists are where in-place
// bugs hide; deriving them removes that class of bug.
//
// Dependencies are tracked per byte interval (last writer + readers since),
// so building costs O(steps * log(intervals)), fine for thousands of ranks.
// It also drops steps that move nothing: zero-byte steps and copies whose
// source and destination resolve to the same address.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <vector>

#include "algorithms/collective.h"
#include "algorithms/schedule.h"
#include "base/algorithm_descriptor.h"
#include "base/status.h"

namespace chorus {

class ScheduleBuilder {
 public:
  // Fills `schedule`'s header (dtype, op, element size, the algorithm's name
  // from its descriptor) and clears its steps.
  ScheduleBuilder(const CollectiveArgs& args, Algorithm algorithm, Schedule* schedule);

  // Each returns the new step's index, or kNoStep when nothing was added.
  static constexpr int64_t kNoStep = -1;
  int64_t Send(int peer, BufferRange src, size_t bytes);
  int64_t Recv(int peer, BufferRange dst, size_t bytes);
  int64_t RecvReduce(int peer, BufferRange src, BufferRange dst, size_t bytes);
  int64_t Copy(BufferRange src, BufferRange dst, size_t bytes);
  int64_t Reduce(BufferRange src, BufferRange src2, BufferRange dst, size_t bytes);
  // Makes `step` also wait for `earlier` (both as returned above; kNoStep is
  // ignored): an ordering-only dependency that no byte range implies, e.g. to
  // keep a receive from reading its peer before an earlier receive is done.
  // Rule 1 of schedule.h applies as to any dependency.
  void After(int64_t step, int64_t earlier);
  // Marks receive `step` (as returned above; kNoStep is ignored) paced:
  // schedule.h rule 5. The caller vouches that the rule's condition holds.
  void Pace(int64_t step);

  // Sets scratch_bytes to the extent used and reports the first problem
  // (a hazard the executor's prefix rule cannot express).
  Status Finish();

  size_t element_size() const { return element_size_; }

 private:
  // Where a byte range lives: a memory space (aliased buffers share one) and
  // an address within it.
  struct Resolved {
    int space = 0;
    uint64_t begin = 0;
    uint64_t end = 0;
    bool write = false;
  };
  // A run of bytes [start, end) in one space: who last wrote it, and who read
  // it since.
  struct Interval {
    uint64_t end = 0;
    int64_t writer = kNoStep;
    std::vector<uint32_t> readers;
  };
  using IntervalMap = std::map<uint64_t, Interval>;

  Resolved Resolve(BufferRange range, size_t bytes) const;
  int64_t Append(Step step, const std::vector<BufferRange>& reads, bool writes);
  void SplitAt(IntervalMap& map, uint64_t at);
  void CollectHazards(const Resolved& access, uint32_t self, std::vector<uint32_t>* deps);
  void RecordAccess(const Resolved& access, uint32_t self);
  void CheckPrefixDependency(const Step& step, const std::vector<Resolved>& accesses, uint32_t dep);

  Schedule* schedule_;
  size_t element_size_;
  uint64_t send_base_ = 0;  // address of kSend offset 0 in its space
  uint64_t recv_base_ = 0;
  int send_space_ = 0;
  int recv_space_ = 1;
  static constexpr int kScratchSpace = 2;
  IntervalMap spaces_[3];
  // Per step: the resolved ranges it touches, to check prefix dependencies.
  std::vector<std::vector<Resolved>> touched_;
  Status status_;
};

}  // namespace chorus
