#pragma once
// The harness's one way to wait for a condition it can only ask about (nodes Ready, a process
// stopped, pods gone): ask, and until the answer is yes, ask again `every` apart; give up once
// `within` has passed on the injectable clock, with an error that names what did not happen.
#include <boost/asio/awaitable.hpp>
#include <functional>
#include <string>

#include "faultline/faults/clock.hpp"

namespace faultline::harness {

struct PollLimits {
  faults::Clock::duration within;  // from the first question; read on the injected clock
  faults::Clock::duration every;   // the pause between two questions (a real timer)
};

// Awaits `done()` until it returns true. When it returned false and more than `limits.within` has
// passed on `clock` since the call, throws std::runtime_error(timed_out()): timed_out says what did
// not happen (it may also clean up, e.g. kill a child that hangs). What `done` throws ends the wait.
boost::asio::awaitable<void> poll_until(const faults::Clock& clock, PollLimits limits,
                                        std::function<boost::asio::awaitable<bool>()> done,
                                        std::function<std::string()> timed_out);

}  // namespace faultline::harness
