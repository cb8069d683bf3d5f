#include "examples/trainer/models.h"

#include <algorithm>
#include <cmath>

#include "examples/trainer/conv2d.h"
#include "examples/trainer/fully_connected.h"
#include "examples/trainer/global_avg_pool.h"
#include "examples/trainer/max_pool.h"
#include "examples/trainer/relu.h"

namespace trainer {
namespace {

constexpr int kClasses = 10;
const Shape kImage{1, 1, 28, 28};

int Scaled(int channels, double width) {
  return std::max(1, static_cast<int>(std::lround(channels * width)));
}

}  // namespace

std::unique_ptr<Model> MakeLeNet(uint64_t seed, double width) {
  const int c1 = Scaled(20, width), c2 = Scaled(50, width), hidden = Scaled(500, width);
  std::vector<std::unique_ptr<Layer>> layers;
  layers.push_back(std::make_unique<Conv2d>(1, c1, 5));  // 24x24
  layers.push_back(std::make_unique<Relu>());
  layers.push_back(std::make_unique<MaxPool>(2));  // 12x12
  layers.push_back(std::make_unique<Conv2d>(c1, c2, 5));  // 8x8
  layers.push_back(std::make_unique<Relu>());
  layers.push_back(std::make_unique<MaxPool>(2));  // 4x4
  layers.push_back(std::make_unique<FullyConnected>(c2 * 4 * 4, hidden));
  layers.push_back(std::make_unique<Relu>());
  layers.push_back(std::make_unique<FullyConnected>(hidden, kClasses));
  return std::make_unique<Model>(kImage, std::move(layers), seed);
}

std::unique_ptr<Model> MakeNiN(uint64_t seed, double width) {
  const int c1 = Scaled(32, width), c2 = Scaled(64, width);
  std::vector<std::unique_ptr<Layer>> layers;
  auto block = [&layers](int in, int out) {
    layers.push_back(std::make_unique<Conv2d>(in, out, 3, 1, 1));
    layers.push_back(std::make_unique<Relu>());
    layers.push_back(std::make_unique<Conv2d>(out, out, 1));
    layers.push_back(std::make_unique<Relu>());
  };
  block(1, c1);
  layers.push_back(std::make_unique<MaxPool>(2));  // 14x14
  block(c1, c2);
  layers.push_back(std::make_unique<MaxPool>(2));  // 7x7
  layers.push_back(std::make_unique<Conv2d>(c2, c2, 3, 1, 1));
  layers.push_back(std::make_unique<Relu>());
  layers.push_back(std::make_unique<Conv2d>(c2, kClasses, 1));
  layers.push_back(std::make_unique<GlobalAvgPool>());
  return std::make_unique<Model>(kImage, std::move(layers), seed);
}

chorus::Status MakeModel(const std::string& name, uint64_t seed, std::unique_ptr<Model>* model) {
  if (name == "lenet") {
    *model = MakeLeNet(seed);
  } else if (name == "nin") {
    *model = MakeNiN(seed);
  } else {
    return chorus::InvalidArgument("unknown model '", name, "' (expected lenet or nin)");
  }
  return chorus::Status::Ok();
}

}  // namespace trainer
