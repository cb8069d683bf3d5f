#include "examples/trainer/max_pool.h"

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

namespace trainer {
namespace {

// One 2x2 window: the maximum of a b / c d and its tap (dy * 2 + dx). The
// scan order and the strict > are the plain loop's: the first maximum wins
// ties and a NaN never replaces the best. Selects instead of branches.
inline void Pool2x2(float a, float b, float c, float d, float* out, int32_t* tap_out) {
  const bool b_wins = b > a;
  float best = b_wins ? b : a;
  int32_t tap = b_wins ? 1 : 0;
  const bool c_wins = c > best;
  best = c_wins ? c : best;
  tap = c_wins ? 2 : tap;
  const bool d_wins = d > best;
  best = d_wins ? d : best;
  tap = d_wins ? 3 : tap;
  *out = best;
  *tap_out = tap;
}

#if defined(__SSE2__)
// Lanes where `wins`: `challenger`, else `best` (bitwise, so bits are kept).
inline __m128 Select(__m128 wins, __m128 challenger, __m128 best) {
  return _mm_or_ps(_mm_and_ps(wins, challenger), _mm_andnot_ps(wins, best));
}
#endif

// PoolRow2x2 and PoolRow pool one output row from the window band that starts
// at `band` (input rows `width` apart), recording each maximum's tap.
void PoolRow2x2(const float* band, int width, int out_width, float* out, int32_t* taps) {
  const float* top = band;
  const float* bottom = band + width;
  int ox = 0;
#if defined(__SSE2__)
  // Four windows at a time (GCC keeps the scalar selects as branches).
  for (; ox + 4 <= out_width; ox += 4) {
    const __m128 top_lo = _mm_loadu_ps(top + 2 * ox), top_hi = _mm_loadu_ps(top + 2 * ox + 4);
    const __m128 bottom_lo = _mm_loadu_ps(bottom + 2 * ox), bottom_hi = _mm_loadu_ps(bottom + 2 * ox + 4);
    const __m128 a = _mm_shuffle_ps(top_lo, top_hi, _MM_SHUFFLE(2, 0, 2, 0));
    const __m128 b = _mm_shuffle_ps(top_lo, top_hi, _MM_SHUFFLE(3, 1, 3, 1));
    const __m128 c = _mm_shuffle_ps(bottom_lo, bottom_hi, _MM_SHUFFLE(2, 0, 2, 0));
    const __m128 d = _mm_shuffle_ps(bottom_lo, bottom_hi, _MM_SHUFFLE(3, 1, 3, 1));
    const __m128 b_wins = _mm_cmpgt_ps(b, a);
    __m128 best = Select(b_wins, b, a);
    __m128 tap = _mm_and_ps(b_wins, _mm_castsi128_ps(_mm_set1_epi32(1)));
    const __m128 c_wins = _mm_cmpgt_ps(c, best);
    best = Select(c_wins, c, best);
    tap = Select(c_wins, _mm_castsi128_ps(_mm_set1_epi32(2)), tap);
    const __m128 d_wins = _mm_cmpgt_ps(d, best);
    best = Select(d_wins, d, best);
    tap = Select(d_wins, _mm_castsi128_ps(_mm_set1_epi32(3)), tap);
    _mm_storeu_ps(out + ox, best);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(taps + ox), _mm_castps_si128(tap));
  }
#endif
  for (; ox < out_width; ++ox) {
    Pool2x2(top[2 * ox], top[2 * ox + 1], bottom[2 * ox], bottom[2 * ox + 1], out + ox, taps + ox);
  }
}

// Any window, in the same scan order.
void PoolRow(const float* __restrict band, int width, int window, int out_width, float* __restrict out,
             int32_t* __restrict taps) {
  for (int ox = 0; ox < out_width; ++ox) {
    const float* corner = band + static_cast<long>(ox) * window;
    float best = corner[0];
    int32_t tap = 0;
    for (int dy = 0; dy < window; ++dy) {
      for (int dx = 0; dx < window; ++dx) {
        const float value = corner[static_cast<long>(dy) * width + dx];
        const bool greater = value > best;
        tap = greater ? dy * window + dx : tap;
        best = greater ? value : best;
      }
    }
    out[ox] = best;
    taps[ox] = tap;
  }
}

// Adds each output's gradient into the tap of its window that was the
// maximum; kWindow is the window when known at compile time, else 0. As
// before it is 0 + g (not g itself): a -0 gradient lands as +0.
template <int kWindow>
void ScatterRow(const float* grads, const int32_t* taps, int out_width, int width, int runtime_window,
                float* band) {
  const int window = kWindow > 0 ? kWindow : runtime_window;
  for (int ox = 0; ox < out_width; ++ox) {
    const int dy = taps[ox] / window, dx = taps[ox] % window;
    band[static_cast<long>(dy) * width + ox * window + dx] += grads[ox];
  }
}

}  // namespace

Shape MaxPool::OutputShape(const Shape& input) const {
  return Shape{input.n, input.c, input.h / window_, input.w / window_};
}

void MaxPool::Forward(const Tensor& input, Tensor* output) {
  const Shape in = input.shape();
  const Shape out = OutputShape(in);
  output->Resize(out);
  argmax_taps_.resize(out.size());
  long o = 0;
  for (long plane = 0; plane < static_cast<long>(in.n) * in.c; ++plane) {
    const float* plane_data = input.data() + plane * in.h * in.w;
    for (int oy = 0; oy < out.h; ++oy, o += out.w) {
      const float* band = plane_data + static_cast<long>(oy) * window_ * in.w;
      if (window_ == 2) {
        PoolRow2x2(band, in.w, out.w, output->data() + o, argmax_taps_.data() + o);
      } else {
        PoolRow(band, in.w, window_, out.w, output->data() + o, argmax_taps_.data() + o);
      }
    }
  }
}

void MaxPool::Backward(const Tensor& input, const Tensor& /*output*/, const Tensor& output_grad,
                       Tensor* input_grad) {
  if (input_grad == nullptr) return;
  const Shape in = input.shape();
  const Shape out = OutputShape(in);
  input_grad->Resize(in);
  input_grad->Zero();
  long o = 0;
  for (long plane = 0; plane < static_cast<long>(in.n) * in.c; ++plane) {
    float* plane_grad = input_grad->data() + plane * in.h * in.w;
    for (int oy = 0; oy < out.h; ++oy, o += out.w) {
      float* band = plane_grad + static_cast<long>(oy) * window_ * in.w;
      if (window_ == 2) {
        ScatterRow<2>(output_grad.data() + o, argmax_taps_.data() + o, out.w, in.w, window_, band);
      } else {
        ScatterRow<0>(output_grad.data() + o, argmax_taps_.data() + o, out.w, in.w, window_, band);
      }
    }
  }
}

}  // namespace trainer
