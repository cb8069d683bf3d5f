// Layers of the trainer: exact small cases, and every gradient against
// central finite differences.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <cmath>
#include <cstring>
#include <limits>
#include <numeric>

#include "examples/trainer/conv2d.h"
#include "examples/trainer/fully_connected.h"
#include "examples/trainer/gemm.h"
#include "examples/trainer/global_avg_pool.h"
#include "examples/trainer/im2col.h"
#include "examples/trainer/max_pool.h"
#include "examples/trainer/models.h"
#include "examples/trainer/relu.h"
#include "examples/trainer/softmax_cross_entropy.h"
#include "tests/trainer/gradient_check.h"

namespace trainer_test {
namespace {

using namespace trainer;

// A layer with parameters in its own flat buffers, as a model would bind them.
template <typename L>
struct Bound {
  template <typename... Args>
  explicit Bound(uint64_t seed, Args... args) : layer(args...) {
    weights.assign(layer.ParameterCount(), 0.0f);
    gradients.assign(layer.ParameterCount(), 0.0f);
    layer.BindParameters(weights.data(), gradients.data());
    Rng rng(seed);
    layer.InitializeParameters(rng);
    // Non-zero biases so that their path is exercised too.
    for (float& w : weights) w += static_cast<float>(0.1 * rng.Uniform());
  }
  L layer;
  std::vector<float> weights;
  std::vector<float> gradients;
};

Tensor RandomTensor(Shape shape, uint64_t seed) {
  Tensor t(shape);
  Rng rng(seed);
  FillUniform(&t, rng, -1.0, 1.0);
  return t;
}

TEST(TrainerGemm, MatchesHandComputedProducts) {
  const float a[6] = {1, 2, 3, 4, 5, 6};   // 2x3
  const float b[6] = {7, 8, 9, 10, 11, 12};  // 3x2
  float c[4] = {1, 1, 1, 1};
  Gemm(Transpose::kNo, Transpose::kNo, 2, 2, 3, 1.0f, a, b, 0.0f, c);
  EXPECT_EQ(std::vector<float>(c, c + 4), (std::vector<float>{58, 64, 139, 154}));
  // a^T (3x2) times a (2x3), accumulated onto 1s.
  float d[9];
  std::fill(d, d + 9, 1.0f);
  Gemm(Transpose::kYes, Transpose::kNo, 3, 3, 2, 1.0f, a, a, 1.0f, d);
  EXPECT_EQ(std::vector<float>(d, d + 9), (std::vector<float>{18, 23, 28, 23, 30, 37, 28, 37, 46}));
}

TEST(TrainerIm2Col, UnfoldsPaddedPatches) {
  // One 2x2 channel, 3x3 kernel with pad 1: each of the 4 outputs sees the
  // whole image at a different offset.
  const float image[4] = {1, 2, 3, 4};
  const ConvGeometry g{1, 2, 2, 3, 1, 1};
  ASSERT_EQ(g.out_height(), 2);
  std::vector<float> columns(9 * 4, -1.0f);
  Im2Col(image, g, columns.data(), 4);
  // Row (ky, kx) = (1, 1) is the centre tap: the image itself.
  EXPECT_EQ(std::vector<float>(columns.begin() + 16, columns.begin() + 20), (std::vector<float>{1, 2, 3, 4}));
  // Row (0, 0): the pixel up-left of each output.
  EXPECT_EQ(std::vector<float>(columns.begin(), columns.begin() + 4), (std::vector<float>{0, 0, 0, 1}));
  // Col2Im of all-ones columns counts how many taps see each pixel: 4 each.
  std::vector<float> ones(36, 1.0f), back(4, 0.0f);
  Col2ImAdd(ones.data(), g, 4, back.data());
  EXPECT_EQ(back, (std::vector<float>{4, 4, 4, 4}));
}

// The plain loops Im2Col/Col2ImAdd must reproduce bit for bit: a bounds test
// per tap, additions in (c, ky, kx, oy, ox) order.
void ReferenceIm2Col(const float* image, const ConvGeometry& g, float* columns, long row_stride) {
  for (int c = 0; c < g.channels; ++c) {
    for (int ky = 0; ky < g.kernel; ++ky) {
      for (int kx = 0; kx < g.kernel; ++kx) {
        float* row = columns + ((static_cast<long>(c) * g.kernel + ky) * g.kernel + kx) * row_stride;
        for (int oy = 0; oy < g.out_height(); ++oy) {
          for (int ox = 0; ox < g.out_width(); ++ox) {
            const int y = oy * g.stride - g.pad + ky, x = ox * g.stride - g.pad + kx;
            const bool inside = y >= 0 && y < g.height && x >= 0 && x < g.width;
            row[oy * g.out_width() + ox] = inside ? image[(static_cast<long>(c) * g.height + y) * g.width + x] : 0.0f;
          }
        }
      }
    }
  }
}

void ReferenceCol2ImAdd(const float* columns, const ConvGeometry& g, long row_stride, float* image) {
  for (int c = 0; c < g.channels; ++c) {
    for (int ky = 0; ky < g.kernel; ++ky) {
      for (int kx = 0; kx < g.kernel; ++kx) {
        const float* row = columns + ((static_cast<long>(c) * g.kernel + ky) * g.kernel + kx) * row_stride;
        for (int oy = 0; oy < g.out_height(); ++oy) {
          for (int ox = 0; ox < g.out_width(); ++ox) {
            const int y = oy * g.stride - g.pad + ky, x = ox * g.stride - g.pad + kx;
            if (y >= 0 && y < g.height && x >= 0 && x < g.width) {
              image[(static_cast<long>(c) * g.height + y) * g.width + x] += row[oy * g.out_width() + ox];
            }
          }
        }
      }
    }
  }
}

std::vector<float> RandomFloats(size_t count, uint64_t seed) {
  Rng rng(seed);
  std::vector<float> v(count);
  // Mixed magnitudes make any change in the order of additions visible.
  for (float& x : v) x = static_cast<float>((rng.Uniform() - 0.5) * (rng.Uniform() < 0.5 ? 1e-3 : 1e3));
  return v;
}

bool SameBits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

TEST(TrainerIm2Col, MatchesPlainLoopsBitForBitOnOddShapes) {
  int cases = 0;
  for (int channels : {1, 3}) {
    for (int kernel : {1, 3, 5}) {
      for (int stride : {1, 2, 3}) {
        for (int pad : {0, 1, 2, 3}) {
          for (auto [height, width] : {std::pair{5, 7}, std::pair{8, 3}, std::pair{3, 11}, std::pair{1, 1}}) {
            const ConvGeometry g{channels, height, width, kernel, stride, pad};
            if (height + 2 * pad < kernel || width + 2 * pad < kernel) continue;  // no whole window
            ++cases;
            SCOPED_TRACE(testing::Message() << "c" << channels << " " << height << "x" << width << " k" << kernel
                                            << " s" << stride << " p" << pad);
            const long pixels = static_cast<long>(g.out_height()) * g.out_width();
            // The image sits at column offset 1 of rows 2 * pixels + 3 wide, as
            // the second image of a batch would; the rest must stay untouched.
            const long row_stride = 2 * pixels + 3;
            const size_t column_floats = static_cast<size_t>(g.patch_size()) * row_stride;
            const std::vector<float> image =
                RandomFloats(static_cast<size_t>(channels) * height * width, 100 + cases);
            std::vector<float> expected(column_floats, -7.0f), actual(column_floats, -7.0f);
            ReferenceIm2Col(image.data(), g, expected.data() + 1, row_stride);
            Im2Col(image.data(), g, actual.data() + 1, row_stride);
            EXPECT_TRUE(SameBits(actual, expected));

            const std::vector<float> columns = RandomFloats(column_floats, 200 + cases);
            std::vector<float> expected_image = RandomFloats(image.size(), 300 + cases);
            std::vector<float> actual_image = expected_image;
            ReferenceCol2ImAdd(columns.data() + 1, g, row_stride, expected_image.data());
            Col2ImAdd(columns.data() + 1, g, row_stride, actual_image.data());
            EXPECT_TRUE(SameBits(actual_image, expected_image));
          }
        }
      }
    }
  }
  EXPECT_EQ(cases, 258);
}

TEST(TrainerGemm, StridedProductReadsAndWritesOnlyItsSubMatrices) {
  // a is the 2x2 block at column 1 of a 2x4 array, b the 2x3 block at
  // column 2 of a 2x5 array, c the 2x3 block at column 1 of a 2x5 array.
  const float a[8] = {9, 1, 2, 9, 9, 3, 4, 9};
  const float b[10] = {9, 9, 5, 6, 7, 9, 9, 8, 9, 10};
  float c[10];
  std::fill(c, c + 10, -1.0f);
  GemmStrided(Transpose::kNo, Transpose::kNo, 2, 3, 2, 1.0f, a + 1, 4, b + 2, 5, 0.0f, c + 1, 5);
  EXPECT_EQ(std::vector<float>(c, c + 10), (std::vector<float>{-1, 21, 24, 27, -1, -1, 47, 54, 61, -1}));
}

// Plain-loop convolution in double, stride 1: the reference for a batch
// that Conv2d splits into chunks.
struct DirectConvolution {
  DirectConvolution(const Tensor& input, const std::vector<float>& weights, int out_channels, int kernel, int pad,
                    const Tensor& output_grad)
      : n(input.shape().n), c(input.shape().c), h(input.shape().h), w(input.shape().w), k(kernel) {
    const int oh = h + 2 * pad - k + 1, ow = w + 2 * pad - k + 1;
    const size_t patch = static_cast<size_t>(c) * k * k;
    output.assign(static_cast<size_t>(n) * out_channels * oh * ow, 0.0);
    weight_grad.assign(patch * out_channels + out_channels, 0.0);
    input_grad.assign(input.size(), 0.0);
    for (int i = 0; i < n; ++i) {
      for (int o = 0; o < out_channels; ++o) {
        for (int y = 0; y < oh; ++y) {
          for (int x = 0; x < ow; ++x) {
            const size_t at = ((static_cast<size_t>(i) * out_channels + o) * oh + y) * ow + x;
            const double g = output_grad[at];
            double sum = weights[patch * out_channels + o];
            weight_grad[patch * out_channels + o] += g;
            for (int ch = 0; ch < c; ++ch) {
              for (int ky = 0; ky < k; ++ky) {
                for (int kx = 0; kx < k; ++kx) {
                  const int iy = y + ky - pad, ix = x + kx - pad;
                  if (iy < 0 || iy >= h || ix < 0 || ix >= w) continue;
                  const size_t in_at = ((static_cast<size_t>(i) * c + ch) * h + iy) * w + ix;
                  const size_t w_at = o * patch + (static_cast<size_t>(ch) * k + ky) * k + kx;
                  sum += static_cast<double>(weights[w_at]) * input[in_at];
                  weight_grad[w_at] += g * input[in_at];
                  input_grad[in_at] += g * weights[w_at];
                }
              }
            }
            output[at] = sum;
          }
        }
      }
    }
  }
  int n, c, h, w, k;
  std::vector<double> output, weight_grad, input_grad;
};

void ExpectClose(const float* actual, const std::vector<double>& expected, const char* what) {
  for (size_t i = 0; i < expected.size(); ++i) {
    ASSERT_NEAR(actual[i], expected[i], 1e-4 * (1.0 + std::fabs(expected[i]))) << what << " [" << i << "]";
  }
}

TEST(TrainerConv2d, BatchInChunksMatchesDirectConvolution) {
  // 4x3x3 patches over 40x40 pixels are 230 KB per image, so the 5 images
  // go through the GEMMs as chunks of 2, 2 and 1.
  Bound<Conv2d> conv(40, 4, 3, 3, 1, 1);
  const Tensor input = RandomTensor(Shape{5, 4, 40, 40}, 41);
  Tensor output, input_grad;
  conv.layer.Forward(input, &output);
  ASSERT_EQ(output.shape(), (Shape{5, 3, 40, 40}));
  const Tensor output_grad = RandomTensor(output.shape(), 42);
  conv.layer.Backward(input, output, output_grad, &input_grad);
  const DirectConvolution expected(input, conv.weights, 3, 3, 1, output_grad);
  ExpectClose(output.data(), expected.output, "output");
  ExpectClose(conv.gradients.data(), expected.weight_grad, "weight and bias gradients");
  ASSERT_EQ(input_grad.shape(), input.shape());
  ExpectClose(input_grad.data(), expected.input_grad, "input gradient");
}

void ExpectWithinRounding(const float* actual, const float* expected, size_t n, size_t chunk_bytes,
                          const char* what) {
  for (size_t i = 0; i < n; ++i) {
    ASSERT_NEAR(actual[i], expected[i], 1e-5 * (1.0 + std::fabs(expected[i]))) << what << " " << chunk_bytes << " " << i;
  }
}

TEST(TrainerConv2d, ChunkSizeChangesOnlyRounding) {
  // LeNet's second convolution on 7 images: chunks of 1, 3 (+1), 4 (+3) and
  // the whole batch in one GEMM. The GEMMs see other matrix shapes per chunk
  // size, and BLAS does not promise the same bits across shapes (OpenBLAS's
  // kernels differ between AVX2 and AVX-512 hosts), so outputs and gradients
  // agree within float rounding. The bias gradients are summed by the layer's
  // own loop in image order whatever the chunks: those keep their bits.
  const Tensor input = RandomTensor(Shape{7, 20, 12, 12}, 43);
  const Tensor output_grad = RandomTensor(Shape{7, 50, 8, 8}, 44);
  struct Result {
    Tensor output, input_grad;
    std::vector<float> gradients;
  };
  auto run = [&](size_t chunk_bytes) {
    Bound<Conv2d> conv(45, 20, 50, 5);
    conv.layer.set_chunk_bytes(chunk_bytes);
    Result r;
    conv.layer.Forward(input, &r.output);
    conv.layer.Backward(input, r.output, output_grad, &r.input_grad);
    r.gradients = conv.gradients;
    return r;
  };
  const size_t image_bytes = 500 * 64 * sizeof(float);
  const Result whole = run(SIZE_MAX);
  for (size_t chunk_bytes : {image_bytes, 3 * image_bytes, 4 * image_bytes + 1, Conv2d::kDefaultChunkBytes}) {
    const Result chunked = run(chunk_bytes);
    ASSERT_EQ(chunked.output.shape(), whole.output.shape());
    ASSERT_EQ(chunked.input_grad.shape(), whole.input_grad.shape());
    ExpectWithinRounding(chunked.output.data(), whole.output.data(), whole.output.size(), chunk_bytes, "output");
    ExpectWithinRounding(chunked.input_grad.data(), whole.input_grad.data(), whole.input_grad.size(), chunk_bytes,
                         "input gradient");
    const size_t kernel_floats = 50 * 500;
    ASSERT_EQ(chunked.gradients.size(), kernel_floats + 50);
    const auto bias = [&](const Result& r) {
      return std::vector<float>(r.gradients.begin() + kernel_floats, r.gradients.end());
    };
    EXPECT_TRUE(SameBits(bias(chunked), bias(whole))) << chunk_bytes;
    ExpectWithinRounding(chunked.gradients.data(), whole.gradients.data(), kernel_floats, chunk_bytes,
                         "weight gradient");
  }
}

TEST(TrainerConv2d, KnownOutput) {
  Bound<Conv2d> conv(1, 1, 1, 2);
  std::fill(conv.weights.begin(), conv.weights.end(), 1.0f);  // 2x2 ones, bias 1
  Tensor input(Shape{1, 1, 3, 3});
  std::iota(input.data(), input.data() + 9, 0.0f);
  Tensor output;
  conv.layer.Forward(input, &output);
  EXPECT_EQ(output.shape(), (Shape{1, 1, 2, 2}));
  EXPECT_EQ(std::vector<float>(output.data(), output.data() + 4), (std::vector<float>{9, 13, 21, 25}));
}

TEST(TrainerConv2d, GradientsMatchFiniteDifferences) {
  Bound<Conv2d> conv(2, 2, 3, 3, 1, 1);
  CheckLayerGradients(conv.layer, RandomTensor(Shape{2, 2, 5, 5}, 3), &conv.weights, &conv.gradients, 4);
}

TEST(TrainerConv2d, StridedGradientsMatchFiniteDifferences) {
  Bound<Conv2d> conv(5, 2, 2, 3, 2, 0);
  CheckLayerGradients(conv.layer, RandomTensor(Shape{2, 2, 7, 7}, 6), &conv.weights, &conv.gradients, 7);
}

TEST(TrainerConv2d, OneByOneGradientsMatchFiniteDifferences) {
  Bound<Conv2d> conv(8, 3, 4, 1);
  CheckLayerGradients(conv.layer, RandomTensor(Shape{2, 3, 3, 3}, 9), &conv.weights, &conv.gradients, 10);
}

TEST(TrainerFullyConnected, GradientsMatchFiniteDifferences) {
  Bound<FullyConnected> fc(11, 12, 5);
  CheckLayerGradients(fc.layer, RandomTensor(Shape{3, 3, 2, 2}, 12), &fc.weights, &fc.gradients, 13);
}

TEST(TrainerRelu, GradientsMatchFiniteDifferencesAwayFromZero) {
  Relu relu;
  Tensor input = RandomTensor(Shape{2, 3, 2, 2}, 14);
  // Keep every input further than the finite-difference step from the kink.
  for (size_t i = 0; i < input.size(); ++i) input[i] += input[i] >= 0 ? 0.1f : -0.1f;
  CheckLayerGradients(relu, input, nullptr, nullptr, 15);
}

TEST(TrainerMaxPool, KnownOutputAndGradients) {
  MaxPool pool(2);
  Tensor input(Shape{2, 2, 4, 5});  // the fifth column is dropped
  // Distinct values at least 0.1 apart: no tie changes under the step.
  std::vector<int> order(input.size());
  std::iota(order.begin(), order.end(), 0);
  Rng rng(16);
  for (size_t i = order.size(); i > 1; --i) std::swap(order[i - 1], order[rng.Below(i)]);
  for (size_t i = 0; i < input.size(); ++i) input[i] = 0.1f * static_cast<float>(order[i]);
  Tensor output;
  pool.Forward(input, &output);
  EXPECT_EQ(output.shape(), (Shape{2, 2, 2, 2}));
  EXPECT_EQ(output[0], std::max({input[0], input[1], input[5], input[6]}));
  CheckLayerGradients(pool, input, nullptr, nullptr, 17);
}

TEST(TrainerMaxPool, TiesGoToTheFirstTapAndNaNNeverWins) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  MaxPool pool(2);
  // Five 2x2 windows side by side: four take the vector path, one the scalar.
  Tensor input(Shape{1, 1, 2, 10});
  const float top[10] = {1, 1, 0, 2, nan, 5, 1, nan, -0.0f, 0.0f};
  const float bottom[10] = {1, 1, 2, 2, 6, 7, 3, 2, 0.0f, -1};
  std::copy(top, top + 10, input.data());
  std::copy(bottom, bottom + 10, input.data() + 10);
  Tensor output;
  pool.Forward(input, &output);
  EXPECT_EQ(output[0], 1.0f);
  EXPECT_EQ(output[1], 2.0f);
  EXPECT_TRUE(std::isnan(output[2]));  // a NaN first stays: nothing compares greater
  EXPECT_EQ(output[3], 3.0f);          // a NaN later is skipped
  EXPECT_TRUE(std::signbit(output[4]));  // -0 first, +0 is not greater
  Tensor output_grad(output.shape());
  const float grads[5] = {10, 20, 30, 40, -0.0f};
  std::copy(grads, grads + 5, output_grad.data());
  Tensor input_grad;
  pool.Backward(input, output, output_grad, &input_grad);
  std::vector<float> expected(20, 0.0f);
  expected[0] = 10;       // the first of four equal values
  expected[3] = 20;       // the first 2 of window 1
  expected[4] = 30;       // the NaN's tap
  expected[10 + 6] = 40;  // the 3 below the NaN
  EXPECT_EQ(std::vector<float>(input_grad.data(), input_grad.data() + 20), expected);
  EXPECT_FALSE(std::signbit(input_grad[8]));  // 0 + (-0) is +0

