#include "examples/trainer/lr_schedule.h"

#include <algorithm>
#include <cmath>

namespace trainer {

chorus::Status LrSchedule::Create(const LrScheduleOptions& options, LrSchedule* out) {
  if (options.kind != "constant" && options.kind != "step" && options.kind != "poly") {
    return chorus::InvalidArgument("unknown learning-rate schedule '", options.kind,
                                   "' (expected constant, step or poly)");
  }
  if (options.base_lr <= 0 || options.total_steps < 1 || options.step_every < 1 || options.warmup_steps < 0 ||
      options.global_batch < 1 || options.reference_batch < 0) {
    return chorus::InvalidArgument("learning-rate schedule: rates, batches and step counts must be positive");
  }
  LrSchedule schedule;
  schedule.options_ = options;
  schedule.peak_ = options.base_lr;
  if (options.reference_batch > 0) {
    schedule.peak_ *= static_cast<float>(options.global_batch) / static_cast<float>(options.reference_batch);
  }
  *out = schedule;
  return chorus::Status::Ok();
}

float LrSchedule::Rate(int step) const {
  const LrScheduleOptions& o = options_;
  if (step < o.warmup_steps) {
    // Goyal et al.: start from the unscaled rate, reach the peak linearly.
    const float start = std::min(o.base_lr, peak_);
    return start + (peak_ - start) * static_cast<float>(step + 1) / static_cast<float>(o.warmup_steps);
  }
  if (o.kind == "step") return peak_ * std::pow(o.gamma, static_cast<float>(step / o.step_every));
  if (o.kind == "poly") {
    const float progress = std::min(1.0f, static_cast<float>(step) / static_cast<float>(o.total_steps));
    return peak_ * std::pow(1.0f - progress, o.power);
  }
  return peak_;
}

}  // namespace trainer
