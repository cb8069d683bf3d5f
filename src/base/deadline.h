// Deadline: every wait in Chorus is bounded by one of these.
#pragma once

#include <chrono>
#include <cstdint>

namespace chorus {

class Deadline {
 public:
  using Clock = std::chrono::steady_clock;

  static Deadline AfterMs(int64_t ms) { return Deadline(Clock::now() + std::chrono::milliseconds(ms)); }
  static Deadline Never() { return Deadline(Clock::time_point::max()); }

  bool Expired() const { return Clock::now() >= at_; }
  // Milliseconds left, clamped to [0, cap]; cap bounds a single poll so that
  // abort flags are still checked regularly.
  int RemainingMs(int cap = 1 << 30) const {
    if (at_ == Clock::time_point::max()) return cap;
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(at_ - Clock::now()).count();
    if (left < 0) return 0;
    return left > cap ? cap : static_cast<int>(left);
  }
  Clock::time_point time_point() const { return at_; }

 private:
  explicit Deadline(Clock::time_point at) : at_(at) {}
  Clock::time_point at_;
};

// The earlier of two deadlines.
inline Deadline Sooner(Deadline a, Deadline b) { return a.time_point() < b.time_point() ? a : b; }

}  // namespace chorus
