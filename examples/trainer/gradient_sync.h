// GradientSync: the data-parallel collectives of a training step, over a
// chorus communicator. Gradients are summed by chorusAllReduce, either as
// one fused buffer or in buckets of a fixed size, then divided by the number
// of ranks. A null communicator means one rank: every call is local.
#pragma once

#include <cstddef>
#include <vector>

#include "base/status.h"
#include "chorus/chorus.h"

namespace trainer {

class GradientSync {
 public:
  // bucket_bytes == 0: one AllReduce over the whole gradient.
  GradientSync(chorusComm_t comm, size_t bucket_bytes);

  int rank() const { return rank_; }
  int nranks() const { return nranks_; }

  // Copies rank 0's weights to every rank.
  chorus::Status BroadcastWeights(std::vector<float>& weights);
  // gradients = mean over ranks of gradients.
  chorus::Status AverageGradients(std::vector<float>& gradients);
  // values[i] = sum over ranks of values[i] (metrics: losses, counts).
  chorus::Status SumAcrossRanks(std::vector<double>& values);

 private:
  chorus::Status Check(chorusResult_t result, const char* what) const;

  chorusComm_t comm_;
  size_t bucket_floats_;
  int rank_ = 0;
  int nranks_ = 1;
};

}  // namespace trainer
