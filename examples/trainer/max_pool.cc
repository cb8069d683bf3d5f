#include "examples/trainer/max_pool.h"

namespace trainer {

Shape MaxPool::OutputShape(const Shape& input) const {
  return Shape{input.n, input.c, input.h / window_, input.w / window_};
}

void MaxPool::Forward(const Tensor& input, Tensor* output) {
  const Shape in = input.shape();
  const Shape out = OutputShape(in);
  output->Resize(out);
  argmax_.resize(out.size());
  long o = 0;
  for (long plane = 0; plane < static_cast<long>(in.n) * in.c; ++plane) {
    const long base = plane * in.h * in.w;
    for (int oy = 0; oy < out.h; ++oy) {
      for (int ox = 0; ox < out.w; ++ox, ++o) {
        long best = base + static_cast<long>(oy * window_) * in.w + ox * window_;
        for (int dy = 0; dy < window_; ++dy) {
          for (int dx = 0; dx < window_; ++dx) {
            const long at = base + static_cast<long>(oy * window_ + dy) * in.w + ox * window_ + dx;
            if (input[at] > input[best]) best = at;
          }
        }
        argmax_[o] = best;
        (*output)[o] = input[best];
      }
    }
  }
}

void MaxPool::Backward(const Tensor& input, const Tensor& /*output*/, const Tensor& output_grad,
                       Tensor* input_grad) {
  input_grad->Resize(input.shape());
  input_grad->Zero();
  for (size_t o = 0; o < output_grad.size(); ++o) (*input_grad)[argmax_[o]] += output_grad[o];
}

}  // namespace trainer
