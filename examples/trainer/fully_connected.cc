#include "examples/trainer/fully_connected.h"

#include <cmath>

#include "examples/trainer/gemm.h"

namespace trainer {

std::string FullyConnected::name() const {
  return "fc " + std::to_string(inputs_) + "->" + std::to_string(outputs_);
}

void FullyConnected::BindParameters(float* weights, float* gradients) {
  weights_ = weights;
  gradients_ = gradients;
}

void FullyConnected::InitializeParameters(Rng& rng) {
  const double scale = std::sqrt(2.0 / static_cast<double>(inputs_));
  const size_t matrix = static_cast<size_t>(outputs_) * inputs_;
  for (size_t i = 0; i < matrix; ++i) weights_[i] = static_cast<float>(rng.Normal() * scale);
  for (int o = 0; o < outputs_; ++o) weights_[matrix + o] = 0.0f;
}

void FullyConnected::Forward(const Tensor& input, Tensor* output) {
  const int n = input.shape().n;
  output->Resize(OutputShape(input.shape()));
  const float* bias = weights_ + static_cast<size_t>(outputs_) * inputs_;
  for (int i = 0; i < n; ++i) {
    for (int o = 0; o < outputs_; ++o) (*output)[static_cast<size_t>(i) * outputs_ + o] = bias[o];
  }
  Gemm(Transpose::kNo, Transpose::kYes, n, outputs_, inputs_, 1.0f, input.data(), weights_, 1.0f,
       output->data());
}

void FullyConnected::Backward(const Tensor& input, const Tensor& /*output*/, const Tensor& output_grad,
                              Tensor* input_grad) {
  const int n = input.shape().n;
  // dW += dY^T X ; db += column sums of dY ; dX = dY W
  Gemm(Transpose::kYes, Transpose::kNo, outputs_, inputs_, n, 1.0f, output_grad.data(), input.data(), 1.0f,
       gradients_);
  float* bias_grad = gradients_ + static_cast<size_t>(outputs_) * inputs_;
  for (int i = 0; i < n; ++i) {
    for (int o = 0; o < outputs_; ++o) bias_grad[o] += output_grad[static_cast<size_t>(i) * outputs_ + o];
  }
  if (input_grad == nullptr) return;
  input_grad->Resize(input.shape());
  Gemm(Transpose::kNo, Transpose::kNo, n, inputs_, outputs_, 1.0f, output_grad.data(), weights_, 0.0f,
       input_grad->data());
}

}  // namespace trainer
