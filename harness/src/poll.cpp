#include "faultline/harness/poll.hpp"

#include <stdexcept>

#include "faultline/harness/async.hpp"

#include "faultline/harness/gcc12_coroutine_frames.hpp"

namespace faultline::harness {

asio::awaitable<void> poll_until(const faults::Clock& clock, PollLimits limits,
                                 std::function<asio::awaitable<bool>()> done, std::function<std::string()> timed_out) {
  const auto deadline = clock.now() + limits.within;
  while (!co_await done()) {
    if (clock.now() > deadline) throw std::runtime_error(timed_out());
    co_await sleep_for(limits.every);
  }
}

}  // namespace faultline::harness
