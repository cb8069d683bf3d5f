// Optimizers over the model's flat weight and gradient buffers.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "base/status.h"

namespace trainer {

class Optimizer {
 public:
  virtual ~Optimizer() = default;
  // Updates `weights` in place from `gradients` with learning rate `lr`.
  void Step(std::vector<float>& weights, const std::vector<float>& gradients, float lr) {
    Step(weights, gradients, 1.0f, lr);
  }
  // The same from gradient_scale * gradients, scaled on the fly (a sum over
  // ranks becomes their mean without a pass of its own).
  virtual void Step(std::vector<float>& weights, const std::vector<float>& gradients, float gradient_scale,
                    float lr) = 0;
};

// SGD with (heavy-ball) momentum and L2 weight decay, as in PyTorch:
// v = momentum * v + (g + wd * w); w -= lr * v.
class SgdMomentum : public Optimizer {
 public:
  SgdMomentum(float momentum, float weight_decay) : momentum_(momentum), weight_decay_(weight_decay) {}
  using Optimizer::Step;
  void Step(std::vector<float>& weights, const std::vector<float>& gradients, float gradient_scale,
            float lr) override;

 private:
  float momentum_;
  float weight_decay_;
  std::vector<float> velocity_;
};

// Lion (Chen et al. 2023): c = b1 * m + (1 - b1) * g;
// w -= lr * (sign(c) + wd * w); m = b2 * m + (1 - b2) * g.
class Lion : public Optimizer {
 public:
  Lion(float beta1, float beta2, float weight_decay) : beta1_(beta1), beta2_(beta2), weight_decay_(weight_decay) {}
  using Optimizer::Step;
  void Step(std::vector<float>& weights, const std::vector<float>& gradients, float gradient_scale,
            float lr) override;

 private:
  float beta1_;
  float beta2_;
  float weight_decay_;
  std::vector<float> momentum_;
};

struct OptimizerOptions {
  std::string name = "sgd";  // sgd or lion
  float momentum = 0.9f;     // sgd
  float beta1 = 0.9f;        // lion
  float beta2 = 0.99f;       // lion
  float weight_decay = 5e-4f;
};

chorus::Status MakeOptimizer(const OptimizerOptions& options, std::unique_ptr<Optimizer>* out);

}  // namespace trainer
