// hold: the request waits in its rule's batch (gate.hpp), then is forwarded, reset or answered
// with the batch.
#include <stdexcept>

#include "actions/effects_of.hpp"

namespace faultline::proxy::actions {

template <>
Effects effects_of(const faults::actions::Hold& action, const faults::Plan& plan) {
  effect::Gate gate;
  gate.rule = plan.rule;
  gate.count = action.batch_size();
  gate.wait = std::chrono::duration_cast<std::chrono::milliseconds>(action.wait());
  gate.then = action.then;
  if (action.then == faults::actions::Hold::Then::respond) {
    if (!plan.response) throw std::logic_error("hold plan without a rendered response (rule " + plan.rule + ")");
    gate.response = *plan.response;
  }
  return sequence(std::move(gate));
}

}  // namespace faultline::proxy::actions
