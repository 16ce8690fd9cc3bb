#include "faultline/harness/schema/component_fault.hpp"

namespace faultline::harness::schema {

std::string_view name_of(Component c) { return component_names[static_cast<std::size_t>(c)]; }

std::string_view name_of(ComponentAction a) { return component_action_names[static_cast<std::size_t>(a)]; }

std::string component_action_problem(Component target, ComponentAction action) {
  if (target == Component::airflow_scheduler && (action == ComponentAction::kill || action == ComponentAction::restart))
    return "airflow-scheduler can be paused and resumed only, not " + std::string(name_of(action)) +
           ": nothing can start it again";
  return {};
}

bool component_fault_due(const ComponentFault& fault, faults::Duration since_arm, std::uint64_t matched) {
  if (since_arm < fault.at) return false;
  return !fault.trigger || matched >= fault.trigger->after_matches;
}

}  // namespace faultline::harness::schema
