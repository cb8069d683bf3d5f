#include "examples/trainer/dataset.h"

#include <algorithm>

#include "examples/trainer/idx_reader.h"

namespace trainer {
namespace {

// Fashion-MNIST pixel mean and standard deviation (of x / 255).
constexpr float kPixelMean = 0.2860f;
constexpr float kPixelStd = 0.3530f;
constexpr int kClasses = 10;

}  // namespace

void Dataset::Gather(const std::vector<uint32_t>& indices, size_t begin, size_t end, Tensor* images_out,
                     std::vector<uint8_t>* labels_out) const {
  const size_t per = sample.size();
  Shape batch = sample;
  batch.n = static_cast<int>(end - begin);
  images_out->Resize(batch);
  labels_out->resize(end - begin);
  for (size_t i = begin; i < end; ++i) {
    const uint32_t at = indices[i];
    std::copy_n(images.data() + at * per, per, images_out->data() + (i - begin) * per);
    (*labels_out)[i - begin] = labels[at];
  }
}

chorus::Status DatasetFromIdx(const std::string& images_path, const std::string& labels_path, Dataset* out) {
  IdxArray images, labels;
  CHORUS_RETURN_IF_ERROR(ReadIdxFile(images_path, &images));
  CHORUS_RETURN_IF_ERROR(ReadIdxFile(labels_path, &labels));
  if (images.dims.size() != 3) {
    return chorus::InvalidArgument(images_path, ": expected 3 dimensions (count, rows, columns), found ",
                                   images.dims.size());
  }
  if (labels.dims.size() != 1 || labels.dims[0] != images.dims[0]) {
    return chorus::InvalidArgument(labels_path, ": expected one label per image of ", images_path, " (",
                                   images.dims[0], ")");
  }
  for (uint8_t label : labels.values) {
    if (label >= kClasses) return chorus::InvalidArgument(labels_path, ": label ", int{label}, " is not 0..9");
  }
  Dataset dataset;
  dataset.count = static_cast<int>(images.dims[0]);
  dataset.sample = Shape{1, 1, static_cast<int>(images.dims[1]), static_cast<int>(images.dims[2])};
  dataset.images.resize(images.values.size());
  for (size_t i = 0; i < images.values.size(); ++i) {
    dataset.images[i] = (static_cast<float>(images.values[i]) / 255.0f - kPixelMean) / kPixelStd;
  }
  dataset.labels = std::move(labels.values);
  *out = std::move(dataset);
  return chorus::Status::Ok();
}

chorus::Status LoadFashionMnist(const std::string& dir, Split split, Dataset* out) {
  const std::string prefix = dir + "/" + (split == Split::kTrain ? "train" : "t10k");
  const chorus::Status status =
      DatasetFromIdx(prefix + "-images-idx3-ubyte.gz", prefix + "-labels-idx1-ubyte.gz", out);
  if (!status.ok()) {
    return chorus::InvalidArgument(status.message(),
                                   " (Fashion-MNIST comes from the Debian package dataset-fashion-mnist: "
                                   "apt-get install dataset-fashion-mnist, or pass --data DIR)");
  }
  return status;
}

}  // namespace trainer
