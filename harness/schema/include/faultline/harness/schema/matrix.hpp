#pragma once
// A matrix file (apiVersion faultline/v1, kind Matrix): one base scenario, axes of values at YAML
// paths of that scenario (or of the cluster's settings), runs per cell. Loading it expands it into
// one complete scenario per cell, each checked by the scenario loader, so a sweep never starts a
// cell that cannot run. Pure: no I/O beyond reading the matrix file and its base scenario.
//
//   apiVersion: faultline/v1
//   kind: Matrix
//   metadata: {name: yunikorn-3355-window}
//   scenario: yunikorn-3355-outage      # a shipped scenario name, or a file relative to this one
//   scheduler: yunikorn                 # yunikorn | kube-scheduler
//   yunikorn: v1.9.0                    # the YuniKorn build (as scripts/components takes it)
//   runs: 3                             # runs per cell, default 1
//   nodes: 20                           # sets workload.nodes.count
//   pods: 200                           # sets workload.phases[0].pods
//   set: {checks.settle: 60s}           # any other path, the same value in every cell
//   cluster: {maxRequestsInflight: 800, maxMutatingRequestsInflight: 400, exemptScheduler: false}
//   axes:                               # each a list of values, or a range A..B of whole numbers
//     faults[0].when.afterMatches, faults[1].when.afterMatches: [0, 100, 300]   # paths set together
//     faults[0].when.for: [2s, 10s]
//     cluster.maxRequestsInflight: [400, 3000]
//     seed: 1..3

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "faultline/harness/schema/scenario.hpp"

namespace faultline::harness::schema {

// kube-apiserver's own settings. Cells that differ here need a stack of their own.
struct ClusterSettings {
  std::optional<std::uint64_t> max_requests_inflight;           // --max-requests-inflight
  std::optional<std::uint64_t> max_mutating_requests_inflight;  // --max-mutating-requests-inflight
  bool exempt_scheduler = false;  // a FlowSchema puts the scheduler's user at priority level `exempt`
  bool operator==(const ClusterSettings&) const = default;
};

// The keys of `cluster:` (and of `cluster.<key>` axes), in this order.
inline constexpr const char* cluster_setting_keys[] = {"maxRequestsInflight", "maxMutatingRequestsInflight",
                                                       "exemptScheduler"};

struct MatrixAxis {
  std::vector<std::string> paths;   // one or more paths set to the same value
  std::vector<std::string> values;  // the values, as YAML scalars (their text)
};

struct MatrixCell {
  std::string id;                                           // c001, c002, ... in expansion order
  std::vector<std::pair<std::string, std::string>> values;  // axis (its first path) -> value
  std::string scenario_text;                                // the base with this cell's values
  std::shared_ptr<const Scenario> scenario;                 // that text, loaded
  ClusterSettings cluster;
  std::string expected_verdict;  // "reproduced" when the scenario expects violations, else "pass"
};

struct Matrix {
  std::string source;  // the matrix file
  std::string name;
  std::string description;
  std::filesystem::path scenario_file;  // the base scenario, resolved
  std::string scheduler;                // yunikorn | kube-scheduler
  std::string yunikorn;                 // the YuniKorn build; empty: the default (v1.9.0)
  std::uint64_t runs = 1;
  std::vector<MatrixAxis> axes;
  std::vector<MatrixCell> cells;  // first axis slowest
};

// Bounds: what a matrix may ask for, so a typo cannot start a sweep of a million runs.
inline constexpr std::size_t max_matrix_cells = 1000;
inline constexpr std::size_t max_matrix_axes = 8;
inline constexpr std::size_t max_matrix_set_paths = 64;         // entries under `set:`
inline constexpr std::uint64_t max_matrix_runs = 100;           // per cell
inline constexpr std::uint64_t max_matrix_total_runs = 10'000;  // cells x runs

// Loads and expands a matrix file. `scenario:` is a file relative to the matrix file's directory,
// or else a name in `shipped_scenarios` (NAME.yaml). Throws ScenarioError with every problem as
// "file:line:column: key.path: what is wrong" (the matrix file's positions; a cell the scenario
// loader rejects is reported at the axis value, or for a combination at `axes`, with the scenario
// loader's own error appended).
Matrix load_matrix_file(const std::filesystem::path& path, const std::filesystem::path& shipped_scenarios);
Matrix load_matrix_text(std::string_view text, std::string_view source_name, const std::filesystem::path& base_dir,
                        const std::filesystem::path& shipped_scenarios);

}  // namespace faultline::harness::schema
