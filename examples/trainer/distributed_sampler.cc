#include "examples/trainer/distributed_sampler.h"

#include <numeric>
#include <utility>

#include "examples/trainer/random.h"

namespace trainer {

std::vector<uint32_t> DistributedSampler::EpochIndices(int epoch) const {
  std::vector<uint32_t> order(dataset_size_);
  std::iota(order.begin(), order.end(), 0u);
  if (shuffle_) {
    Rng rng(seed_ * 0x9e3779b97f4a7c15ull + static_cast<uint64_t>(epoch));
    for (size_t i = order.size(); i > 1; --i) std::swap(order[i - 1], order[rng.Below(i)]);
  }
  std::vector<uint32_t> mine;
  mine.reserve(samples_per_rank());
  for (int k = 0; k < samples_per_rank(); ++k) mine.push_back(order[static_cast<size_t>(k) * nranks_ + rank_]);
  return mine;
}

}  // namespace trainer
