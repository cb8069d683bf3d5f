#include "examples/trainer/conv2d.h"

#include <algorithm>
#include <cmath>

#include "examples/trainer/gemm.h"

#if defined(__SSE2__)
#include <xmmintrin.h>
#endif

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

int Conv2d::ImagesPerChunk(const ConvGeometry& g, long pixels, int n) const {
  const size_t image_bytes = static_cast<size_t>(g.patch_size()) * pixels * sizeof(float);
  return static_cast<int>(std::clamp<size_t>(chunk_bytes_ / image_bytes, 1, static_cast<size_t>(n)));
}

void Conv2d::Forward(const Tensor& input, Tensor* output) {
  const ConvGeometry g = GeometryFor(input.shape());
  const Shape out_shape = OutputShape(input.shape());
  const int n = input.shape().n;
  const long pixels = static_cast<long>(out_shape.h) * out_shape.w;
  const int chunk = ImagesPerChunk(g, pixels, n);
  columns_.resize(static_cast<size_t>(g.patch_size()) * chunk * pixels);
  products_.resize(static_cast<size_t>(out_channels_) * chunk * pixels);
  output->Resize(out_shape);
  const float* bias = weights_ + static_cast<size_t>(out_channels_) * g.patch_size();
  for (int first = 0; first < n; first += chunk) {
    const int count = std::min(chunk, n - first);
    const long chunk_stride = count * pixels;
    UnfoldChunk(input, g, first, count, pixels);
    GemmStrided(Transpose::kNo, Transpose::kNo, out_channels_, static_cast<int>(chunk_stride), g.patch_size(),
                1.0f, weights_, g.patch_size(), columns_.data(), static_cast<int>(chunk_stride), 0.0f,
                products_.data(), static_cast<int>(chunk_stride));
    // products_ is [channel][image][pixel]; the output is [image][channel][pixel].
    for (int i = 0; i < count; ++i) {
      for (int o = 0; o < out_channels_; ++o) {
        const float* __restrict from = products_.data() + o * chunk_stride + i * pixels;
        float* __restrict to = output->data() + (static_cast<long>(first + i) * out_channels_ + o) * pixels;
        const float b = bias[o];
        for (long p = 0; p < pixels; ++p) to[p] = from[p] + b;
      }
    }
  }
}

void Conv2d::UnfoldChunk(const Tensor& input, const ConvGeometry& g, int first, int count, long pixels) {
  const long chunk_stride = count * pixels;
  for (int i = first; i < first + count; ++i) {
    Im2Col(input.data() + i * input.shape().sample_size(), g, columns_.data() + (i - first) * pixels,
           chunk_stride);
  }
}

namespace {

// Copies one row of dOutput (`pixels` floats) to `to` and returns its sum,
// taken in pixel order as the plain loop did.
float CopyAndSumRow(const float* from, long pixels, float* to) {
  float sum = 0.0f;
  for (long p = 0; p < pixels; ++p) {
    to[p] = from[p];
    sum += from[p];
  }
  return sum;
}

#if defined(__SSE2__)
// Four rows at once: a 4x4 block is loaded row-wise (and stored as is), then
// transposed so that one vector addition advances all four sums by one
// pixel, in the same order as four separate scalar sums.
void CopyAndSumFourRows(const float* from, long pixels, float* to, long to_stride, float* sums) {
  const float* r0 = from;
  const float* r1 = from + pixels;
  const float* r2 = from + 2 * pixels;
  const float* r3 = from + 3 * pixels;
  __m128 total = _mm_setzero_ps();
  long p = 0;
  for (; p + 4 <= pixels; p += 4) {
    __m128 a = _mm_loadu_ps(r0 + p), b = _mm_loadu_ps(r1 + p), c = _mm_loadu_ps(r2 + p), d = _mm_loadu_ps(r3 + p);
    _mm_storeu_ps(to + p, a);
    _mm_storeu_ps(to + to_stride + p, b);
    _mm_storeu_ps(to + 2 * to_stride + p, c);
    _mm_storeu_ps(to + 3 * to_stride + p, d);
    _MM_TRANSPOSE4_PS(a, b, c, d);  // a = pixel p of the four rows, b = pixel p + 1, ...
    total = _mm_add_ps(total, a);
    total = _mm_add_ps(total, b);
    total = _mm_add_ps(total, c);
    total = _mm_add_ps(total, d);
  }
  _mm_storeu_ps(sums, total);
  for (int lane = 0; lane < 4; ++lane) {
    const float* row = from + lane * pixels;
    float* out = to + lane * to_stride;
    for (long q = p; q < pixels; ++q) {
      out[q] = row[q];
      sums[lane] += row[q];
    }
  }
}
#endif

}  // namespace

