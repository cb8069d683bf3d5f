// Model: a sequence of layers whose parameters share two flat buffers,
// weights() and gradients(), in layer order. Data parallelism then needs one
// Broadcast of weights() and AllReduce of gradients() (or slices of them).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "examples/trainer/layer.h"
#include "examples/trainer/softmax_cross_entropy.h"

namespace trainer {

class Model {
 public:
  // `sample` is the shape of one input sample (n ignored).
  Model(Shape sample, std::vector<std::unique_ptr<Layer>> layers, uint64_t seed);

  Model(const Model&) = delete;
  Model& operator=(const Model&) = delete;

  // Runs the layers; returns the logits [n, classes].
  const Tensor& Forward(const Tensor& input);
  // Zeroes the gradients, runs Forward, the loss and the backward pass:
  // gradients() then holds dMeanLoss/dWeights over this batch.
  // `gradients_ready(begin)`, when given, is called during the backward pass
  // once gradients()[begin, end) are final (layers finish in reverse order,
  // so `begin` only decreases); communication can start on that range.
  LossResult ForwardBackward(const Tensor& input, const std::vector<uint8_t>& labels,
                             const std::function<void(size_t)>& gradients_ready = nullptr);

  std::vector<float>& weights() { return weights_; }
  // The caller may swap this vector's storage for another of the same size
  // (Pipe-SGD keeps a step's gradient in flight while the next is computed):
  // the next ForwardBackward binds the layers to whatever storage it holds.
  std::vector<float>& gradients() { return gradients_; }
  const std::vector<float>& weights() const { return weights_; }
  const std::vector<std::unique_ptr<Layer>>& layers() const { return layers_; }
  const Shape& sample_shape() const { return sample_; }
  // One line per layer with its output shape and parameter count.
  std::string Describe() const;

 private:
  // Points every layer at its slices of weights_ and gradients_.
  void BindLayers();

  Shape sample_;
  std::vector<std::unique_ptr<Layer>> layers_;
  std::vector<float> weights_;
  std::vector<float> gradients_;
  std::vector<size_t> parameter_offsets_;  // layer i's slice starts here
  std::vector<Tensor> activations_;  // activations_[i] is the output of layer i
  std::vector<Tensor> activation_grads_;
  Tensor logits_grad_;
  const Tensor* input_ = nullptr;  // the last Forward's input
};

}  // namespace trainer
