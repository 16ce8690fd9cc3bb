// delay: hold the request for the latency the engine resolved (jitter included), then forward.
#include "actions/effects_of.hpp"

namespace faultline::proxy::actions {

template <>
Effects effects_of(const faults::actions::Delay&, const faults::Plan& plan) {
  return sequence(effect::Wait{plan.delay});
}

}  // namespace faultline::proxy::actions
