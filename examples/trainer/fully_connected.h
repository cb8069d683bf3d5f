// FullyConnected: y = x W^T + b over the flattened sample ([n, c*h*w] ->
// [n, outputs, 1, 1]), one OpenBLAS GEMM per pass.
#pragma once

#include "examples/trainer/layer.h"

namespace trainer {

class FullyConnected : public Layer {
 public:
  FullyConnected(int inputs, int outputs) : inputs_(inputs), outputs_(outputs) {}

  std::string name() const override;
  Shape OutputShape(const Shape& input) const override { return Shape{input.n, outputs_, 1, 1}; }
  size_t ParameterCount() const override { return static_cast<size_t>(outputs_) * inputs_ + outputs_; }
  void BindParameters(float* weights, float* gradients) override;
  void InitializeParameters(Rng& rng) override;
  void Forward(const Tensor& input, Tensor* output) override;
  void Backward(const Tensor& input, const Tensor& output, const Tensor& output_grad,
                Tensor* input_grad) override;

 private:
  int inputs_;
  int outputs_;
  float* weights_ = nullptr;  // [outputs, inputs], then bias [outputs]
  float* gradients_ = nullptr;
};

}  // namespace trainer
