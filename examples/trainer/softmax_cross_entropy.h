// Softmax cross-entropy loss over logits [n, classes]: the mean over the
// batch of -log softmax(logits)[label], its gradient, and the number of
// samples whose arg-max is the label.
#pragma once

#include <cstdint>
#include <vector>

#include "examples/trainer/tensor.h"

namespace trainer {

struct LossResult {
  double mean_loss = 0.0;
  int correct = 0;
};

// Writes dLoss/dLogits into `logits_grad` when it is not null.
LossResult SoftmaxCrossEntropy(const Tensor& logits, const std::vector<uint8_t>& labels, Tensor* logits_grad);

}  // namespace trainer
