// One server of unit rate shared equally by the jobs present (processor
// sharing): the fluid model of a port that max-min shares its capacity
// among the flows through it when nothing else limits them. The closed
// forms use it where a schedule puts several messages on one port at once.
#pragma once

#include <vector>

namespace chorus::model {

struct SharedJob {
  double start = 0;  // seconds
  double work = 0;   // seconds at full rate
};

// Finish time of every job (same order as `jobs`). Jobs of no work finish
// at their start. O(k^2) for k jobs: meant for the few messages of a port.
std::vector<double> ProcessorSharingFinish(const std::vector<SharedJob>& jobs);

}  // namespace chorus::model
