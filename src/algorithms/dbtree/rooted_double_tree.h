// The double binary tree of a rooted collective (Broadcast, Reduce): the
// root sits above two complementary binary trees over the other n-1 ranks,
// each carrying half of the data (the two-tree scheme of Sanders, Speck and
// Träff), so the root's link carries |W| once each way and every other rank
// is interior in at most one tree.
#pragma once

#include "algorithms/dbtree/double_binary_tree.h"

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

}  // namespace chorus