  // Any other window takes the general path with the same rules.
  MaxPool pool3(3);
  Tensor input3(Shape{1, 1, 3, 7});  // the seventh column is dropped
  std::fill(input3.data(), input3.data() + input3.size(), 2.0f);
  input3[3] = nan;
  input3[2 * 7 + 5] = 4.0f;
  pool3.Forward(input3, &output);
  EXPECT_EQ(output[0], 2.0f);
  EXPECT_TRUE(std::isnan(output[1]));
  input3[3] = 1.0f;
  pool3.Forward(input3, &output);
  EXPECT_EQ(output[1], 4.0f);
  Tensor grad3(output.shape());
  grad3[0] = 1;
  grad3[1] = 2;
  pool3.Backward(input3, output, grad3, &input_grad);
  std::vector<float> expected3(21, 0.0f);
  expected3[0] = 1;
  expected3[2 * 7 + 5] = 2;
  EXPECT_EQ(std::vector<float>(input_grad.data(), input_grad.data() + 21), expected3);
}

TEST(TrainerRelu, NaNAndSignedZeroGiveZero) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  Relu relu;
  Tensor input(Shape{1, 1, 1, 5});
  const float values[5] = {nan, -0.0f, 0.0f, -1.0f, 2.0f};
  std::copy(values, values + 5, input.data());
  Tensor output;
  relu.Forward(input, &output);
  for (int i = 0; i < 4; ++i) {
    EXPECT_EQ(output[i], 0.0f);
    EXPECT_FALSE(std::signbit(output[i]));
  }
  EXPECT_EQ(output[4], 2.0f);
  Tensor output_grad(input.shape());
  std::fill(output_grad.data(), output_grad.data() + 5, nan);
  Tensor input_grad;
  relu.Backward(input, output, output_grad, &input_grad);
  for (int i = 0; i < 4; ++i) EXPECT_EQ(input_grad[i], 0.0f);
  EXPECT_TRUE(std::isnan(input_grad[4]));  // passed through where the input was positive
}

