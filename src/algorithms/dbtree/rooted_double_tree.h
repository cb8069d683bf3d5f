// The double binary tree of a rooted collective (Broadcast, Reduce): the
// root sits above two complementary binary trees over the other n-1 ranks,
// each carrying half of the data (the two-tree scheme of Sanders, Speck and
// Träff), so the root's link carries |W| once each way and every other rank
// is interior in at most one tree.
#pragma once

#include <cstddef>

#include "algorithms/dbtree/double_binary_tree.h"
#include "algorithms/segments.h"

namespace chorus {

// `rank`'s node in tree `tree`, in real ranks. At the root: no parent, one
// child (the tree's top). Elsewhere the tree's top has the root as parent.
inline BinaryTreeNode RootedDoubleTreeNode(int tree, int rank, int root, int nranks) {
  const int others = nranks - 1;
  auto to_rank = [&](int index) { return (index + root + 1) % nranks; };
  BinaryTreeNode node;
  if (rank == root) {
    node.children.push_back(to_rank(DoubleBinaryTreeRoot(tree, others)));
    return node;
  }
  node = DoubleBinaryTreeNode(tree, (rank - root - 1 + nranks) % nranks, others);
  node.parent = node.parent >= 0 ? to_rank(node.parent) : root;
  for (int& child : node.children) child = to_rank(child);
  return node;
}

// Visits the pipeline segments of a rooted double-tree collective over
// `count` elements, half t of them in tree t: segment s of half 0, then of
// half 1, then segment s+1, so that the two trees pipeline side by side.
// visit(node, offset, bytes): `rank`'s node in that half's tree, and where
// the segment lies, in bytes from the vector's start.
template <typename Visit>
void ForEachRootedDoubleTreeSegment(int rank, int root, int nranks, size_t count, size_t element_size,
                                    size_t segment_bytes, Visit&& visit) {
  const BinaryTreeNode nodes[2] = {RootedDoubleTreeNode(0, rank, root, nranks),
                                   RootedDoubleTreeNode(1, rank, root, nranks)};
  const Segment halves[2] = {EvenSegment(count, 2, 0), EvenSegment(count, 2, 1)};
  const size_t segment = PipelineSegmentBytes(segment_bytes, element_size, halves[0].count * element_size);
  const size_t rounds = PipelineSegmentCount(halves[0].count * element_size, segment);  // the larger half
  for (size_t s = 0; s < rounds; ++s) {
    for (int t = 0; t < 2; ++t) {
      const ByteRange part = PipelineSegment(halves[t].count * element_size, segment, s);
      visit(nodes[t], halves[t].offset * element_size + part.offset, part.bytes);
    }
  }
}

}  // namespace chorus