void Conv2d::GatherOutputGrads(const Tensor& output_grad, int first, int count, long pixels, float* bias_grad) {
  const long channel_stride = count * pixels;  // in products_
  for (int i = 0; i < count; ++i) {
    const float* image_grad = output_grad.data() + static_cast<long>(first + i) * out_channels_ * pixels;
    float* regrouped = products_.data() + i * pixels;
    int o = 0;
#if defined(__SSE2__)
    for (; o + 4 <= out_channels_; o += 4) {
      float sums[4];
      CopyAndSumFourRows(image_grad + o * pixels, pixels, regrouped + o * channel_stride, channel_stride, sums);
      for (int lane = 0; lane < 4; ++lane) bias_grad[o + lane] += sums[lane];
    }
#endif
    for (; o < out_channels_; ++o) {
      bias_grad[o] += CopyAndSumRow(image_grad + o * pixels, pixels, regrouped + o * channel_stride);
    }
  }
}

void Conv2d::Backward(const Tensor& input, const Tensor& /*output*/, const Tensor& output_grad,
                      Tensor* input_grad) {
  const ConvGeometry g = GeometryFor(input.shape());
  const int n = input.shape().n;
  const long pixels = static_cast<long>(g.out_height()) * g.out_width();
  float* bias_grad = gradients_ + static_cast<size_t>(out_channels_) * g.patch_size();
  const int chunk = ImagesPerChunk(g, pixels, n);
  columns_.resize(static_cast<size_t>(g.patch_size()) * chunk * pixels);
  products_.resize(static_cast<size_t>(out_channels_) * chunk * pixels);
  if (input_grad != nullptr) {
    column_grads_.resize(static_cast<size_t>(g.patch_size()) * chunk * pixels);
    input_grad->Resize(input.shape());
  }
  const long sample = input.shape().sample_size();
  // Chunk by chunk, each step on what the previous one left in L2.
  for (int first = 0; first < n; first += chunk) {
    const int count = std::min(chunk, n - first);
    const long chunk_stride = count * pixels;
    GatherOutputGrads(output_grad, first, count, pixels, bias_grad);
    // dW += dY * columns^T, the chunk's patches unfolded again.
    UnfoldChunk(input, g, first, count, pixels);
    GemmStrided(Transpose::kNo, Transpose::kYes, out_channels_, g.patch_size(), static_cast<int>(chunk_stride),
                1.0f, products_.data(), static_cast<int>(chunk_stride), columns_.data(),
                static_cast<int>(chunk_stride), 1.0f, gradients_, g.patch_size());
    if (input_grad == nullptr) continue;
    // dColumns = W^T * dY, then folded back into the images.
    GemmStrided(Transpose::kYes, Transpose::kNo, g.patch_size(), static_cast<int>(chunk_stride), out_channels_,
                1.0f, weights_, g.patch_size(), products_.data(), static_cast<int>(chunk_stride), 0.0f,
                column_grads_.data(), static_cast<int>(chunk_stride));
    for (int i = first; i < first + count; ++i) {
      float* image_grad = input_grad->data() + i * sample;
      std::fill(image_grad, image_grad + sample, 0.0f);
      Col2ImAdd(column_grads_.data() + (i - first) * pixels, g, chunk_stride, image_grad);
    }
  }
}

}  // namespace trainer
