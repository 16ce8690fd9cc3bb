#pragma once
// Pacing pod creations to a rate. A token bucket in its GCRA form: each reservation gets the
// moment it may start; the clock is injected so tests control time.
#include <chrono>
#include <functional>
#include <mutex>

namespace faultline::harness {

using SteadyTime = std::chrono::steady_clock::time_point;
using SteadyClockFn = std::function<SteadyTime()>;

class TokenBucket {
 public:
  // rate: tokens per second (> 0); burst: how many may go at once after an idle period (>= 1).
  TokenBucket(
      double rate, double burst, SteadyClockFn now = [] { return std::chrono::steady_clock::now(); });

  // Takes one token and returns how long the caller must wait before using it (zero: go now).
  // Thread-safe; concurrent callers get distinct, evenly spaced slots.
  std::chrono::nanoseconds reserve();

 private:
  std::chrono::nanoseconds interval_;
  std::chrono::nanoseconds tolerance_;  // (burst - 1) intervals
  SteadyClockFn now_;
  std::mutex mutex_;
  SteadyTime theoretical_{};
  bool started_ = false;
};

}  // namespace faultline::harness
