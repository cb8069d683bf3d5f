#include "examples/trainer/optimizer.h"

namespace trainer {

void SgdMomentum::Step(std::vector<float>& weights, const std::vector<float>& gradients, float gradient_scale,
                       float lr) {
  velocity_.resize(weights.size(), 0.0f);
  for (size_t i = 0; i < weights.size(); ++i) {
    velocity_[i] = momentum_ * velocity_[i] + gradients[i] * gradient_scale + weight_decay_ * weights[i];
    weights[i] -= lr * velocity_[i];
  }
}

void Lion::Step(std::vector<float>& weights, const std::vector<float>& gradients, float gradient_scale, float lr) {
  momentum_.resize(weights.size(), 0.0f);
  for (size_t i = 0; i < weights.size(); ++i) {
    const float g = gradients[i] * gradient_scale;
    const float c = beta1_ * momentum_[i] + (1.0f - beta1_) * g;
    const float sign = c > 0.0f ? 1.0f : (c < 0.0f ? -1.0f : 0.0f);
    weights[i] -= lr * (sign + weight_decay_ * weights[i]);
    momentum_[i] = beta2_ * momentum_[i] + (1.0f - beta2_) * g;
  }
}

chorus::Status MakeOptimizer(const OptimizerOptions& options, std::unique_ptr<Optimizer>* out) {
  if (options.name == "sgd") {
    *out = std::make_unique<SgdMomentum>(options.momentum, options.weight_decay);
  } else if (options.name == "lion") {
    *out = std::make_unique<Lion>(options.beta1, options.beta2, options.weight_decay);
  } else {
    return chorus::InvalidArgument("unknown optimizer '", options.name, "' (expected sgd or lion)");
  }
  return chorus::Status::Ok();
}

}  // namespace trainer
