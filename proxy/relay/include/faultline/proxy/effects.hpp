#pragma once
// How the relay carries out an engine Plan: the fault action of the plan becomes a short sequence
// of effects (effects_of; one mapping per action in proxy/relay/src/actions/<action>.cpp), from a small
// closed set each protocol session (HTTP/1.1, HTTP/2) implements once. Pure values: no sockets
// here, so every action's mapping is testable on its own.
//
// A session carries out the effects in order. Until one of them decides (decides() below), the
// request is on its way: with none left, it is forwarded and its answer relayed. An effect that
// ends the request (answer, cut, hold, an abrupt end of the connection) ends the sequence;
// discard_response forwards the request and loses the answer, and the effects after it act once
// that answer has ended. No fault, no effects: the request is forwarded as it is.

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
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
  // Filters that hold events back and release them by time (watch-delay, watch-coalesce). The relay
  // gives them the time (its server's clock) with advance(now) before it hands over events and
  // again at next_due(); on_event() stamps what it holds with the last such time, and advance()
  // emits what is due by `now`. Only advance() and flush() emit held events.
  using TimePoint = std::chrono::steady_clock::time_point;
  virtual bool holds_events() const { return false; }
  virtual Step advance(TimePoint /*now*/) { return {}; }
  virtual std::optional<TimePoint> next_due() const { return std::nullopt; }
  // The upstream ended the stream cleanly: everything still held, to go out before the clean end
  // (a reset, or a client gone, drops it).
  virtual Step flush() { return {}; }
  // What such a filter did, for the audit record: events it delayed, and events it left out (only
  // a later event for the same object reached the client).
  struct Counts {
    std::uint64_t delayed = 0;
    std::uint64_t withheld = 0;
  };
  virtual Counts counts() const { return {}; }
  // Bytes of events a holding filter may hold for one stream: the relay counts the emitted ones not
  // yet written to the client against the same bound.
  static constexpr std::size_t kMaxHeldBytes = 16u << 20;

  // True once the fault actually did something to the stream (for logs and tests).
  bool acted() const { return acted_; }
  // The relay reached deadline() and cut the stream.
  void acted_by_deadline() { acted_ = true; }

 protected:
  static Step pass(std::string_view event) { return Step{{std::string(event)}, End::none}; }
  bool acted_ = false;
};

// How a connection (HTTP/1.1) or a stream (HTTP/2) is cut: RST (RST_STREAM INTERNAL_ERROR) or FIN
// (RST_STREAM NO_ERROR).
enum class Cut { none, reset, close };

// What an effect says about forwarding the request.
enum class Forwarding {
  undecided,  // the next effects decide
  forward,    // the request goes upstream
  local,      // it never does
};

namespace effect {

// Answer in the apiserver's place; the request is not forwarded.
struct Answer {
  faults::HttpResponse response;
  static Forwarding decides() { return Forwarding::local; }
};

// Cut the client's connection (HTTP/1.1) or stream (HTTP/2); before forwarding, the request is
// never forwarded.
struct CutOff {
  Cut how = Cut::reset;
  static Forwarding decides() { return Forwarding::local; }
};

// Hold the request this long before going on.
struct Wait {
  std::chrono::milliseconds duration{0};
  static Forwarding decides() { return Forwarding::undecided; }
};

// Hold the connection (stream) and never answer: the client's bytes are read and dropped; after
// `limit` (if any) it is closed.
struct Hold {
  std::optional<std::chrono::milliseconds> limit;
  static Forwarding decides() { return Forwarding::local; }
};

// Forward the request, read the upstream's answer and never relay it; the effects after this one
// act once the answer ended.
struct DiscardResponse {
  static Forwarding decides() { return Forwarding::forward; }
};

// Act on the watch stream's events by `filter`; `json_upstream`: ask upstream for JSON (counting
// and changing events needs its framing).
struct FilterWatch {
  std::unique_ptr<WatchFilter> filter;
  bool json_upstream = true;
  static Forwarding decides() { return Forwarding::undecided; }
};

// Tell the server that an outage began (the engine keeps its mode and end, here for logs and
// tests): it cuts or holds every other connection and, for refuse, closes the listener.
struct EnforceOutage {
  faults::actions::Outage::Mode mode = faults::actions::Outage::Mode::reset;
  std::chrono::milliseconds duration{0};  // 0: until the end of the rule's window
  static Forwarding decides() { return Forwarding::undecided; }
};

// End the client's connection. Graceful: this request and those before it finish (HTTP/2: GOAWAY
// naming this stream the last one taken; HTTP/1.1: the answer carries Connection: close). Abrupt:
// the connection ends at once, this request unanswered (HTTP/2: GOAWAY with `error_code`).
struct EndConnection {
  bool graceful = true;
  std::uint32_t error_code = 0;  // HTTP/2 error code (0 NO_ERROR)
  Forwarding decides() const { return graceful ? Forwarding::undecided : Forwarding::local; }
};

// The client's connection sends and reads nothing for `duration` (HTTP/2: not even PING ACKs;
// HTTP/1.1: the one request waits), then carries on.
struct StallConnection {
  std::chrono::milliseconds duration{0};
  static Forwarding decides() { return Forwarding::undecided; }
};

// Hold the request in its rule's batch (one per rule, across connections) until `count` are held
// or the first has waited `wait`; then the batch goes on together: forwarded (then_ == forward),
// reset, or answered with `response`. A request the proxy cannot hold (its bound of held requests
// is reached) is forwarded at once.
struct Gate {
  std::string rule;
  std::uint64_t count = 1;
  std::chrono::milliseconds wait{0};
  faults::actions::Hold::Then then = faults::actions::Hold::Then::forward;
  std::optional<faults::HttpResponse> response;  // then: respond
  Forwarding decides() const {
    return then == faults::actions::Hold::Then::forward ? Forwarding::undecided : Forwarding::local;
  }
};

// Learn the current resourceVersion upstream (the proxy's own LIST of one namespace) and record it
// for these stale-read rules (Engine::record_resource_version) before the request goes on.
struct RecordResourceVersion {
  std::vector<int> rules;
  static Forwarding decides() { return Forwarding::undecided; }
};

// stale-read: forward the request with `target` (its resourceVersion=RV&resourceVersionMatch=Exact)
// instead of the client's. "" target: no resourceVersion was recorded, the request goes as it is.
// The audit records the client's own resourceVersion and `served` (RV).
struct ReadAsOf {
  std::string target;
  std::string served;
  static Forwarding decides() { return Forwarding::undecided; }
};

}  // namespace effect

using Effect = std::variant<effect::Answer, effect::CutOff, effect::Wait, effect::Hold, effect::DiscardResponse,
                            effect::FilterWatch, effect::EnforceOutage, effect::EndConnection, effect::StallConnection,
                            effect::Gate, effect::RecordResourceVersion, effect::ReadAsOf>;
using Effects = std::vector<Effect>;

// The effects of `plan`'s action (none when nothing fires). Throws std::logic_error for a plan that
// misses what its action needs (a respond plan without its rendered response).
Effects effects_of(const faults::Plan& plan);

// Whether `effects` forward the request upstream (an empty sequence does).
inline bool forwards(const Effects& effects) {
  for (const auto& e : effects) {
    const Forwarding f = std::visit([](const auto& x) { return x.decides(); }, e);
    if (f != Forwarding::undecided) return f == Forwarding::forward;
  }
  return true;
}

}  // namespace faultline::proxy
