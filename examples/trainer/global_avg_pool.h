// GlobalAvgPool: the mean of each channel plane, [n, c, h, w] -> [n, c, 1, 1]
// (the classifier head of network-in-network, in place of FC layers).
#pragma once

#include "examples/trainer/layer.h"

namespace trainer {

class GlobalAvgPool : public Layer {
 public:
  std::string name() const override { return "global-avg-pool"; }
  Shape OutputShape(const Shape& input) const override { return Shape{input.n, input.c, 1, 1}; }
  void Forward(const Tensor& input, Tensor* output) override;
  void Backward(const Tensor& input, const Tensor& output, const Tensor& output_grad,
                Tensor* input_grad) override;
};

}  // namespace trainer
