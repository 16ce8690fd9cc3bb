#pragma once
// Parsers for the sections of a scenario file (internal).

#include "faultline/faults/scenario_reader.hpp"

namespace faultline::faults::detail {

std::vector<Rule> parse_faults(const YAML::Node& node, const std::string& path, Errors& errors);

}  // namespace faultline::faults::detail
