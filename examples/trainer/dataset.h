// Dataset: labelled images in memory, normalised to float. Loads
// Fashion-MNIST from the IDX files of Debian's dataset-fashion-mnist.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "base/status.h"
#include "examples/trainer/tensor.h"

namespace trainer {

inline constexpr const char* kFashionMnistDir = "/usr/share/datasets/fashion-mnist";

struct Dataset {
  int count = 0;
  Shape sample;               // n = 1
  std::vector<float> images;  // count * sample.size(), normalised
  std::vector<uint8_t> labels;

  // Copies the samples `indices[begin, end)` into a batch.
  void Gather(const std::vector<uint32_t>& indices, size_t begin, size_t end, Tensor* images_out,
              std::vector<uint8_t>* labels_out) const;
};

enum class Split { kTrain, kTest };

// Reads `<dir>/{train,t10k}-{images-idx3,labels-idx1}-ubyte.gz`. A missing or
// malformed file yields an error naming the file and the Debian package.
chorus::Status LoadFashionMnist(const std::string& dir, Split split, Dataset* out);

// Builds a dataset from IDX arrays (pixels scaled as for Fashion-MNIST).
chorus::Status DatasetFromIdx(const std::string& images_path, const std::string& labels_path, Dataset* out);

}  // namespace trainer
