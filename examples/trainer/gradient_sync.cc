#include "examples/trainer/gradient_sync.h"

#include <algorithm>

namespace trainer {

GradientSync::GradientSync(chorusComm_t comm, size_t bucket_bytes)
    : comm_(comm), bucket_floats_(bucket_bytes / sizeof(float)) {
  if (comm_ != nullptr) {
    // Both only fail on an invalid handle, which the launcher never passes.
    (void)chorusCommUserRank(comm_, &rank_);
    (void)chorusCommCount(comm_, &nranks_);
  }
}

chorus::Status GradientSync::Check(chorusResult_t result, const char* what) const {
  if (result == chorusSuccess) return chorus::Status::Ok();
  return chorus::Status(result, chorus::StrCat(what, " failed on rank ", rank_, ": ", chorusGetErrorString(result),
                                               ": ", chorusGetLastError(comm_)));
}

chorus::Status GradientSync::BroadcastWeights(std::vector<float>& weights) {
  if (comm_ == nullptr) return chorus::Status::Ok();
  return Check(chorusBroadcast(weights.data(), weights.data(), weights.size(), chorusFloat32, 0, comm_, nullptr),
               "weight broadcast");
}

chorus::Status GradientSync::AverageGradients(std::vector<float>& gradients) {
  if (comm_ == nullptr || nranks_ == 1) return chorus::Status::Ok();
  const size_t bucket = bucket_floats_ == 0 ? gradients.size() : bucket_floats_;
  for (size_t begin = 0; begin < gradients.size(); begin += bucket) {
    const size_t count = std::min(bucket, gradients.size() - begin);
    float* slice = gradients.data() + begin;
    CHORUS_RETURN_IF_ERROR(
        Check(chorusAllReduce(slice, slice, count, chorusFloat32, chorusSum, comm_, nullptr), "gradient allreduce"));
  }
  const float inverse = 1.0f / static_cast<float>(nranks_);
  for (float& g : gradients) g *= inverse;
  return chorus::Status::Ok();
}

chorus::Status GradientSync::SumAcrossRanks(std::vector<double>& values) {
  if (comm_ == nullptr || nranks_ == 1) return chorus::Status::Ok();
  return Check(chorusAllReduce(values.data(), values.data(), values.size(), chorusFloat64, chorusSum, comm_, nullptr),
               "metrics allreduce");
}

}  // namespace trainer
