#pragma once
// Readers of the harness's sections of a scenario file (internal), built on faultline::faults's
// scenario readers (MapReader, Errors, the match and duration readers).

#include <string>
#include <vector>

#include "faultline/faults/scenario_reader.hpp"
#include "faultline/harness/schema/scenario.hpp"

namespace faultline::harness::schema::detail {

using namespace faults;
using namespace faults::detail;

std::vector<ComponentFault> parse_component_faults(const YAML::Node& node, const std::string& path, Errors& errors);
Workload parse_workload(MapReader& reader);
Checks parse_checks(MapReader& reader);
std::vector<DeclaredCheck> parse_declared(MapReader& checks);  // checks.declared

}  // namespace faultline::harness::schema::detail
