// From the engine's Plan to the effects of its action.
#include "actions/effects_of.hpp"

namespace faultline::proxy {

Effects effects_of(const faults::Plan& plan) {
  if (!plan.action) return {};
  return std::visit([&plan](const auto& action) { return actions::effects_of(action, plan); }, *plan.action);
}

}  // namespace faultline::proxy
