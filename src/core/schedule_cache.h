// ScheduleCache: schedules depend only on the call's shape, so each one is
// built once per communicator and reused. Which algorithm a shape runs is
// the selection table's (core/selection_table.h), which also remembers the
// schedule of the last few shapes.
#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <tuple>

#include "algorithms/algorithm.h"

namespace chorus {

class ScheduleCache {
 public:
  // Returns the schedule of `args` under `algo`, building it on first use.
  Status Get(const CollectiveArgs& args, Algorithm algo, std::shared_ptr<const Schedule>* out) {
    Key key = KeyOf(args, algo);
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = cache_.find(key);
    if (it != cache_.end()) {
      *out = it->second;
      return Status::Ok();
    }
    auto schedule = std::make_shared<Schedule>();
    CHORUS_RETURN_IF_ERROR(BuildSchedule(args, algo, schedule.get()));
    if (cache_.size() >= kMaxEntries) cache_.clear();  // bounded; rebuilding is cheap
    cache_.emplace(key, schedule);
    *out = std::move(schedule);
    return Status::Ok();
  }

 private:
  static constexpr size_t kMaxEntries = 512;
  using Key = std::tuple<int, size_t, int, int, int, bool, int, size_t, int>;
  static Key KeyOf(const CollectiveArgs& args, Algorithm algo) {
    return Key{static_cast<int>(args.coll), args.count, static_cast<int>(args.dtype), static_cast<int>(args.op),
               args.root, args.in_place, static_cast<int>(algo), args.segment_bytes, args.server_count};
  }

  std::mutex mutex_;
  std::map<Key, std::shared_ptr<const Schedule>> cache_;
};

}  // namespace chorus
