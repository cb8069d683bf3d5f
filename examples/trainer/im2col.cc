#include "examples/trainer/im2col.h"

namespace trainer {

void Im2Col(const float* image, const ConvGeometry& g, float* columns, long row_stride) {
  const int oh = g.out_height();
  const int ow = g.out_width();
  for (int c = 0; c < g.channels; ++c) {
    const float* plane = image + static_cast<long>(c) * g.height * g.width;
    for (int ky = 0; ky < g.kernel; ++ky) {
      for (int kx = 0; kx < g.kernel; ++kx) {
        float* row = columns + ((static_cast<long>(c) * g.kernel + ky) * g.kernel + kx) * row_stride;
        for (int oy = 0; oy < oh; ++oy) {
          const int y = oy * g.stride - g.pad + ky;
          float* out = row + static_cast<long>(oy) * ow;
          if (y < 0 || y >= g.height) {
            for (int ox = 0; ox < ow; ++ox) out[ox] = 0.0f;
            continue;
          }
          const float* in_row = plane + static_cast<long>(y) * g.width;
          for (int ox = 0; ox < ow; ++ox) {
            const int x = ox * g.stride - g.pad + kx;
            out[ox] = (x >= 0 && x < g.width) ? in_row[x] : 0.0f;
          }
        }
      }
    }
  }
}

void Col2ImAdd(const float* columns, const ConvGeometry& g, long row_stride, float* image) {
  const int oh = g.out_height();
  const int ow = g.out_width();
  for (int c = 0; c < g.channels; ++c) {
    float* plane = image + static_cast<long>(c) * g.height * g.width;
    for (int ky = 0; ky < g.kernel; ++ky) {
      for (int kx = 0; kx < g.kernel; ++kx) {
        const float* row = columns + ((static_cast<long>(c) * g.kernel + ky) * g.kernel + kx) * row_stride;
        for (int oy = 0; oy < oh; ++oy) {
          const int y = oy * g.stride - g.pad + ky;
          if (y < 0 || y >= g.height) continue;
          const float* in = row + static_cast<long>(oy) * ow;
          float* out_row = plane + static_cast<long>(y) * g.width;
          for (int ox = 0; ox < ow; ++ox) {
            const int x = ox * g.stride - g.pad + kx;
            if (x >= 0 && x < g.width) out_row[x] += in[ox];
          }
        }
      }
    }
  }
}

}  // namespace trainer
