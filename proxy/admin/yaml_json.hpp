#pragma once
// GET /v1/scenario?format=json: the running scenario's YAML rendered as JSON.

#include <boost/json/value.hpp>

#include <string_view>

namespace faultline::admin {

// Converts one YAML document to JSON. Plain scalars are typed as YAML 1.2's core schema types
// them (null, true/false, integers, decimals); quoted scalars and everything else stay strings;
// mapping keys are strings. Throws std::runtime_error for YAML that does not parse.
boost::json::value yaml_to_json(std::string_view yaml);

}  // namespace faultline::admin
