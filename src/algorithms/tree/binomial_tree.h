// Binomial tree over virtual ranks 0..p-1 rooted at 0 (FireCaffe's reduction
// tree): virtual rank v's parent is v with its lowest set bit cleared, and its
// children are v + 2^k for every 2^k below that bit (and below p).
// Real rank = (virtual + root) % p, so any root works.
#pragma once

#include <vector>

namespace chorus {

struct BinomialNode {
  int parent = -1;            // real rank; -1 at the root
  std::vector<int> children;  // real ranks, smallest subtree first
};

inline BinomialNode BinomialTreeNode(int rank, int root, int nranks) {
  const int vrank = (rank - root + nranks) % nranks;
  BinomialNode node;
  int mask = 1;
  while (mask < nranks) {
    if (vrank & mask) {
      node.parent = (vrank - mask + root) % nranks;
      break;
    }
    if (vrank + mask < nranks) node.children.push_back((vrank + mask + root) % nranks);
    mask <<= 1;
  }
  return node;
}

}  // namespace chorus
