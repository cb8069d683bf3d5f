// The per-parameter passes of Lion Cub (step_exchange_lion_cub.cc and the
// elastic rule), written for the vectoriser: restrict pointers, constants
// in locals. The momentum's update reads only m and g, so it is done in the
// same pass as c and the weights' pass after the vote reads only w and d:
// 28 bytes per parameter per step instead of 36 (the loops are bound by
// memory), with the same float operations as the two textbook loops. The new
// momentum may go to its own buffer (the elastic rule: a step whose vote
// fails must leave the momentum as it was) or over the old one.
#pragma once

#include <cstddef>

namespace trainer {

// c[i] = b1 m[i] + (1 - b1) g[i] and next[i] = b2 m[i] + (1 - b2) g[i];
// `next_momentum` is `momentum` itself or does not overlap it.
void LionCubDirectionAndMomentum(float beta1, float beta2, const float* gradient, const float* momentum,
                                 float* next_momentum, float* direction, size_t count);

// w[i] -= lr (d[i] + wd w[i]), d being the voted direction.
void LionCubApply(float lr, float weight_decay, const float* direction, float* weights, size_t count);

}  // namespace trainer
