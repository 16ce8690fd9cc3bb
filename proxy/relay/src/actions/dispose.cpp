// From the engine's Plan to a Disposition. The actions without state are carried out here, a few
// lines each; the watch actions (state per stream) keep a file of their own (watch_filter.hpp).
// An action with no carry_out overload does not compile.
#include <stdexcept>

#include "actions/watch_filter.hpp"

namespace faultline::proxy {
namespace fa = faults::actions;

namespace actions {
// Internal linkage by `static`, not an unnamed namespace: dispose() names them actions::carry_out,
// and a qualified name finds the watch actions' overloads but not an unnamed namespace's.

// Answer in the apiserver's place with the Status the engine rendered (code, body, Retry-After);
// the request never reaches upstream.
static Disposition carry_out(const fa::Respond&, const faults::Plan& plan) {
  if (!plan.response) throw std::logic_error("respond plan without a rendered response (rule " + plan.rule + ")");
  Disposition d;
  d.respond = *plan.response;
  d.forward = false;
  return d;
}

// Instead of answering, cut the client's connection: RST (reset) or FIN (close).
static Disposition cut_instead(Cut cut) {
  Disposition d;
  d.forward = false;
  d.cut = cut;
  return d;
}
static Disposition carry_out(const fa::Reset&, const faults::Plan&) { return cut_instead(Cut::reset); }
static Disposition carry_out(const fa::Close&, const faults::Plan&) { return cut_instead(Cut::close); }

// Hold the request for the latency the engine resolved (jitter included), then forward.
static Disposition carry_out(const fa::Delay&, const faults::Plan& plan) {
  Disposition d;
  d.wait_before = plan.delay;
  return d;
}

// Read the request, never answer; after the duration (if any) close the connection.
static Disposition carry_out(const fa::Hang& action, const faults::Plan&) {
  Disposition d;
  d.forward = false;
  d.hang = true;
  d.hang_for = action.duration;
  return d;
}

// Forward the request and let the apiserver carry it out, then lose the answer: the client sees a
// reset, a clean close or a hang instead, and never learns the write happened.
static Disposition carry_out(const fa::DropResponse& action, const faults::Plan&) {
  using Then = fa::DropResponse::Then;
  Disposition d;
  d.discard_response = true;
  switch (action.then) {
    case Then::reset:
      d.cut = Cut::reset;
      break;
    case Then::close:
      d.cut = Cut::close;
      break;
    case Then::hang:
      d.hang = true;
      break;
  }
  return d;
}

// The apiserver "goes down" behind the proxy. The request at hand is reset (reset, refuse) or held
// unanswered until the outage ends (blackhole); the server enforces the outage on every other
// connection and on the listener.
static Disposition carry_out(const fa::Outage& action, const faults::Plan&) {
  Disposition d;
  d.forward = false;
  d.outage = action.mode;
  d.outage_for = action.duration.value_or(std::chrono::milliseconds(0));
  if (action.mode == fa::Outage::Mode::blackhole) {
    d.hang = true;
    d.hang_for = d.outage_for;
  } else {
    d.cut = Cut::reset;
  }
  return d;
}

// End the client's connection the HTTP/2 way. Graceful: GOAWAY naming this stream as the last one
// taken, which is forwarded (HTTP/1.1: forwarded, answered with Connection: close). Abrupt: the
// connection ends at once, this request unanswered.
static Disposition carry_out(const fa::GoAway& action, const faults::Plan&) {
  Disposition d;
  const bool graceful = action.mode == fa::GoAway::Mode::graceful;
  d.goaway = Disposition::GoAway{graceful, action.error_code};
  if (!graceful) {
    d.forward = false;
    d.cut = Cut::close;
  }
  return d;
}

// The client's connection sends and reads nothing for the duration, then the request is forwarded
// (HTTP/2: no frames, no PING ACKs; HTTP/1.1: the one request waits, as with delay).
static Disposition carry_out(const fa::Stall& action, const faults::Plan&) {
  Disposition d;
  d.stall_for = action.duration;
  return d;
}

}  // namespace actions

Disposition dispose(const faults::Plan& plan) {
  if (!plan.action) return {};
  return std::visit([&plan](const auto& action) { return actions::carry_out(action, plan); }, *plan.action);
}

}  // namespace faultline::proxy
