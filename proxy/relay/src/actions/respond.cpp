// respond: answer in the apiserver's place with the Status the engine rendered (code, body,
// Retry-After); the request never reaches upstream.
#include <stdexcept>

#include "actions/effects_of.hpp"

namespace faultline::proxy::actions {

template <>
Effects effects_of(const faults::actions::Respond&, const faults::Plan& plan) {
  if (!plan.response) throw std::logic_error("respond plan without a rendered response (rule " + plan.rule + ")");
  return sequence(effect::Answer{*plan.response});
}

}  // namespace faultline::proxy::actions
