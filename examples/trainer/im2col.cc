#include "examples/trainer/im2col.h"

#include <algorithm>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

namespace trainer {
namespace {

// The outputs [begin, end) of one kernel tap, along one axis, whose input
// coordinate o * stride - pad + tap lies inside [0, size); the others read the
// zero padding. Computed once per tap (and axis) so that the inner loops carry
// no bounds test and vectorise.
struct ValidRange {
  int begin = 0;
  int end = 0;
  int count() const { return end - begin; }
};

ValidRange ValidRangeFor(int tap, int pad, int stride, int size, int outputs) {
  const int first = tap - pad;  // the input coordinate of output 0
  // Smallest o with first + o * stride >= 0, and the number of o with it < size.
  const int begin = first >= 0 ? 0 : (-first + stride - 1) / stride;
  const int end = size - first <= 0 ? 0 : (size - first + stride - 1) / stride;
  ValidRange r;
  r.begin = std::min(begin, outputs);
  r.end = std::max(r.begin, std::min(end, outputs));
  return r;
}

// Short copies and fills (a row is 7 to 28 floats in the models), inline:
// a libc call costs more than the work at these sizes. GCC turns plain
// copy/fill loops back into memmove/memset calls; the empty asm hides the
// value from that pattern match (it emits no instruction).
#if defined(__SSE2__) && defined(__GNUC__)
inline __m128 Opaque(__m128 v) {
  asm("" : "+x"(v));
  return v;
}

inline void CopyFloats(float* to, const float* from, long count) {
  long i = 0;
  for (; i + 4 <= count; i += 4) _mm_storeu_ps(to + i, Opaque(_mm_loadu_ps(from + i)));
  for (; i < count; ++i) _mm_store_ss(to + i, Opaque(_mm_load_ss(from + i)));
}

inline void ZeroFloats(float* to, long count) {
  const __m128 zero = Opaque(_mm_setzero_ps());
  long i = 0;
  for (; i + 4 <= count; i += 4) _mm_storeu_ps(to + i, zero);
  for (; i < count; ++i) _mm_store_ss(to + i, zero);
}
#else
inline void CopyFloats(float* to, const float* from, long count) {
  for (long i = 0; i < count; ++i) to[i] = from[i];
}

inline void ZeroFloats(float* to, long count) {
  for (long i = 0; i < count; ++i) to[i] = 0.0f;
}
#endif

}  // namespace

void Im2Col(const float* image, const ConvGeometry& g, float* columns, long row_stride) {
  const int oh = g.out_height();
  const int ow = g.out_width();
  const int stride = g.stride;
  for (int c = 0; c < g.channels; ++c) {
    const float* plane = image + static_cast<long>(c) * g.height * g.width;
    for (int ky = 0; ky < g.kernel; ++ky) {
      const ValidRange rows = ValidRangeFor(ky, g.pad, stride, g.height, oh);
      for (int kx = 0; kx < g.kernel; ++kx) {
        float* tap_row = columns + ((static_cast<long>(c) * g.kernel + ky) * g.kernel + kx) * row_stride;
        const ValidRange cols = ValidRangeFor(kx, g.pad, stride, g.width, ow);
        // Rows of padding above and below.
        ZeroFloats(tap_row, static_cast<long>(rows.begin) * ow);
        ZeroFloats(tap_row + static_cast<long>(rows.end) * ow, static_cast<long>(oh - rows.end) * ow);
        if (rows.count() == 0) continue;
        const int first_y = rows.begin * stride - g.pad + ky;
        const int first_x = cols.begin * stride - g.pad + kx;
        const float* in = plane + static_cast<long>(first_y) * g.width + first_x;
        float* out = tap_row + static_cast<long>(rows.begin) * ow;
        if (stride == 1 && cols.count() == ow && ow == g.width) {
          // Whole rows on both sides (a 1x1 kernel): one contiguous block.
          CopyFloats(out, in, static_cast<long>(rows.count()) * ow);
          continue;
        }
        const long in_row_step = static_cast<long>(stride) * g.width;
        if (stride == 1 && cols.count() == ow) {
          // No padding columns (every tap of an unpadded convolution): the
          // row loop without its per-row fills and stride test, 2.5-3x faster
          // for LeNet's conv2 (8-float rows).
          for (int oy = rows.begin; oy < rows.end; ++oy, in += in_row_step, out += ow) CopyFloats(out, in, ow);
          continue;
        }
        for (int oy = rows.begin; oy < rows.end; ++oy, in += in_row_step, out += ow) {
          ZeroFloats(out, cols.begin);
          if (stride == 1) {
            CopyFloats(out + cols.begin, in, cols.count());
          } else {
            for (int i = 0; i < cols.count(); ++i) out[cols.begin + i] = in[static_cast<long>(i) * stride];
          }
          ZeroFloats(out + cols.end, ow - cols.end);
        }
      }
    }
  }
}

void Col2ImAdd(const float* columns, const ConvGeometry& g, long row_stride, float* image) {
  // Every pixel receives its additions in the same order as the plain loop
  // over (c, ky, kx, oy, ox): within one (ky, kx, oy) each ox reaches a
  // different pixel, so only the skipped padding taps change.
  const int oh = g.out_height();
  const int ow = g.out_width();
  const int stride = g.stride;
  for (int c = 0; c < g.channels; ++c) {
    float* plane = image + static_cast<long>(c) * g.height * g.width;
    for (int ky = 0; ky < g.kernel; ++ky) {
      const ValidRange rows = ValidRangeFor(ky, g.pad, stride, g.height, oh);
      for (int kx = 0; kx < g.kernel; ++kx) {
        const ValidRange cols = ValidRangeFor(kx, g.pad, stride, g.width, ow);
        if (rows.count() == 0 || cols.count() == 0) continue;
        const float* tap_row = columns + ((static_cast<long>(c) * g.kernel + ky) * g.kernel + kx) * row_stride;
        const int count = cols.count();
        const long out_row_step = static_cast<long>(stride) * g.width;
        const float* in = tap_row + static_cast<long>(rows.begin) * ow + cols.begin;
        float* out = plane + static_cast<long>(rows.begin * stride - g.pad + ky) * g.width +
                     (cols.begin * stride - g.pad + kx);
        for (int oy = rows.begin; oy < rows.end; ++oy, in += ow, out += out_row_step) {
          if (stride == 1) {
            for (int i = 0; i < count; ++i) out[i] += in[i];
          } else {
            for (int i = 0; i < count; ++i) out[static_cast<long>(i) * stride] += in[i];
          }
        }
      }
    }
  }
}

}  // namespace trainer
