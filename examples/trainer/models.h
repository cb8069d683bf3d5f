// The two reference networks for 1x28x28 Fashion-MNIST images.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "base/status.h"
#include "examples/trainer/model.h"

namespace trainer {

// LeNet-style: conv5x5 20 -> pool -> conv5x5 50 -> pool -> fc 500 -> relu -> fc 10
// (with ReLU after each convolution). `width` scales every channel count
// (1.0 = the classic sizes) so tests can use a small copy.
std::unique_ptr<Model> MakeLeNet(uint64_t seed, double width = 1.0);

// Network-in-network style: 3x3 convs each followed by a 1x1 conv, pooling,
// and a 1x1 conv to 10 channels whose global average is the logits (no FC).
std::unique_ptr<Model> MakeNiN(uint64_t seed, double width = 1.0);

// By name: "lenet" or "nin".
chorus::Status MakeModel(const std::string& name, uint64_t seed, std::unique_ptr<Model>* model);

}  // namespace trainer