TEST(TrainerLayers, NoInputGradientLeavesTheParameterGradientsUnchanged) {
  // The model passes no input_grad to its first layer.
  Bound<Conv2d> conv(30, 3, 4, 3, 2, 1);
  Bound<FullyConnected> fc(31, 75, 5);
  const Tensor input = RandomTensor(Shape{2, 3, 5, 5}, 32);
  auto parameter_grads = [&input](Layer& layer, std::vector<float>& gradients, bool want_input_grad) {
    Tensor output, input_grad;
    layer.Forward(input, &output);
    const Tensor probe = RandomTensor(output.shape(), 33);
    std::fill(gradients.begin(), gradients.end(), 0.0f);
    layer.Backward(input, output, probe, want_input_grad ? &input_grad : nullptr);
    return gradients;
  };
  EXPECT_TRUE(SameBits(parameter_grads(conv.layer, conv.gradients, false),
                       parameter_grads(conv.layer, conv.gradients, true)));
  EXPECT_TRUE(SameBits(parameter_grads(fc.layer, fc.gradients, false),
                       parameter_grads(fc.layer, fc.gradients, true)));
}

TEST(TrainerGlobalAvgPool, KnownOutputAndGradients) {
  GlobalAvgPool pool;
  Tensor input(Shape{1, 2, 2, 2});
  std::iota(input.data(), input.data() + 8, 1.0f);
  Tensor output;
  pool.Forward(input, &output);
  EXPECT_EQ(output[0], 2.5f);
  EXPECT_EQ(output[1], 6.5f);
  CheckLayerGradients(pool, RandomTensor(Shape{2, 3, 3, 3}, 18), nullptr, nullptr, 19);
}

