// DistributedSampler: the indices one rank visits in one epoch. Every epoch
// all ranks draw the same permutation (shared seed + epoch); rank r takes
// positions r, r + p, r + 2p, ... The permutation is cut to a multiple of p
// so every rank gets the same number of samples.
#pragma once

#include <cstdint>
#include <vector>

namespace trainer {

class DistributedSampler {
 public:
  DistributedSampler(int dataset_size, int nranks, int rank, uint64_t seed, bool shuffle = true)
      : dataset_size_(dataset_size), nranks_(nranks), rank_(rank), seed_(seed), shuffle_(shuffle) {}

  std::vector<uint32_t> EpochIndices(int epoch) const;
  int samples_per_rank() const { return dataset_size_ / nranks_; }

 private:
  int dataset_size_;
  int nranks_;
  int rank_;
  uint64_t seed_;
  bool shuffle_;
};

}  // namespace trainer
