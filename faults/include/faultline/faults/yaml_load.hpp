#pragma once
// Scenario text to a yaml-cpp tree, within bounds, and a loaded tree to JSON. Everything that
// reads scenario YAML (the scenario loader, the admin API's JSON view of it) goes through here.

#include <yaml-cpp/yaml.h>
#include <boost/json/value.hpp>

#include <functional>
#include <string_view>

#include "faultline/faults/yaml_reader.hpp"

namespace faultline::faults::detail {

// The one YAML document of `text`. Reports, and returns an undefined node for: a second document
// (at its "---"; nothing after the first is silently dropped), text longer than
// max_scenario_bytes, invalid UTF-8 or control characters (with their position), invalid YAML,
// anchors and aliases (yaml-cpp shares the aliased node, so every reader of the tree walks it again
// for each alias: nested aliases amplify exponentially), nesting deeper than max_scenario_depth,
// more than max_scenario_nodes values. The bounds are checked on the parser's events, before any
// tree is built.
YAML::Node load_yaml(std::string_view text, Errors& errors);

// Reads the one document of `text` (load_yaml) with `parse`: an empty file, and a node shape the
// readers did not expect, are errors too. Throws ScenarioError with every error when there is any.
void read_document(std::string_view text, Errors& errors, const std::function<void(const YAML::Node&)>& parse);

// A tree from load_yaml as JSON. Plain scalars are typed by YAML 1.2's core schema: null (~, null,
// Null, NULL, empty), booleans (true, True, TRUE, false, False, FALSE), decimal integers (int64;
// larger ones as doubles), decimals with optional exponent; a number JSON cannot hold (.inf, .nan,
// overflow) and everything else (0x1F, inf, yes) stays the string it was written as. Quoted
// scalars are strings. Mapping keys are their text (a null key is "null"); a key that is a
// mapping or a list throws YAML::RepresentationException.
boost::json::value to_json(const YAML::Node& node);

}  // namespace faultline::faults::detail
