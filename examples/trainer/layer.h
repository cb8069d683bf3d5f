// Layer: one differentiable stage of a sequential model. Parameters live in
// the model's two flat buffers (weights and gradients) so that one AllReduce
// can cover every gradient; a layer only receives pointers to its slices.
#pragma once

#include <cstddef>
#include <string>

#include "examples/trainer/random.h"
#include "examples/trainer/tensor.h"

namespace trainer {

class Layer {
 public:
  virtual ~Layer() = default;

  virtual std::string name() const = 0;
  // Output shape for an input shape; the batch size passes through.
  virtual Shape OutputShape(const Shape& input) const = 0;

  // Number of floats this layer keeps in the flat buffers.
  virtual size_t ParameterCount() const { return 0; }
  // Binds the slices [weights, weights + ParameterCount()) and likewise for
  // gradients. Called before any other use, and again when the model's
  // gradient storage has moved (Model::gradients()).
  virtual void BindParameters(float* /*weights*/, float* /*gradients*/) {}
  // Draws initial weights (He-normal weights, zero biases).
  virtual void InitializeParameters(Rng& /*rng*/) {}

  // output = f(input); output is resized here.
  virtual void Forward(const Tensor& input, Tensor* output) = 0;
  // Given the forward's input and output and dLoss/dOutput, ADDS the
  // parameter gradients into the bound slice and writes dLoss/dInput
  // (resized here) unless `input_grad` is null (the first layer's: nobody
  // reads it). Backward follows the Forward of the same input: a layer may
  // keep what it needs from that Forward.
  virtual void Backward(const Tensor& input, const Tensor& output, const Tensor& output_grad,
                        Tensor* input_grad) = 0;
};

}  // namespace trainer
