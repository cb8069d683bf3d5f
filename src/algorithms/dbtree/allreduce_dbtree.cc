// Double binary tree AllReduce (NCCL): the vector is split in two halves;
// half t is reduced up tree t to its root and broadcast back down. Each rank
// is interior (receives two, sends one or two) in at most one tree, so every
// link carries about |W| each way instead of the binomial tree's log2(p)*|W|
// at the root, with 2*log2(p) latency. Each half is cut into
// args.segment_bytes segments.
//
// Both trees must progress side by side, yet about p/4 pairs of ranks are
// linked in both (p = 4: ranks 1-2, up in tree 0 and down in tree 1) and a
// pair is one ordered stream (schedule.h, rule 3). Listing tree 0 before
// tree 1 makes tree 1's traffic on such a pair wait behind all of tree 0's.
// Instead every message gets the time at which an ideal pipeline would send
// it: segment s leaves a node of height h (leaves: 0) at s + h hops on the
// way up, and a node of depth d at s + H + 1 + d hops on the way down (H:
// the tree's height; a hop is kHop segment times); tree 1 runs one hop
// behind tree 0, so that where both trees use one direction of a pair (odd
// p: rank 0 is interior in both) their reductions and broadcasts pass in the
// same tree order rather than crossing (p = 3: 0.069 s against 0.083 s).
// Each rank lists its steps by that time (then segment, then tree): both
// ends of a pair compute the same time for each message, so they agree on
// the order, and every message's inputs have an earlier time, so the stream
// order never waits on a later message (no head-of-line cycle). With whole
// halves a doubly linked pair carries both trees' reductions, then both
// broadcasts; with segments the trees and the segments interleave as the
// pipeline runs. Replay (docs/simulator.md): p = 64, 4 MiB, 64 KiB chunks,
// 0.076 s against 0.133 s with tree 0 listed before tree 1.
#include <algorithm>
#include <cstdint>
#include <vector>

#include "algorithms/builders.h"
#include "algorithms/dbtree/double_binary_tree.h"
#include "algorithms/schedule_builder.h"
#include "algorithms/segments.h"

namespace chorus {
namespace {

// A hop (one tree level) in segment times: segments are issued twice as
// fast as one crosses a level (a hop passes the sender's port and then the
// receiver's, shared by two children). Measured in the replay (p = 64,
// 4 MiB, 64 KiB segments and chunks): 1: 0.082 s, 2: 0.076 s (the same as
// whole halves), 3: 0.076 s but p = 3 slower.
constexpr int64_t kHop = 2;

enum class Action : uint8_t { kReduceFromChild, kSendUp, kRecvDown, kSendDown, kCopyToResult };

// One step of this rank, before ordering.
struct TimedStep {
  int64_t time = 0;  // in segment times, as seen by both ends
  uint32_t segment = 0;
  uint8_t tree = 0;
  uint32_t sequence = 0;  // order of creation within (segment, tree)
  Action action = Action::kSendUp;
  int peer = -1;
};

bool Earlier(const TimedStep& a, const TimedStep& b) {
  if (a.time != b.time) return a.time < b.time;
  if (a.segment != b.segment) return a.segment < b.segment;
  if (a.tree != b.tree) return a.tree < b.tree;
  return a.sequence < b.sequence;
}

}  // namespace

Status BuildDoubleTreeAllReduce(const CollectiveArgs& args, Schedule* out) {
  ScheduleBuilder builder(args, Algorithm::kDoubleBinaryTree, out);
  const size_t es = builder.element_size();
  const int p = args.nranks;
  const BinaryTreeNode nodes[2] = {DoubleBinaryTreeNode(0, args.rank, p), DoubleBinaryTreeNode(1, args.rank, p)};
  const Segment halves[2] = {EvenSegment(args.count, 2, 0), EvenSegment(args.count, 2, 1)};
  const size_t segment = PipelineSegmentBytes(args.segment_bytes, es, halves[0].count * es);
  const size_t rounds = PipelineSegmentCount(halves[0].count * es, segment);  // the larger half

  std::vector<TimedStep> steps;
  for (int t = 0; t < 2; ++t) {
    const BinaryTreeNode& node = nodes[t];
    const int64_t top = kHop * DoubleBinaryTreeHeight(t, DoubleBinaryTreeRoot(t, p), p);
    const int64_t height = kHop * DoubleBinaryTreeHeight(t, args.rank, p);
    const int64_t depth = kHop * DoubleBinaryTreeDepth(t, args.rank, p);
    for (size_t s = 0; s < rounds; ++s) {
      const int64_t base = static_cast<int64_t>(s) + kHop * t;
      uint32_t sequence = 0;
      auto add = [&](int64_t time, Action action, int peer) {
        steps.push_back(TimedStep{time, static_cast<uint32_t>(s), static_cast<uint8_t>(t), sequence++, action, peer});
      };
      for (int child : node.children) {
        add(base + kHop * DoubleBinaryTreeHeight(t, child, p), Action::kReduceFromChild, child);
      }
      if (node.parent >= 0) {
        add(base + height, Action::kSendUp, node.parent);
        add(base + top + depth, Action::kRecvDown, node.parent);  // sent at the parent's depth + 1
      } else {
        add(base + top, Action::kCopyToResult, -1);  // a no-op unless the root has no children
      }
      for (auto child = node.children.rbegin(); child != node.children.rend(); ++child) {
        add(base + top + kHop + depth, Action::kSendDown, *child);
      }
    }
  }
  std::stable_sort(steps.begin(), steps.end(), Earlier);

  // Whether a (tree, segment) already holds a partial sum in the result:
  // the first child's contribution reads the input, later ones the result.
  std::vector<uint8_t> reduced(2 * rounds, 0);
  for (const TimedStep& step : steps) {
    const int t = step.tree;
    const ByteRange part = PipelineSegment(halves[t].count * es, segment, step.segment);
    const size_t offset = halves[t].offset * es + part.offset;
    const BufferRange input{BufferId::kSend, offset};
    const BufferRange result{BufferId::kRecv, offset};
    uint8_t& has_partial = reduced[2 * step.segment + t];
    const BufferRange partial = has_partial ? result : input;
    switch (step.action) {
      case Action::kReduceFromChild:
        builder.RecvReduce(step.peer, partial, result, part.bytes);
        has_partial = 1;
        break;
      case Action::kSendUp:
        builder.Send(step.peer, partial, part.bytes);
        break;
      case Action::kRecvDown:
        builder.Recv(step.peer, result, part.bytes);
        break;
      case Action::kCopyToResult:
        builder.Copy(partial, result, part.bytes);  // same address once a child was reduced in
        break;
      case Action::kSendDown:
        builder.Send(step.peer, result, part.bytes);
        break;
    }
  }
  return builder.Finish();
}

}  // namespace chorus
