// NCCL's double binary tree (Sanders, Speck, Träff 2009; NCCL 2.4): two
// binary trees over ranks 0..n-1, each carrying half of the data, built so
// that the leaves of one are the interior nodes of the other. With n even
// every rank is interior in at most one tree; with n odd rank 0 is the one
// exception.
//
// Tree 0 is an in-order binary tree on the rank numbers: a rank's parent
// and children follow from its lowest set bit, the odd ranks are leaves and
// rank 0 is the root with one child. Tree 1 mirrors it (rank -> n-1-rank)
// when n is even and shifts it by one (rank -> rank+1) when n is odd, which
// turns the leaves of tree 0 into the interior of tree 1.
#pragma once

#include <vector>

namespace chorus {

struct BinaryTreeNode {
  int parent = -1;            // -1 at the root
  std::vector<int> children;  // at most two
};

// One rank of NCCL's binary tree (ncclGetBtree) over n ranks.
inline BinaryTreeNode InOrderBinaryTreeNode(int rank, int nranks) {
  BinaryTreeNode node;
  int bit = 1;
  while (bit < nranks && (bit & rank) == 0) bit <<= 1;
  if (rank == 0) {
    if (nranks > 1) node.children.push_back(bit >> 1);
    return node;
  }
  int up = (rank ^ bit) | (bit << 1);
  if (up >= nranks) up = rank ^ bit;
  node.parent = up;
  int low = bit >> 1;
  if (low > 0) node.children.push_back(rank - low);
  while (low > 0 && rank + low >= nranks) low >>= 1;
  if (low > 0) node.children.push_back(rank + low);
  return node;
}

// The node of `rank` in tree 0 or tree 1 of the double binary tree.
inline BinaryTreeNode DoubleBinaryTreeNode(int tree, int rank, int nranks) {
  if (tree == 0) return InOrderBinaryTreeNode(rank, nranks);
  const bool mirror = nranks % 2 == 0;
  auto to_role = [&](int r) { return mirror ? nranks - 1 - r : (r - 1 + nranks) % nranks; };
  auto to_rank = [&](int role) { return mirror ? nranks - 1 - role : (role + 1) % nranks; };
  BinaryTreeNode node = InOrderBinaryTreeNode(to_role(rank), nranks);
  if (node.parent >= 0) node.parent = to_rank(node.parent);
  for (int& child : node.children) child = to_rank(child);
  return node;
}

// Height of `rank`'s subtree in NCCL's binary tree over n ranks (a leaf: 0).
// A rank other than 0 whose lowest set bit is 2^k always has its left child
// rank - 2^(k-1) (smaller, so present), hence height k; rank 0 sits above the
// largest power of two below n.
inline int InOrderBinaryTreeHeight(int rank, int nranks) {
  if (nranks <= 1) return 0;
  if (rank == 0) {
    int top = 1;
    while (top * 2 < nranks) top *= 2;
    return 1 + InOrderBinaryTreeHeight(top, nranks);
  }
  int height = 0;
  while ((rank & 1) == 0) {
    rank >>= 1;
    ++height;
  }
  return height;
}

// Height of `rank`'s subtree in tree `tree` of the double binary tree.
inline int DoubleBinaryTreeHeight(int tree, int rank, int nranks) {
  if (tree == 0) return InOrderBinaryTreeHeight(rank, nranks);
  const int role = nranks % 2 == 0 ? nranks - 1 - rank : (rank - 1 + nranks) % nranks;
  return InOrderBinaryTreeHeight(role, nranks);
}

// Depth of `rank` in tree `tree` (the root: 0), O(log n).
inline int DoubleBinaryTreeDepth(int tree, int rank, int nranks) {
  int depth = 0;
  for (int parent = DoubleBinaryTreeNode(tree, rank, nranks).parent; parent >= 0;
       parent = DoubleBinaryTreeNode(tree, parent, nranks).parent) {
    ++depth;
  }
  return depth;
}

// The root of tree `tree`.
inline int DoubleBinaryTreeRoot(int tree, int nranks) {
  if (tree == 0) return 0;
  return nranks % 2 == 0 ? nranks - 1 : 1 % nranks;
}

}  // namespace chorus