TEST(TrainerSoftmaxCrossEntropy, KnownLossAndGradients) {
  Tensor logits(Shape{2, 3, 1, 1});
  const float values[6] = {0, 0, 0, 2, 1, -1};
  std::copy(values, values + 6, logits.data());
  const std::vector<uint8_t> labels{1, 0};
  Tensor grad;
  const LossResult result = SoftmaxCrossEntropy(logits, labels, &grad);
  // Sample 0: uniform over 3 -> log 3. Sample 1: log(e^2+e+e^-1) - 2.
  const double expected = (std::log(3.0) + std::log(std::exp(2.0) + std::exp(1.0) + std::exp(-1.0)) - 2.0) / 2;
  EXPECT_NEAR(result.mean_loss, expected, 1e-6);
  EXPECT_EQ(result.correct, 1);  // sample 0 is a 3-way tie, broken toward class 0
  for (size_t i = 0; i < 6; ++i) {
    Tensor moved = logits;
    moved[i] += kStep;
    const double plus = SoftmaxCrossEntropy(moved, labels, nullptr).mean_loss;
    moved[i] -= 2 * kStep;
    const double minus = SoftmaxCrossEntropy(moved, labels, nullptr).mean_loss;
    EXPECT_NEAR(grad[i], (plus - minus) / (2 * kStep), 1e-4) << "dLogit[" << i << "]";
  }
}

