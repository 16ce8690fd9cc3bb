#pragma once
// Scenario YAML as JSON: the admin API's GET /v1/scenario?format=json and watch-inject's object
// templates use this one conversion.

#include <string>
#include <string_view>

namespace faultline::faults {

// The YAML document as compact JSON text. Plain scalars are typed as YAML 1.2's core schema
// types them: null (~, null, Null, NULL, empty), true/True/TRUE, false/False/FALSE, decimal
// integers, decimals with an optional exponent. A number JSON cannot hold (.inf, .nan, one that
// overflows a double) and everything else (0x1F, inf, yes, 10m) stays the string it was written
// as; quoted scalars are strings; mapping keys are strings. The text is read within the bounds of
// a scenario (size, UTF-8, no anchors or aliases, depth, values), so the result is bounded too.
// Throws ScenarioError (source name `source_name`) when the text cannot be read.
std::string yaml_to_json(std::string_view yaml, std::string_view source_name = "scenario");

}  // namespace faultline::faults
