#pragma once
// Scenario parsing of actions: the registry (action.cpp) reads the envelope (`type`), then hands
// the same mapping to the action's own static `parse`, which reads only its attributes.

#include <optional>
#include <string_view>

#include "faultline/faults/action.hpp"
#include "faultline/faults/scenario_reader.hpp"

namespace faultline::faults::detail {

// nullopt when `type` is missing or unknown (reported); otherwise the action, whose attribute
// errors (if any) are in reader.errors().
std::optional<Action> parse_action(MapReader& reader);

}  // namespace faultline::faults::detail
