// Tensor: a float32 NCHW array that owns its storage. Layers see batches as
// tensors; fully connected layers read [n, c*h*w] as a matrix.
#pragma once

#include <algorithm>
#include <cstddef>
#include <vector>

namespace trainer {

struct Shape {
  int n = 0;  // batch
  int c = 0;  // channels
  int h = 1;
  int w = 1;

  size_t size() const { return static_cast<size_t>(n) * c * h * w; }
  // Elements of one sample.
  size_t sample_size() const { return static_cast<size_t>(c) * h * w; }
  bool operator==(const Shape&) const = default;
};

class Tensor {
 public:
  Tensor() = default;
  explicit Tensor(Shape shape) { Resize(shape); }

  // Changes the shape; storage is reused when large enough. Contents are
  // unspecified afterwards except when zero-filled by Zero().
  void Resize(Shape shape) {
    shape_ = shape;
    data_.resize(shape.size());
  }
  void Zero() { std::fill(data_.begin(), data_.end(), 0.0f); }

  const Shape& shape() const { return shape_; }
  size_t size() const { return data_.size(); }
  float* data() { return data_.data(); }
  const float* data() const { return data_.data(); }
  float& operator[](size_t i) { return data_[i]; }
  float operator[](size_t i) const { return data_[i]; }

 private:
  Shape shape_;
  std::vector<float> data_;
};

}  // namespace trainer
