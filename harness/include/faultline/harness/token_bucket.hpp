#pragma once
// Pacing pod creations to a rate. A token bucket in its GCRA form: each reservation gets the
// moment it may start; the clock is injected so tests control time.
#include <chrono>
#include <mutex>

#include "faultline/faults/clock.hpp"

namespace faultline::harness {

// Time in the harness's logic (deadlines, pacing, quiet periods) comes from a faults::Clock, the
// fault model's injectable monotonic clock: real_clock() in a run, a faults::ManualClock in tests.
using SteadyTime = faults::Clock::time_point;
const faults::Clock& real_clock();

class TokenBucket {
 public:
  // rate: tokens per second (> 0); burst: how many may go at once after an idle period (>= 1).
  TokenBucket(double rate, double burst, const faults::Clock& clock = real_clock());

  // Takes one token and returns how long the caller must wait before using it (zero: go now).
  // Thread-safe; concurrent callers get distinct, evenly spaced slots.
  std::chrono::nanoseconds reserve();

 private:
  std::chrono::nanoseconds interval_;
  std::chrono::nanoseconds tolerance_;  // (burst - 1) intervals
  const faults::Clock& clock_;
  std::mutex mutex_;
  SteadyTime theoretical_{};
  bool started_ = false;
};

}  // namespace faultline::harness
