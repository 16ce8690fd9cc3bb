#pragma once
// Parsers for the sections of a scenario file (internal).

#include <optional>

#include "faultline/faults/scenario.hpp"
#include "yaml_reader.hpp"

namespace faultline::faults::detail {

Match parse_match(MapReader& reader);
std::vector<Rule> parse_faults(const YAML::Node& node, const std::string& path, Errors& errors);
std::vector<ComponentFault> parse_component_faults(const YAML::Node& node, const std::string& path, Errors& errors);
Workload parse_workload(MapReader& reader);
Checks parse_checks(MapReader& reader);

}  // namespace faultline::faults::detail
