#include "examples/trainer/lion_cub_math.h"

namespace trainer {

void LionCubDirectionAndMomentum(float beta1, float beta2, const float* __restrict gradient,
                                 const float* momentum, float* next_momentum,
                                 float* __restrict direction, size_t count) {
  const float b1 = beta1, b1_rest = 1.0f - beta1, b2 = beta2, b2_rest = 1.0f - beta2;
  for (size_t i = 0; i < count; ++i) {
    const float m = momentum[i], g = gradient[i];
    direction[i] = b1 * m + b1_rest * g;
    next_momentum[i] = b2 * m + b2_rest * g;
  }
}

void LionCubApply(float lr, float weight_decay, const float* __restrict direction, float* __restrict weights,
                  size_t count) {
  const float rate = lr, decay = weight_decay;
  for (size_t i = 0; i < count; ++i) weights[i] -= rate * (direction[i] + decay * weights[i]);
}

}  // namespace trainer
