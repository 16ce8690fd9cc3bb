// outage: the apiserver "goes down" behind the proxy. The request at hand is reset (reset,
// refuse) or held unanswered until the outage ends (blackhole); the server enforces the outage on
// every other connection and on the listener.
#include "faultline/proxy/disposition.hpp"

namespace faultline::proxy::actions {

Disposition outage(const faults::actions::Outage& action) {
  using Mode = faults::actions::Outage::Mode;
  Disposition d;
  d.forward = false;
  d.outage = action.mode;
  d.outage_for = action.duration.value_or(std::chrono::milliseconds(0));
  if (action.mode == Mode::blackhole) {
    d.hang = true;
    d.hang_for = d.outage_for;
  } else {
    d.cut = Cut::reset;
  }
  return d;
}

}  // namespace faultline::proxy::actions
