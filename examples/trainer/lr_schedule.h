// Learning-rate schedules by step: constant, step decay, or polynomial decay
// (power 0.5 by default), after an optional linear warm-up. The peak rate
// follows the linear scaling rule: base_lr * global_batch / reference_batch.
#pragma once

#include <string>

#include "base/status.h"

namespace trainer {

struct LrScheduleOptions {
  std::string kind = "step";  // constant, step, poly
  float base_lr = 0.01f;      // rate for reference_batch samples per step
  int reference_batch = 0;    // 0: no linear scaling
  int global_batch = 1;
  int warmup_steps = 0;       // linear ramp from base/scale to the peak
  int total_steps = 1;        // poly decays to 0 at total_steps
  int step_every = 1;         // step: multiply by gamma every step_every steps
  float gamma = 0.1f;
  float power = 0.5f;
};

class LrSchedule {
 public:
  static chorus::Status Create(const LrScheduleOptions& options, LrSchedule* out);
  float Rate(int step) const;
  float peak() const { return peak_; }

 private:
  LrScheduleOptions options_;
  float peak_ = 0.0f;
};

}  // namespace trainer
