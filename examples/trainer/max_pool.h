// MaxPool: non-overlapping window x window max pooling (stride = window;
// trailing rows/columns that do not fill a window are dropped).
#pragma once

#include <cstdint>
#include <vector>

#include "examples/trainer/layer.h"

namespace trainer {

class MaxPool : public Layer {
 public:
  explicit MaxPool(int window = 2) : window_(window) {}

  std::string name() const override { return "maxpool" + std::to_string(window_); }
  Shape OutputShape(const Shape& input) const override;
  void Forward(const Tensor& input, Tensor* output) override;
  void Backward(const Tensor& input, const Tensor& output, const Tensor& output_grad,
                Tensor* input_grad) override;

 private:
  int window_;
  // Per output, the tap dy * window + dx of its maximum (from Forward).
  std::vector<int32_t> argmax_taps_;
};

}  // namespace trainer
