#pragma once
// A scenario file (apiVersion faultline/v1, kind Scenario), parsed and validated. The proxy uses
// `faults` and `seed`; the harness uses `workload` and `checks`. Immutable once loaded: a running
// proxy swaps whole snapshots (std::shared_ptr<const Scenario>).

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "faultline/faults/component_fault.hpp"
#include "faultline/faults/duration.hpp"
#include "faultline/faults/invariants.hpp"
#include "faultline/faults/rule.hpp"

namespace faultline::faults {

struct Metadata {
  std::string name;
  std::string description;
};

struct NodePool {
  std::uint64_t count = 0;
  std::map<std::string, std::string> capacity;  // Kubernetes quantities as written: cpu, memory, pods
};

struct PodTemplate {
  std::string scheduler_name;  // "" -> the harness uses the scheduler under test
  std::map<std::string, std::string> labels;
  std::map<std::string, std::string> annotations;
  std::map<std::string, std::string> requests;
  std::map<std::string, std::string> limits;
  std::map<std::string, std::string> node_selector;
  std::string priority_class_name;
};

struct PhaseStart {
  enum class Kind {
    after_previous,  // default: when the previous phase has created all its pods
    offset,          // `start: 30s`: this long after the workload started
    settled,         // `start: settled`: when the pods of earlier phases have settled
  };
  Kind kind = Kind::after_previous;
  Duration offset{0};
};

// A workload step that takes nodes away: the harness deletes up to `nodes` of the workload's KWOK
// nodes, those with the most pods in flight (allocated or bound, not yet Running), and creates them
// again `down_for` later.
struct NodeFlap {
  std::uint64_t nodes = 0;
  Duration down_for{0};
};

// A churn step: for `for_`, pods are created at `rate` per second and each is deleted `lifetime`
// after its creation. Pods created in the last `lifetime` are still there when it ends. Bounded:
// at most max_churn_alive pods alive at once (rate * lifetime) and max_churn_pods in all (rate * for).
struct Churn {
  double rate = 0;
  Duration lifetime{0};
  Duration for_{0};
};

// Bounds on a workload, checked by the loader (a file or an admin API body, located errors) and by
// faultline-harness run's overrides (--nodes, --pods, --rate, --settle, --churn-for), which use
// these same constants.
inline constexpr std::uint64_t max_workload_nodes = 100'000;  // nodes.count
// pods of one phase, and of all phases together (churn steps included)
inline constexpr std::uint64_t max_workload_pods = 200'000;
inline constexpr double max_pod_rate = 10'000;             // pods per second: rate, churn.rate
inline constexpr std::uint64_t max_pod_concurrency = 256;  // concurrency: creations in flight
// start, nodeFlap.downFor, churn.for, churn.lifetime, checks.settle, checks.quietAfter
inline constexpr Duration max_workload_duration = std::chrono::hours(24);

inline constexpr std::uint64_t max_churn_pods = max_workload_pods;
inline constexpr std::uint64_t max_churn_alive = 20'000;
inline constexpr Duration max_churn_for = max_workload_duration;

// One step of the workload: a phase of pods (pods > 0), a node flap (node_flap set, pods 0), or a
// churn (churn set; pods = rate * for, rate = churn.rate).
struct Phase {
  std::string name;
  std::uint64_t pods = 0;
  std::optional<NodeFlap> node_flap;
  std::optional<Churn> churn;
  std::optional<double> rate;     // pod creations per second; nullopt: as fast as concurrency allows
  std::uint64_t concurrency = 8;  // creations in flight at once
  PhaseStart start;
  PodTemplate pod_template;
};

struct Workload {
  std::string namespace_ = "faultline";
  NodePool nodes;
  std::vector<Phase> phases;
};

// checks.resources: RSS and open descriptors of every stack component sampled every `every`; the
// proxy's least-squares slope over the last half of the run must stay under the bounds.
struct ResourceChecks {
  Duration every{std::chrono::seconds(10)};
  double rss_kib_per_minute = 1024;  // proxy VmRSS growth bound, KiB per minute
  double fds_per_minute = 1;         // proxy open-descriptor growth bound, per minute
};

struct Checks {
  Duration settle{std::chrono::seconds(120)};
  // checks.quietAfter: invariants are also checked at every quiet point, this long after the last
  // faulted request of a fault window (nullopt: only at the end).
  std::optional<Duration> quiet_after;
  std::optional<ResourceChecks> resources;
  // As written: nullopt when the scenario leaves `invariants` out, an empty list for `invariants: []`.
  std::optional<std::vector<std::string>> invariants;
  // invariants a reproduction expects to be VIOLATED (subset of invariants_to_check())
  std::vector<std::string> expect;

  // What the harness checks: the listed invariants in the order listed, the default set
  // (default_invariant_names()) when none are listed, nothing for `invariants: []`.
  std::vector<std::string> invariants_to_check() const;
};

struct Scenario {
  std::string source;  // file name (or the source name given to load_scenario_text)
  Metadata metadata;
  std::uint64_t seed = 0;
  std::optional<Workload> workload;
  std::vector<Rule> faults;
  std::vector<ComponentFault> component_faults;  // carried out by the harness, ignored by the proxy
  Checks checks;
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
// max_scenario_bytes long.
std::shared_ptr<const Scenario> load_scenario_file(const std::filesystem::path& path);
std::shared_ptr<const Scenario> load_scenario_text(std::string_view text, std::string_view source_name);

// The text of a scenario file. Only a regular file is read (a FIFO, a device or a directory is an
// error, and opening a FIFO does not wait for a writer), and only up to max_scenario_bytes.
// Throws ScenarioError.
std::string read_scenario_file(const std::filesystem::path& path);

}  // namespace faultline::faults
