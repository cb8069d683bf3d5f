#include "examples/trainer/model.h"

#include <algorithm>
#include <sstream>

namespace trainer {

Model::Model(Shape sample, std::vector<std::unique_ptr<Layer>> layers, uint64_t seed)
    : sample_(sample), layers_(std::move(layers)) {
  size_t total = 0;
  for (const auto& layer : layers_) {
    parameter_offsets_.push_back(total);
    total += layer->ParameterCount();
  }
  weights_.assign(total, 0.0f);
  gradients_.assign(total, 0.0f);
  BindLayers();
  Rng rng(seed);
  for (auto& layer : layers_) layer->InitializeParameters(rng);
  activations_.resize(layers_.size());
  activation_grads_.resize(layers_.size());
}

const Tensor& Model::Forward(const Tensor& input) {
  input_ = &input;
  const Tensor* current = &input;
  for (size_t i = 0; i < layers_.size(); ++i) {
    layers_[i]->Forward(*current, &activations_[i]);
    current = &activations_[i];
  }
  return *current;
}

LossResult Model::ForwardBackward(const Tensor& input, const std::vector<uint8_t>& labels,
                                  const std::function<void(size_t)>& gradients_ready) {
  BindLayers();  // an exchange may have swapped the gradients' storage
  std::fill(gradients_.begin(), gradients_.end(), 0.0f);
  const Tensor& logits = Forward(input);
  const LossResult loss = SoftmaxCrossEntropy(logits, labels, &logits_grad_);
  const Tensor* output_grad = &logits_grad_;
  for (size_t i = layers_.size(); i-- > 0;) {
    const Tensor& layer_input = i == 0 ? input : activations_[i - 1];
    // Nobody reads the first layer's input gradient: it is not computed.
    Tensor* input_grad = i == 0 ? nullptr : &activation_grads_[i];
    layers_[i]->Backward(layer_input, activations_[i], *output_grad, input_grad);
    output_grad = &activation_grads_[i];
    if (gradients_ready && layers_[i]->ParameterCount() > 0) gradients_ready(parameter_offsets_[i]);
  }
  return loss;
}

void Model::BindLayers() {
  for (size_t i = 0; i < layers_.size(); ++i) {
    layers_[i]->BindParameters(weights_.data() + parameter_offsets_[i], gradients_.data() + parameter_offsets_[i]);
  }
}

std::string Model::Describe() const {
  std::ostringstream out;
  Shape shape = sample_;
  shape.n = 1;
  for (const auto& layer : layers_) {
    shape = layer->OutputShape(shape);
    out << "  " << layer->name() << " -> " << shape.c << "x" << shape.h << "x" << shape.w << " ("
        << layer->ParameterCount() << " parameters)\n";
  }
  out << "  total " << weights_.size() << " parameters\n";
  return out.str();
}

}  // namespace trainer