// Whole models: dMeanLoss/dWeight for a sample of weights of every layer.
// ReLU and max-pool kinks can sit within one step of a sampled point, so one
// mismatch in the sample is tolerated.
void CheckModelGradients(Model& model, uint64_t seed) {
  Rng rng(seed);
  Tensor images(Shape{3, 1, 28, 28});
  FillUniform(&images, rng, -1.0, 1.0);
  const std::vector<uint8_t> labels{3, 7, 1};
  model.ForwardBackward(images, labels);
  const std::vector<float> analytic = model.gradients();
  std::vector<float>& weights = model.weights();
  int checked = 0, mismatched = 0;
  for (int k = 0; k < 40; ++k) {
    const size_t i = rng.Below(weights.size());
    const float saved = weights[i];
    constexpr float kModelStep = 1e-3f;
    weights[i] = saved + kModelStep;
    const double plus = SoftmaxCrossEntropy(model.Forward(images), labels, nullptr).mean_loss;
    weights[i] = saved - kModelStep;
    const double minus = SoftmaxCrossEntropy(model.Forward(images), labels, nullptr).mean_loss;
    weights[i] = saved;
    const double numeric = (plus - minus) / (2 * kModelStep);
    ++checked;
    if (std::abs(analytic[i] - numeric) > 2e-3 + 5e-2 * std::abs(numeric)) {
      ++mismatched;
      std::fprintf(stderr, "note: weight %zu analytic %g numeric %g\n", i, analytic[i], numeric);
    }
  }
  EXPECT_EQ(checked, 40);
  EXPECT_LE(mismatched, 1);
}

