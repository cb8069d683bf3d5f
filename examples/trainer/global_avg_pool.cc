#include "examples/trainer/global_avg_pool.h"

namespace trainer {

void GlobalAvgPool::Forward(const Tensor& input, Tensor* output) {
  const Shape in = input.shape();
  output->Resize(OutputShape(in));
  const long area = static_cast<long>(in.h) * in.w;
  for (long plane = 0; plane < static_cast<long>(in.n) * in.c; ++plane) {
    double sum = 0.0;
    for (long p = 0; p < area; ++p) sum += input[plane * area + p];
    (*output)[plane] = static_cast<float>(sum / static_cast<double>(area));
  }
}

void GlobalAvgPool::Backward(const Tensor& input, const Tensor& /*output*/, const Tensor& output_grad,
                             Tensor* input_grad) {
  if (input_grad == nullptr) return;
  const Shape in = input.shape();
  input_grad->Resize(in);
  const long area = static_cast<long>(in.h) * in.w;
  const float inverse_area = 1.0f / static_cast<float>(area);
  for (long plane = 0; plane < static_cast<long>(in.n) * in.c; ++plane) {
    const float share = output_grad[plane] * inverse_area;
    for (long p = 0; p < area; ++p) (*input_grad)[plane * area + p] = share;
  }
}

}  // namespace trainer
