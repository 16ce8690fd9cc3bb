// From the engine's Plan to the effects of its action.
#include "actions/effects_of.hpp"

namespace faultline::proxy {

Effects effects_of(const faults::Plan& plan) {
  Effects out;
  // A stale-read rule's window opened with this request: record the resourceVersion first.
  if (!plan.record_resource_version.empty())
    out.emplace_back(effect::RecordResourceVersion{plan.record_resource_version});
  if (!plan.action) return out;
  Effects action = std::visit([&plan](const auto& a) { return actions::effects_of(a, plan); }, *plan.action);
  if (out.empty()) return action;
  for (auto& e : action) out.push_back(std::move(e));
  return out;
}

}  // namespace faultline::proxy
