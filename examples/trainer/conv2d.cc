#include "examples/trainer/conv2d.h"

#include <cmath>

#include "examples/trainer/gemm.h"

namespace trainer {

Conv2d::Conv2d(int in_channels, int out_channels, int kernel, int stride, int pad)
    : in_channels_(in_channels), out_channels_(out_channels), kernel_(kernel), stride_(stride), pad_(pad) {}

std::string Conv2d::name() const {
  return "conv" + std::to_string(kernel_) + "x" + std::to_string(kernel_) + " " + std::to_string(in_channels_) +
         "->" + std::to_string(out_channels_);
}

ConvGeometry Conv2d::GeometryFor(const Shape& input) const {
  return ConvGeometry{input.c, input.h, input.w, kernel_, stride_, pad_};
}

Shape Conv2d::OutputShape(const Shape& input) const {
  const ConvGeometry g = GeometryFor(input);
  return Shape{input.n, out_channels_, g.out_height(), g.out_width()};
}

size_t Conv2d::ParameterCount() const {
  return static_cast<size_t>(out_channels_) * in_channels_ * kernel_ * kernel_ + out_channels_;
}

void Conv2d::BindParameters(float* weights, float* gradients) {
  weights_ = weights;
  gradients_ = gradients;
}

void Conv2d::InitializeParameters(Rng& rng) {
  const size_t fan_in = static_cast<size_t>(in_channels_) * kernel_ * kernel_;
  const double scale = std::sqrt(2.0 / static_cast<double>(fan_in));
  const size_t kernel_floats = fan_in * out_channels_;
  for (size_t i = 0; i < kernel_floats; ++i) weights_[i] = static_cast<float>(rng.Normal() * scale);
  for (int o = 0; o < out_channels_; ++o) weights_[kernel_floats + o] = 0.0f;
}

void Conv2d::Unfold(const Tensor& input, const ConvGeometry& g) {
  const long pixels = static_cast<long>(g.out_height()) * g.out_width();
  const long row_stride = pixels * input.shape().n;
  columns_.resize(static_cast<size_t>(g.patch_size()) * row_stride);
  for (int i = 0; i < input.shape().n; ++i) {
    Im2Col(input.data() + i * input.shape().sample_size(), g, columns_.data() + i * pixels, row_stride);
  }
}

void Conv2d::Forward(const Tensor& input, Tensor* output) {
  const ConvGeometry g = GeometryFor(input.shape());
  const Shape out_shape = OutputShape(input.shape());
  const int n = input.shape().n;
  const long pixels = static_cast<long>(out_shape.h) * out_shape.w;
  Unfold(input, g);
  products_.resize(static_cast<size_t>(out_channels_) * n * pixels);
  Gemm(Transpose::kNo, Transpose::kNo, out_channels_, static_cast<int>(n * pixels), g.patch_size(), 1.0f,
       weights_, columns_.data(), 0.0f, products_.data());
  // products_ is [channel][image][pixel]; the output is [image][channel][pixel].
  output->Resize(out_shape);
  const float* bias = weights_ + static_cast<size_t>(out_channels_) * g.patch_size();
  for (int i = 0; i < n; ++i) {
    for (int o = 0; o < out_channels_; ++o) {
      const float* from = products_.data() + (static_cast<long>(o) * n + i) * pixels;
      float* to = output->data() + (static_cast<long>(i) * out_channels_ + o) * pixels;
      for (long p = 0; p < pixels; ++p) to[p] = from[p] + bias[o];
    }
  }
}

void Conv2d::Backward(const Tensor& input, const Tensor& /*output*/, const Tensor& output_grad,
                      Tensor* input_grad) {
  const ConvGeometry g = GeometryFor(input.shape());
  const int n = input.shape().n;
  const long pixels = static_cast<long>(g.out_height()) * g.out_width();
  const long row_stride = pixels * n;
  // Regroup dOutput as [channel][image][pixel] (products_ is free now) and
  // sum it per channel for the bias.
  products_.resize(static_cast<size_t>(out_channels_) * row_stride);
  float* bias_grad = gradients_ + static_cast<size_t>(out_channels_) * g.patch_size();
  for (int i = 0; i < n; ++i) {
    for (int o = 0; o < out_channels_; ++o) {
      const float* from = output_grad.data() + (static_cast<long>(i) * out_channels_ + o) * pixels;
      float* to = products_.data() + (static_cast<long>(o) * n + i) * pixels;
      float sum = 0.0f;
      for (long p = 0; p < pixels; ++p) {
        to[p] = from[p];
        sum += from[p];
      }
      bias_grad[o] += sum;
    }
  }
  Unfold(input, g);  // recomputed rather than kept: halves the memory of a step
  // dW += dY * columns^T
  Gemm(Transpose::kNo, Transpose::kYes, out_channels_, g.patch_size(), static_cast<int>(row_stride), 1.0f,
       products_.data(), columns_.data(), 1.0f, gradients_);
  // dColumns = W^T * dY, then fold back into the images.
  Gemm(Transpose::kYes, Transpose::kNo, g.patch_size(), static_cast<int>(row_stride), out_channels_, 1.0f,
       weights_, products_.data(), 0.0f, columns_.data());
  input_grad->Resize(input.shape());
  input_grad->Zero();
  for (int i = 0; i < n; ++i) {
    Col2ImAdd(columns_.data() + i * pixels, g, row_stride, input_grad->data() + i * input.shape().sample_size());
  }
}

}  // namespace trainer
