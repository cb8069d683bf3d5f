#include "examples/trainer/softmax_cross_entropy.h"

#include <algorithm>
#include <cmath>

namespace trainer {

LossResult SoftmaxCrossEntropy(const Tensor& logits, const std::vector<uint8_t>& labels, Tensor* logits_grad) {
  const int n = logits.shape().n;
  const int classes = static_cast<int>(logits.shape().sample_size());
  if (logits_grad != nullptr) logits_grad->Resize(logits.shape());
  LossResult result;
  double total = 0.0;
  for (int i = 0; i < n; ++i) {
    const float* row = logits.data() + static_cast<size_t>(i) * classes;
    const int label = labels[i];
    const int predicted = static_cast<int>(std::max_element(row, row + classes) - row);
    if (predicted == label) ++result.correct;
    // Shift by the max so that exp never overflows.
    const double top = row[predicted];
    double denominator = 0.0;
    for (int k = 0; k < classes; ++k) denominator += std::exp(static_cast<double>(row[k]) - top);
    total += std::log(denominator) - (static_cast<double>(row[label]) - top);
    if (logits_grad != nullptr) {
      float* grad = logits_grad->data() + static_cast<size_t>(i) * classes;
      for (int k = 0; k < classes; ++k) {
        const double probability = std::exp(static_cast<double>(row[k]) - top) / denominator;
        grad[k] = static_cast<float>((probability - (k == label ? 1.0 : 0.0)) / n);
      }
    }
  }
  result.mean_loss = n > 0 ? total / n : 0.0;
  return result;
}

}  // namespace trainer
