#include "examples/trainer/distributed_sampler.h"

#include <algorithm>
#include <numeric>
#include <utility>

#include "examples/trainer/random.h"

namespace trainer {
namespace {

std::vector<uint32_t> Shuffled(size_t n, uint64_t seed) {
  std::vector<uint32_t> order(n);
  std::iota(order.begin(), order.end(), 0u);
  Rng rng(seed);
  for (size_t i = order.size(); i > 1; --i) std::swap(order[i - 1], order[rng.Below(i)]);
  return order;
}

std::vector<uint32_t> Identity(size_t n) {
  std::vector<uint32_t> order(n);
  std::iota(order.begin(), order.end(), 0u);
  return order;
}

}  // namespace

std::vector<uint32_t> DistributedSampler::GlobalPermutation(int epoch) const {
  if (!shuffle_) return Identity(dataset_size_);
  return Shuffled(dataset_size_, seed_ * 0x9e3779b97f4a7c15ull + static_cast<uint64_t>(epoch));
}

std::vector<uint32_t> DistributedSampler::EpochIndices(int epoch) const {
  if (ring_shuffle()) return RingShuffledIndices(epoch);
  const std::vector<uint32_t> order = GlobalPermutation(epoch);
  std::vector<uint32_t> mine;
  mine.reserve(samples_per_rank());
  for (int k = 0; k < samples_per_rank(); ++k) mine.push_back(order[static_cast<size_t>(k) * nranks_ + rank_]);
  return mine;
}

std::vector<uint32_t> DistributedSampler::RowOrder(int epoch) const {
  const size_t rows = static_cast<size_t>(samples_per_rank());
  if (!shuffle_) return Identity(rows);
  return Shuffled(rows, (seed_ ^ 0xd1b54a32d192ed03ull) * 0x9e3779b97f4a7c15ull + static_cast<uint64_t>(epoch));
}

// Row k of rank r, after row k has moved m times, holds rank (r + m) mod p's
// first occupant of row k. A row moves once in each epoch in which one of
// the epoch's steps used it.
std::vector<uint32_t> DistributedSampler::RingShuffledIndices(int epoch) const {
  const size_t rows = static_cast<size_t>(samples_per_rank());
  const size_t used = std::min(rows, static_cast<size_t>(ring_batch_) * static_cast<size_t>(ring_steps_));
  const std::vector<uint32_t> first = GlobalPermutation(0);
  std::vector<uint32_t> moves(rows, 0);
  for (int e = 0; e < epoch; ++e) {
    const std::vector<uint32_t> order = RowOrder(e);
    for (size_t j = 0; j < used; ++j) ++moves[order[j]];
  }
  const std::vector<uint32_t> order = RowOrder(epoch);
  std::vector<uint32_t> mine(rows);
  for (size_t j = 0; j < rows; ++j) {
    const uint32_t row = order[j];
    const size_t holder = (static_cast<size_t>(rank_) + moves[row]) % static_cast<size_t>(nranks_);
    mine[j] = first[static_cast<size_t>(row) * nranks_ + holder];
  }
  return mine;
}

}  // namespace trainer
