#pragma once
// Reading a scenario document together with the sections another library defines: faultline-harness
// reads `workload`, `componentFaults` and `checks` (harness/schema) from the same document as this
// library's metadata, seed and faults, with the same bounds and the same "file:line:column:
// key.path: what is wrong" errors, all reported at once in document order. Pulls in yaml-cpp.

#include <string_view>

#include "faultline/faults/scenario.hpp"
#include "faultline/faults/yaml_reader.hpp"

namespace faultline::faults {

// Reads the harness_sections of a document.
class SectionReader {
 public:
  virtual ~SectionReader() = default;
  // `key` is one of harness_sections; `node` its value, undefined when the document leaves the key
  // out. Errors go to `errors` (the path of the section is its key).
  virtual void read(std::string_view key, const YAML::Node& node, detail::Errors& errors) = 0;
};

// Loads `text` into `scenario` (its source, metadata, seed and faults), handing each of the
// harness_sections to `sections` in order. Throws ScenarioError with every problem of the document,
// this library's and those `sections` reported, in the order found.
void load_scenario_text(std::string_view text, std::string_view source_name, Scenario& scenario,
                        SectionReader& sections);

}  // namespace faultline::faults

namespace faultline::faults::detail {

// The readers of the scenario language that sections of other libraries use too.
Match parse_match(MapReader& reader);  // a `match:` mapping (also a trigger's `of:`)
// A positive duration or nullopt (reporting "must be greater than 0").
std::optional<Duration> positive_duration(MapReader& reader, std::string_view key, bool required = false);

}  // namespace faultline::faults::detail
