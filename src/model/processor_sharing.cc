#include "model/processor_sharing.h"

#include <algorithm>
#include <limits>
#include <numeric>

namespace chorus::model {

std::vector<double> ProcessorSharingFinish(const std::vector<SharedJob>& jobs) {
  const size_t k = jobs.size();
  std::vector<double> finish(k, 0.0), left(k);
  std::vector<size_t> order(k), active;
  std::iota(order.begin(), order.end(), size_t{0});
  std::stable_sort(order.begin(), order.end(), [&](size_t x, size_t y) { return jobs[x].start < jobs[y].start; });
  for (size_t i = 0; i < k; ++i) left[i] = std::max(0.0, jobs[i].work);
  double now = 0;
  size_t next = 0;
  while (next < k || !active.empty()) {
    if (active.empty()) now = std::max(now, jobs[order[next]].start);
    while (next < k && jobs[order[next]].start <= now) {
      const size_t job = order[next++];
      if (left[job] > 0) {
        active.push_back(job);
      } else {
        finish[job] = jobs[job].start;
      }
    }
    if (active.empty()) continue;
    // Run until the smallest active job ends or the next one arrives.
    const double share = static_cast<double>(active.size());
    double step = std::numeric_limits<double>::infinity();
    for (size_t job : active) step = std::min(step, left[job] * share);
    if (next < k) step = std::min(step, jobs[order[next]].start - now);
    now += step;
    for (size_t job : active) left[job] -= step / share;
    auto ended = [&](size_t job) {
      if (left[job] > 1e-12 * std::max(1.0, jobs[job].work)) return false;
      finish[job] = now;
      return true;
    };
    active.erase(std::remove_if(active.begin(), active.end(), ended), active.end());
  }
  return finish;
}

}  // namespace chorus::model
