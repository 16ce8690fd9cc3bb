#pragma once
// Time enters the fault model only through this interface, so tests drive schedules with a
// ManualClock instead of sleeping.

#include <atomic>
#include <chrono>

namespace faultline::faults {

class Clock {
 public:
  using duration = std::chrono::steady_clock::duration;
  using time_point = std::chrono::steady_clock::time_point;

  virtual ~Clock() = default;
  virtual time_point now() const = 0;
};

// The real monotonic clock.
class SteadyClock final : public Clock {
 public:
  time_point now() const override { return std::chrono::steady_clock::now(); }
};

// A clock that only moves when told to. Safe to read from several threads.
class ManualClock final : public Clock {
 public:
  explicit ManualClock(time_point start = time_point{}) : now_(start.time_since_epoch().count()) {}

  time_point now() const override { return time_point{duration{now_.load()}}; }
  void advance(duration d) { now_.fetch_add(d.count()); }
  void set(time_point t) { now_.store(t.time_since_epoch().count()); }

 private:
  std::atomic<duration::rep> now_;
};

}  // namespace faultline::faults
