// im2col / col2im: unfold image patches into matrix columns so that a
// convolution becomes one GEMM. Row r = (channel * k + ky) * k + kx of the
// column matrix holds, for every output position p, the input pixel that
// kernel tap meets at p (0 outside the padded image).
#pragma once

namespace trainer {

struct ConvGeometry {
  int channels = 0;
  int height = 0;
  int width = 0;
  int kernel = 1;
  int stride = 1;
  int pad = 0;

  int out_height() const { return (height + 2 * pad - kernel) / stride + 1; }
  int out_width() const { return (width + 2 * pad - kernel) / stride + 1; }
  int patch_size() const { return channels * kernel * kernel; }
};

// Writes the columns of one image into `columns`, whose rows are
// `row_stride` floats apart (a batch places its images side by side).
void Im2Col(const float* image, const ConvGeometry& g, float* columns, long row_stride);

// The adjoint of Im2Col: adds every column entry back into its pixel.
void Col2ImAdd(const float* columns, const ConvGeometry& g, long row_stride, float* image);

}  // namespace trainer
