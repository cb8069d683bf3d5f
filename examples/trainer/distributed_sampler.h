// DistributedSampler: the indices one rank visits in one epoch. Every epoch
// all ranks draw the same permutation (shared seed + epoch); rank r takes
// positions r, r + p, r + 2p, ... The permutation is cut to a multiple of p
// so every rank gets the same number of samples.
//
// Gossip mode (EnableRingShuffle, GossipGraD's distributed sample shuffle):
// each rank keeps a local set of n = samples_per_rank() rows, filled at the
// start with its epoch-0 shard. Every epoch all ranks visit their rows in one
// shared order (RowOrder), local_batch rows per step; after each step the
// batch just used moves one rank down the ring: rank r's rows receive rank
// r+1's rows at the same positions (rank r sends its own to rank r-1). All
// ranks read the same dataset files, so passing a sample is passing its
// index, and every rank can compute what its neighbour holds from the shared
// seed: no message is needed, and EpochIndices gives the result.
#pragma once

#include <cstdint>
#include <vector>

namespace trainer {

class DistributedSampler {
 public:
  DistributedSampler(int dataset_size, int nranks, int rank, uint64_t seed, bool shuffle = true)
      : dataset_size_(dataset_size), nranks_(nranks), rank_(rank), seed_(seed), shuffle_(shuffle) {}

  // Gossip mode: `steps_per_epoch` steps of `local_batch` rows each (at most
  // samples_per_rank() rows in all; rows past them stay put that epoch).
  void EnableRingShuffle(int local_batch, int steps_per_epoch) {
    ring_batch_ = local_batch;
    ring_steps_ = steps_per_epoch;
  }
  bool ring_shuffle() const { return ring_batch_ > 0; }

  // The samples visited in `epoch`, step s using [s * batch, (s + 1) * batch).
  std::vector<uint32_t> EpochIndices(int epoch) const;
  int samples_per_rank() const { return dataset_size_ / nranks_; }

  // Gossip mode: the order in which every rank visits its local rows in
  // `epoch` (the same on every rank, redrawn every epoch).
  std::vector<uint32_t> RowOrder(int epoch) const;

 private:
  std::vector<uint32_t> GlobalPermutation(int epoch) const;
  std::vector<uint32_t> RingShuffledIndices(int epoch) const;

  int dataset_size_;
  int nranks_;
  int rank_;
  uint64_t seed_;
  bool shuffle_;
  int ring_batch_ = 0;
  int ring_steps_ = 0;
};

}  // namespace trainer