TEST(TrainerModels, LeNetGradientsMatchFiniteDifferences) {
  SetBlasThreads(1);
  auto model = MakeLeNet(21, 0.25);
  CheckModelGradients(*model, 22);
}

TEST(TrainerModels, NiNGradientsMatchFiniteDifferences) {
  SetBlasThreads(1);
  auto model = MakeNiN(23, 0.25);
  CheckModelGradients(*model, 24);
}

// Pipe-SGD swaps the model's gradient storage every step: the next backward
// pass must write into the new storage, and leave the old one alone.
TEST(TrainerModels, BackwardWritesIntoSwappedGradientStorage) {
  SetBlasThreads(1);
  auto model = MakeLeNet(5, 0.25);
  const Tensor images = RandomTensor(Shape{3, 1, 28, 28}, 31);
  const std::vector<uint8_t> labels{1, 7, 3};
  model->ForwardBackward(images, labels);
  const std::vector<float> expected = model->gradients();
  std::vector<float> in_flight(expected.size(), 42.0f);
  model->gradients().swap(in_flight);  // in_flight now holds the first pass's gradients
  model->ForwardBackward(images, labels);
  EXPECT_TRUE(SameBits(model->gradients(), expected));
  EXPECT_TRUE(SameBits(in_flight, expected));
}

TEST(TrainerModels, InitialisationIsDeterministicAndShapesAreRight) {
  auto a = MakeLeNet(5), b = MakeLeNet(5), c = MakeLeNet(6);
  EXPECT_EQ(a->weights(), b->weights());
  EXPECT_NE(a->weights(), c->weights());
  // 20*25+20 + 50*500+50 + 800*500+500 + 500*10+10
  EXPECT_EQ(a->weights().size(), 520u + 25050u + 400500u + 5010u);
  Tensor images(Shape{2, 1, 28, 28});
  images.Zero();
  EXPECT_EQ(a->Forward(images).shape(), (Shape{2, 10, 1, 1}));
  EXPECT_EQ(MakeNiN(5)->Forward(images).shape(), (Shape{2, 10, 1, 1}));
  std::unique_ptr<Model> named;
  EXPECT_FALSE(MakeModel("resnet", 1, &named).ok());
}

}  // namespace
}  // namespace trainer_test
