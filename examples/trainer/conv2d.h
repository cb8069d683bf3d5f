// Conv2d: square-kernel 2-D convolution (cross-correlation) with bias, as
// im2col + OpenBLAS GEMM. The batch goes through in chunks of images whose
// patches fit the core's L2, so that OpenBLAS packs what im2col has just
// written (and Col2Im folds what the GEMM has just written) from cache
// rather than from memory. Backward unfolds each chunk again for its share
// of dW rather than keeping Forward's patches: re-unfolding into L2 costs
// less than writing the whole batch's patches to memory and packing them
// back from there. A 1x1 kernel is the "network in network" per-pixel layer.
#pragma once

#include <cstddef>
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

  // Half of a 1 MiB L2. On LeNet conv2 128 KiB-1 MiB are within 4 % and 2 MiB
  // 5-6 % slower (perf/trainer/conv_benchmark.cc, docs/trainer.md).
  static constexpr size_t kDefaultChunkBytes = 512 * 1024;
  // Bytes of patches per chunk of images; SIZE_MAX runs the whole batch
  // through one GEMM per product (the benchmark's baseline). Only the weight
  // gradients' rounding depends on the chunk size: they are summed chunk by
  // chunk (trainer_layers_test).
  void set_chunk_bytes(size_t bytes) { chunk_bytes_ = bytes; }

 private:
  ConvGeometry GeometryFor(const Shape& input) const;
  // Images per GEMM: as many as keep a chunk's patches within chunk_bytes_.
  int ImagesPerChunk(const ConvGeometry& g, long pixels, int n) const;
  // For images [first, first + count): adds dOutput's per-channel sums into
  // the bias gradient (image by image, in order) and regroups dOutput as
  // [channel][image][pixel] into products_.
  void GatherOutputGrads(const Tensor& output_grad, int first, int count, long pixels, float* bias_grad);
  // Unfolds images [first, first + count) into columns_ as [patch_size, count * pixels].
  void UnfoldChunk(const Tensor& input, const ConvGeometry& g, int first, int count, long pixels);

  int in_channels_;
  int out_channels_;
  int kernel_;
  int stride_;
  int pad_;
  size_t chunk_bytes_ = kDefaultChunkBytes;
  float* weights_ = nullptr;  // [out_channels, in_channels * k * k], then bias [out_channels]
  float* gradients_ = nullptr;
  // Every buffer lives across steps (sized on first use, then reused), so a
  // step allocates and page-faults nothing.
  std::vector<float> columns_;       // one chunk's patches [patch_size, chunk * out_pixels]
  std::vector<float> products_;      // one chunk's W * columns, then its dOutput [out_channels, chunk * out_pixels]
  std::vector<float> column_grads_;  // dColumns of one chunk [patch_size, chunk * out_pixels]
};

}  // namespace trainer
