#pragma once
// A scenario file (apiVersion faultline/v1, kind Scenario), parsed and validated: the part the
// proxy uses (metadata, `seed`, `faults`). The sections only faultline-harness reads (`workload`,
// `componentFaults`, `checks`) are its own (harness/schema); this loader accepts them unread and
// lists them in Scenario::unread_sections, the harness's loader reads them from the same document
// (faultline/faults/scenario_reader.hpp). Immutable once loaded: a running proxy swaps whole
// snapshots (std::shared_ptr<const Scenario>).

#include <array>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "faultline/faults/rule.hpp"

namespace faultline::faults {

struct Metadata {
  std::string name;
  std::string description;
};

// The top-level sections of a scenario file that faultline-harness reads and this library does not
// (harness/schema), in the order they are read.
inline constexpr std::array<std::string_view, 3> harness_sections{"workload", "componentFaults", "checks"};

struct Scenario {
  std::string source;  // file name (or the source name given to load_scenario_text)
  Metadata metadata;
  std::uint64_t seed = 0;
  std::vector<Rule> faults;
  // The harness_sections the file has and nobody read (load_scenario_text: all it has; the
  // harness's loader reads them all), in the order of harness_sections.
  std::vector<std::string> unread_sections;
};

// Bounds on one scenario (a file, or the body of the admin API's PUT /v1/scenario). What is beyond
// them is an error, so neither loading nor anything done with a loaded scenario can grow without bound.
inline constexpr std::size_t max_scenario_bytes = 1024 * 1024;  // 1 MiB
inline constexpr std::size_t max_scenario_depth = 64;           // mappings and lists inside each other
inline constexpr std::size_t max_scenario_nodes = 100'000;      // values: scalars, mappings, lists
inline constexpr std::size_t max_reported_errors = 50;          // then "... and N more errors"

// All problems found in one file, each "file:line:column: key.path: what is wrong".
class ScenarioError : public std::runtime_error {
 public:
  explicit ScenarioError(std::vector<std::string> errors);
  const std::vector<std::string>& errors() const { return errors_; }

 private:
  std::vector<std::string> errors_;
};

// Throw ScenarioError (never a yaml-cpp exception) for anything invalid. Scenario text is UTF-8
// YAML without anchors and aliases (an alias would let a few bytes expand into gigabytes), at most
// max_scenario_bytes long. The harness_sections are accepted without being read (the errors in them
// are faultline-harness's to report: `faultline-harness validate`); any other unknown top-level key
// is an error.
std::shared_ptr<const Scenario> load_scenario_file(const std::filesystem::path& path);
std::shared_ptr<const Scenario> load_scenario_text(std::string_view text, std::string_view source_name);

// The text of a scenario file. Only a regular file is read (a FIFO, a device or a directory is an
// error, and opening a FIFO does not wait for a writer), and only up to max_scenario_bytes.
// Throws ScenarioError.
std::string read_scenario_file(const std::filesystem::path& path);

}  // namespace faultline::faults
