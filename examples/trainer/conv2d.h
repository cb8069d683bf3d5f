// Conv2d: square-kernel 2-D convolution (cross-correlation) with bias, as
// im2col + one OpenBLAS GEMM over the whole batch. A 1x1 kernel is the
// "network in network" per-pixel layer.
#pragma once

#include <vector>

#include "examples/trainer/im2col.h"
#include "examples/trainer/layer.h"

namespace trainer {

class Conv2d : public Layer {
 public:
  Conv2d(int in_channels, int out_channels, int kernel, int stride = 1, int pad = 0);

  std::string name() const override;
  Shape OutputShape(const Shape& input) const override;
  size_t ParameterCount() const override;
  void BindParameters(float* weights, float* gradients) override;
  void InitializeParameters(Rng& rng) override;
  void Forward(const Tensor& input, Tensor* output) override;
  void Backward(const Tensor& input, const Tensor& output, const Tensor& output_grad,
                Tensor* input_grad) override;

 private:
  ConvGeometry GeometryFor(const Shape& input) const;
  // Fills columns_ with the patches of every image of `input`.
  void Unfold(const Tensor& input, const ConvGeometry& g);
  // Adds dOutput's per-channel sums into the bias gradient and regroups
  // dOutput as [channel][image][pixel] into products_ (free after Forward).
  void GatherOutputGrads(const Tensor& output_grad, int n, long pixels, float* bias_grad);

  int in_channels_;
  int out_channels_;
  int kernel_;
  int stride_;
  int pad_;
  float* weights_ = nullptr;  // [out_channels, in_channels * k * k], then bias [out_channels]
  float* gradients_ = nullptr;
  // Every buffer lives across steps (sized on first use, then reused), so a
  // step allocates and page-faults nothing.
  std::vector<float> columns_;       // [patch_size, n * out_pixels], Forward's, kept for Backward
  std::vector<float> products_;      // [out_channels, n * out_pixels]: W * columns, then dOutput
  std::vector<float> column_grads_;  // dColumns [patch_size, n * out_pixels]
};

}  // namespace trainer
