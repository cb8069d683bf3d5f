// The double binary tree allreduce's per-pair message order
// (algorithms/dbtree/allreduce_dbtree.cc): both ends of every pair list the
// same messages in the same order, and that order never makes a message
// wait behind one that depends on it (no head-of-line cycle), even when
// every step must finish whole before its dependants start and a send
// completes only together with its receive. schedule_test checks results.
#include <gtest/gtest.h>

#include <cstdint>
#include <map>
#include <utility>
#include <vector>

#include "algorithms/algorithm.h"
#include "algorithms/dbtree/double_binary_tree.h"
#include "collective_case.h"

namespace chorus::testing {
namespace {

std::vector<Schedule> BuildAll(int nranks, size_t count, size_t segment_bytes) {
  CollectiveArgs args = RankArgs(Collective::kAllReduce, nranks, 0, count);
  args.segment_bytes = segment_bytes;
  return BuildEveryRank(args, Algorithm::kDoubleBinaryTree);
}

// Steps of `schedule` that send to (or receive from) `peer`, in order.
std::vector<uint32_t> Messages(const Schedule& schedule, int peer, bool sending) {
  std::vector<uint32_t> steps;
  for (uint32_t i = 0; i < schedule.steps.size(); ++i) {
    const Step& step = schedule.steps[i];
    if (step.peer != peer) continue;
    if ((step.kind == StepKind::kSend) == sending) steps.push_back(i);
  }
  return steps;
}

// Replays whole steps under rendezvous: a step runs once every dependency
// has finished; a send runs together with its receive, when both are at
// the head of their pair's stream. Returns the number of steps left undone
// (0: no head-of-line cycle) and the rounds it took in `rounds`.
size_t StepsLeftUnderStrictStreams(const std::vector<Schedule>& schedules, int* rounds) {
  const int p = static_cast<int>(schedules.size());
  std::vector<std::vector<uint8_t>> done(p);
  std::map<std::pair<int, int>, std::vector<uint32_t>> sends, receives;  // (from, to) -> steps
  std::map<std::pair<int, int>, size_t> head;
  size_t left = 0;
  for (int r = 0; r < p; ++r) {
    done[r].assign(schedules[r].steps.size(), 0);
    left += schedules[r].steps.size();
    for (int q = 0; q < p; ++q) {
      if (q == r) continue;
      sends[{r, q}] = Messages(schedules[r], q, true);
      receives[{r, q}] = Messages(schedules[q], r, false);
    }
  }
  auto ready = [&](int rank, uint32_t step) {
    for (uint32_t dep : schedules[rank].steps[step].deps) {
      if (!done[rank][dep]) return false;
    }
    return true;
  };
  *rounds = 0;
  for (bool progressed = true; progressed && left > 0; ++*rounds) {
    progressed = false;
    std::vector<std::pair<int, uint32_t>> finish;  // this round's steps
    for (int r = 0; r < p; ++r) {
      for (uint32_t i = 0; i < schedules[r].steps.size(); ++i) {
        const StepKind kind = schedules[r].steps[i].kind;
        if (!done[r][i] && (kind == StepKind::kCopy || kind == StepKind::kReduce) && ready(r, i)) {
          finish.emplace_back(r, i);
        }
      }
    }
    for (auto& [pair, list] : sends) {
      size_t& next = head[pair];
      const std::vector<uint32_t>& matching = receives[pair];
      if (next >= list.size()) continue;
      EXPECT_LT(next, matching.size());
      if (next >= matching.size()) return left;
      if (ready(pair.first, list[next]) && ready(pair.second, matching[next])) {
        finish.emplace_back(pair.first, list[next]);
        finish.emplace_back(pair.second, matching[next]);
        ++next;
      }
    }
    for (const auto& [rank, step] : finish) {
      if (done[rank][step]) continue;
      done[rank][step] = 1;
      --left;
      progressed = true;
    }
  }
  return left;
}

TEST(DoubleTreeOrder, HeightAndDepthMatchTheTrees) {
  for (int n = 1; n <= 70; ++n) {
    for (int t = 0; t < 2; ++t) {
      std::vector<BinaryTreeNode> nodes;
      for (int r = 0; r < n; ++r) nodes.push_back(DoubleBinaryTreeNode(t, r, n));
      // Depth by walking up; height by relaxing children until stable.
      std::vector<int> height(n, 0);
      for (bool changed = true; changed;) {
        changed = false;
        for (int r = 0; r < n; ++r) {
          for (int child : nodes[r].children) {
            if (height[child] + 1 > height[r]) {
              height[r] = height[child] + 1;
              changed = true;
            }
          }
        }
      }
      for (int r = 0; r < n; ++r) {
        int depth = 0;
        for (int up = nodes[r].parent; up >= 0; up = nodes[up].parent) ++depth;
        EXPECT_EQ(DoubleBinaryTreeDepth(t, r, n), depth) << "n=" << n << " tree " << t << " rank " << r;
        EXPECT_EQ(DoubleBinaryTreeHeight(t, r, n), height[r]) << "n=" << n << " tree " << t << " rank " << r;
      }
    }
  }
}

// The k-th message from A to B carries the same bytes (offset and length)
// on both ends: both ends order the two trees and the segments alike.
TEST(DoubleTreeOrder, BothEndsOfEveryPairListTheSameMessages) {
  for (int p = 2; p <= 33; ++p) {
    for (size_t segment : {size_t{0}, size_t{400}}) {
      const std::vector<Schedule> schedules = BuildAll(p, 1001, segment);
      for (int a = 0; a < p; ++a) {
        for (int b = 0; b < p; ++b) {
          if (a == b) continue;
          const std::vector<uint32_t> out = Messages(schedules[a], b, true);
          const std::vector<uint32_t> in = Messages(schedules[b], a, false);
          ASSERT_EQ(out.size(), in.size()) << "p=" << p << " " << a << "->" << b;
          for (size_t k = 0; k < out.size(); ++k) {
            const Step& send = schedules[a].steps[out[k]];
            const Step& receive = schedules[b].steps[in[k]];
            EXPECT_EQ(send.bytes, receive.bytes) << "p=" << p << " " << a << "->" << b << " message " << k;
            EXPECT_EQ(send.src.offset, receive.dst.offset) << "p=" << p << " " << a << "->" << b << " message " << k;
          }
        }
      }
    }
  }
}

TEST(DoubleTreeOrder, NoHeadOfLineCycleUnderStrictStreams) {
  for (int p = 1; p <= 40; ++p) {
    for (size_t segment : {size_t{0}, size_t{400}, size_t{40}}) {
      int rounds = 0;
      EXPECT_EQ(StepsLeftUnderStrictStreams(BuildAll(p, 1001, segment), &rounds), 0u)
          << "p=" << p << " segment " << segment;
    }
  }
}

// The trees overlap: with whole steps and one message per round on each
// stream, both halves finish in about the rounds one tree needs (up and
// down its height H, plus the one-hop lag of tree 1): at most 2 H + 5.
// Listing tree 0 before tree 1 took twice as many (p = 8: 16 rounds, now
// 8; p = 64: 34, now 17), the trees one after the other.
TEST(DoubleTreeOrder, BothTreesFinishInAboutTheRoundsOfOne) {
  for (int p : {2, 4, 5, 6, 8, 9, 12, 16, 17, 32, 33, 64}) {
    const int height = DoubleBinaryTreeHeight(0, DoubleBinaryTreeRoot(0, p), p);
    int rounds = 0;
    ASSERT_EQ(StepsLeftUnderStrictStreams(BuildAll(p, 1000, 0), &rounds), 0u);
    EXPECT_LE(rounds, 2 * height + 5) << "p=" << p;
  }
}

}  // namespace
}  // namespace chorus::testing
