// Finite-difference checks of a layer's backward pass. The probe loss is
// sum(R .* layer(x)) for a fixed random R, so dLoss/dOutput = R.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "examples/trainer/layer.h"
#include "examples/trainer/random.h"

namespace trainer_test {

using trainer::Layer;
using trainer::Rng;
using trainer::Shape;
using trainer::Tensor;

// Central differences in float32 with step 1e-2: linear layers are exact up to
// rounding, so the tolerance only covers float32 rounding of the sums.
constexpr float kStep = 1e-2f;
constexpr double kAbsoluteTolerance = 2e-3;
constexpr double kRelativeTolerance = 1e-2;

inline void FillUniform(Tensor* t, Rng& rng, double low, double high) {
  for (size_t i = 0; i < t->size(); ++i) (*t)[i] = static_cast<float>(low + (high - low) * rng.Uniform());
}

inline double ProbeLoss(Layer& layer, const Tensor& input, const Tensor& probe) {
  Tensor output;
  layer.Forward(input, &output);
  double sum = 0.0;
  for (size_t i = 0; i < output.size(); ++i) sum += static_cast<double>(output[i]) * probe[i];
  return sum;
}

inline bool Close(double analytic, double numeric) {
  return std::abs(analytic - numeric) <= kAbsoluteTolerance + kRelativeTolerance * std::max(std::abs(analytic), std::abs(numeric));
}

// Checks dLoss/dInput and dLoss/dParameters of `layer` (parameters, if any,
// already bound to `weights`/`gradients` and initialised) at `input`.
inline void CheckLayerGradients(Layer& layer, Tensor input, std::vector<float>* weights,
                                std::vector<float>* gradients, uint64_t seed) {
  Rng rng(seed);
  Tensor output;
  layer.Forward(input, &output);
  Tensor probe(output.shape());
  FillUniform(&probe, rng, -1.0, 1.0);
  Tensor input_grad;
  if (gradients != nullptr) std::fill(gradients->begin(), gradients->end(), 0.0f);
  layer.Backward(input, output, probe, &input_grad);
  ASSERT_EQ(input_grad.shape(), input.shape());

  for (size_t i = 0; i < input.size(); ++i) {
    const float saved = input[i];
    input[i] = saved + kStep;
    const double plus = ProbeLoss(layer, input, probe);
    input[i] = saved - kStep;
    const double minus = ProbeLoss(layer, input, probe);
    input[i] = saved;
    const double numeric = (plus - minus) / (2.0 * kStep);
    EXPECT_TRUE(Close(input_grad[i], numeric))
        << layer.name() << " dInput[" << i << "]: analytic " << input_grad[i] << " numeric " << numeric;
  }
  if (weights == nullptr) return;
  for (size_t i = 0; i < weights->size(); ++i) {
    const float saved = (*weights)[i];
    (*weights)[i] = saved + kStep;
    const double plus = ProbeLoss(layer, input, probe);
    (*weights)[i] = saved - kStep;
    const double minus = ProbeLoss(layer, input, probe);
    (*weights)[i] = saved;
    const double numeric = (plus - minus) / (2.0 * kStep);
    EXPECT_TRUE(Close((*gradients)[i], numeric))
        << layer.name() << " dWeight[" << i << "]: analytic " << (*gradients)[i] << " numeric " << numeric;
  }
}

}  // namespace trainer_test
