// ReLU: max(0, x) elementwise.
#pragma once

#include "examples/trainer/layer.h"

namespace trainer {

class Relu : public Layer {
 public:
  std::string name() const override { return "relu"; }
  Shape OutputShape(const Shape& input) const override { return input; }
  void Forward(const Tensor& input, Tensor* output) override;
  void Backward(const Tensor& input, const Tensor& output, const Tensor& output_grad,
                Tensor* input_grad) override;
};

}  // namespace trainer
