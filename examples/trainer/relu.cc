#include "examples/trainer/relu.h"

namespace trainer {

void Relu::Forward(const Tensor& input, Tensor* output) {
  output->Resize(input.shape());
  for (size_t i = 0; i < input.size(); ++i) (*output)[i] = input[i] > 0.0f ? input[i] : 0.0f;
}

void Relu::Backward(const Tensor& input, const Tensor& /*output*/, const Tensor& output_grad,
                    Tensor* input_grad) {
  input_grad->Resize(input.shape());
  for (size_t i = 0; i < input.size(); ++i) (*input_grad)[i] = input[i] > 0.0f ? output_grad[i] : 0.0f;
}

}  // namespace trainer
