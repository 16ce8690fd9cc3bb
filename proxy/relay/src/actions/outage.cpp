// outage: the apiserver "goes down" behind the proxy. The request at hand is reset (reset, refuse)
// or held unanswered until the outage ends (blackhole); the server enforces the outage on every
// other connection and on the listener.
#include "actions/effects_of.hpp"

namespace faultline::proxy::actions {

template <>
Effects effects_of(const faults::actions::Outage& action, const faults::Plan&) {
  const std::chrono::milliseconds duration = action.duration.value_or(std::chrono::milliseconds(0));
  effect::EnforceOutage outage{action.mode, duration};
  if (action.mode == faults::actions::Outage::Mode::blackhole) return sequence(outage, effect::Hold{duration});
  return sequence(outage, effect::CutOff{Cut::reset});
}

}  // namespace faultline::proxy::actions
