#pragma once
// How the relay carries out an engine Plan. dispose() turns the fault action of the plan into a
// Disposition (proxy/relay/src/actions/: dispose.cpp for the actions without state, a file for each
// watch action and its WatchFilter): a few primitive steps the session performs
// (answer locally, wait, forward, discard the answer, cut the connection, hang, filter the watch
// stream). Pure values: no sockets here, so every action is testable on its own.

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "faultline/faults/engine.hpp"

namespace faultline::proxy {

// Acts on the events of one watch response stream (JSON framing).
class WatchFilter {
 public:
  enum class End { none, clean, reset };  // how the stream goes on after this step
  struct Step {
    std::vector<std::string> emit;  // events to write to the client, in order
    End end = End::none;
  };

  virtual ~WatchFilter() = default;
  // Before the first event (e.g. watch-gone after 0 events).
  virtual Step on_start() { return {}; }
  // One complete event from upstream (with its trailing newline).
  virtual Step on_event(std::string_view event) = 0;
  // A time after which the stream is cut (watch-reset after T), counted from the response start.
  virtual std::optional<std::chrono::milliseconds> deadline() const { return std::nullopt; }
  virtual End at_deadline() const { return End::reset; }
  // True once the fault actually did something to the stream (for logs and tests).
  bool acted() const { return acted_; }
  // The relay reached deadline() and cut the stream.
  void acted_by_deadline() { acted_ = true; }

 protected:
  static Step pass(std::string_view event) { return Step{{std::string(event)}, End::none}; }
  bool acted_ = false;
};

enum class Cut { none, reset, close };

struct Disposition {
  std::optional<faults::HttpResponse> respond;        // answer locally instead of forwarding
  std::chrono::milliseconds wait_before{0};           // hold the request before acting (delay)
  bool forward = true;                                // send the request upstream
  bool discard_response = false;                      // read the upstream answer, never relay it
  Cut cut = Cut::none;                                // then cut the client connection
  bool hang = false;                                  // then hold the connection, never answer ...
  std::optional<std::chrono::milliseconds> hang_for;  // ... until this elapses (then close)
  std::unique_ptr<WatchFilter> watch_filter;          // act on the watch stream's events
  bool json_upstream = false;                         // ask upstream for JSON (watch framing)
  // Whole-proxy outage to enforce (reset/refuse: cut every live connection; refuse: close the
  // listener) until `outage_for` from now.
  std::optional<faults::actions::Outage::Mode> outage;
  std::chrono::milliseconds outage_for{0};
  // End the client connection (goaway): HTTP/2 sends GOAWAY with this error code; graceful lets
  // this request and those before it finish, abrupt ends the connection at once.
  struct GoAway {
    bool graceful = true;
    std::uint32_t error_code = 0;  // HTTP/2 error code (0 NO_ERROR)
  };
  std::optional<GoAway> goaway;
  // Stall the client connection (stall): it stays open but sends and reads nothing (over HTTP/2
  // not even PING ACKs) for this long; then it carries on.
  std::optional<std::chrono::milliseconds> stall_for;
};

// The disposition of `plan` (forward untouched when nothing fires).
Disposition dispose(const faults::Plan& plan);

}  // namespace faultline::proxy
