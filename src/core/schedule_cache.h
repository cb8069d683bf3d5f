// ScheduleCache: schedules depend only on the call's shape, so each one is
// built once per communicator and reused.
//
// It also remembers, for the last few call shapes, which schedule a
// requested algorithm (kAuto included) resolved to, so that a repeated call
// skips both the algorithm choice (the tuner evaluates every candidate's
// cost) and the map lookup: a few compares on the small-message path.
#pragma once

#include <array>
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

  // The schedule remembered for `args` when `requested` was asked for, if
  // this shape is among the recent ones. The caller guarantees that the
  // choice is a function of the shape (it is, for one communicator).
  bool FindResolved(const CollectiveArgs& args, Algorithm requested, std::shared_ptr<const Schedule>* out) {
    Key key = KeyOf(args, requested);
    std::lock_guard<std::mutex> lock(mutex_);
    for (const Resolved& entry : resolved_) {
      if (entry.schedule != nullptr && entry.key == key) {
        *out = entry.schedule;
        return true;
      }
    }
    return false;
  }

  void RememberResolved(const CollectiveArgs& args, Algorithm requested, std::shared_ptr<const Schedule> schedule) {
    std::lock_guard<std::mutex> lock(mutex_);
    Resolved& entry = resolved_[next_resolved_];
    next_resolved_ = (next_resolved_ + 1) % resolved_.size();
    entry.key = KeyOf(args, requested);
    entry.schedule = std::move(schedule);
  }

 private:
  static constexpr size_t kMaxEntries = 512;
  using Key = std::tuple<int, size_t, int, int, int, bool, int, size_t, int>;
  static Key KeyOf(const CollectiveArgs& args, Algorithm algo) {
    return Key{static_cast<int>(args.coll), args.count, static_cast<int>(args.dtype), static_cast<int>(args.op),
               args.root, args.in_place, static_cast<int>(algo), args.segment_bytes, args.server_count};
  }
  struct Resolved {
    Key key{};
    std::shared_ptr<const Schedule> schedule;
  };

  std::mutex mutex_;
  std::map<Key, std::shared_ptr<const Schedule>> cache_;
  std::array<Resolved, 8> resolved_;
  size_t next_resolved_ = 0;
};

}  // namespace chorus
