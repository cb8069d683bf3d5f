#include "examples/trainer/relu.h"

namespace trainer {

// Both loops are selects on raw, non-aliasing pointers so that they
// vectorise; a NaN input gives 0 as before (the comparison is false).
void Relu::Forward(const Tensor& input, Tensor* output) {
  output->Resize(input.shape());
  const size_t size = input.size();
  const float* __restrict in = input.data();
  float* __restrict out = output->data();
  for (size_t i = 0; i < size; ++i) out[i] = in[i] > 0.0f ? in[i] : 0.0f;
}

void Relu::Backward(const Tensor& input, const Tensor& /*output*/, const Tensor& output_grad,
                    Tensor* input_grad) {
  if (input_grad == nullptr) return;
  input_grad->Resize(input.shape());
  const size_t size = input.size();
  const float* __restrict in = input.data();
  const float* __restrict grad = output_grad.data();
  float* __restrict out = input_grad->data();
  for (size_t i = 0; i < size; ++i) {
    const float g = grad[i];  // read unconditionally: a conditional load blocks vectorisation
    out[i] = in[i] > 0.0f ? g : 0.0f;
  }
}

}  // namespace trainer
