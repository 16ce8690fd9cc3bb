#include "faultline/harness/token_bucket.hpp"

#include <algorithm>
#include <stdexcept>

namespace faultline::harness {

const faults::Clock& real_clock() {
  static const faults::SteadyClock clock;
  return clock;
}

TokenBucket::TokenBucket(double rate, double burst, const faults::Clock& clock) : clock_(clock) {
  if (!(rate > 0)) throw std::invalid_argument("token bucket rate must be > 0");
  if (burst < 1) throw std::invalid_argument("token bucket burst must be >= 1");
  interval_ = std::chrono::nanoseconds(static_cast<std::int64_t>(1e9 / rate));
  tolerance_ = std::chrono::nanoseconds(static_cast<std::int64_t>((burst - 1) * 1e9 / rate));
}

std::chrono::nanoseconds TokenBucket::reserve() {
  std::lock_guard lock(mutex_);
  SteadyTime now = clock_.now();
  if (!started_ || theoretical_ < now) {
    theoretical_ = std::max(started_ ? theoretical_ : now, now);
    started_ = true;
  }
  // The slot for this token is theoretical_; up to `tolerance_` early is allowed (the burst).
  SteadyTime allowed = theoretical_ - tolerance_;
  theoretical_ += interval_;
  return allowed > now ? std::chrono::duration_cast<std::chrono::nanoseconds>(allowed - now)
                       : std::chrono::nanoseconds(0);
}

}  // namespace faultline::harness
