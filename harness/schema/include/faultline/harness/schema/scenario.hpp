#pragma once
// A complete scenario file as faultline-harness reads it: the part faultline::faults reads (metadata,
// seed, fault rules: what the proxy uses) and the sections only the harness reads, `workload`,
// `componentFaults` and `checks`, loaded from the same document with the same bounds and errors.

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "faultline/faults/duration.hpp"
#include "faultline/faults/scenario.hpp"
#include "faultline/harness/schema/component_fault.hpp"
#include "faultline/harness/schema/declared.hpp"
#include "faultline/harness/schema/invariants.hpp"

namespace faultline::harness::schema {

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
  faults::Duration offset{0};
};

// A workload step that takes nodes away: the harness deletes up to `nodes` of the workload's KWOK
// nodes, those with the most pods in flight (allocated or bound, not yet Running), and creates them
// again `down_for` later.
struct NodeFlap {
  std::uint64_t nodes = 0;
  faults::Duration down_for{0};
};

// A churn step: for `for_`, pods are created at `rate` per second and each is deleted `lifetime`
// after its creation. Pods created in the last `lifetime` are still there when it ends. Bounded:
// at most max_churn_alive pods alive at once (rate * lifetime) and max_churn_pods in all (rate * for).
struct Churn {
  double rate = 0;
  faults::Duration lifetime{0};
  faults::Duration for_{0};
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
inline constexpr faults::Duration max_workload_duration = std::chrono::hours(24);

inline constexpr std::uint64_t max_churn_pods = max_workload_pods;
inline constexpr std::uint64_t max_churn_alive = 20'000;
inline constexpr faults::Duration max_churn_for = max_workload_duration;

// An objects step: `count` objects of any kind made from `template_json` (a whole object with
// apiVersion, kind and metadata.name, where "{i}" becomes 1..count, or metadata.generateName),
// created in the workload's namespace unless the template names one, through `resource`'s collection.
struct ObjectStep {
  std::string template_json;
  std::string api_version;  // the template's
  std::string resource;     // plural resource name: daemonsets
  std::uint64_t count = 0;
};
inline constexpr std::uint64_t max_step_objects = 10'000;  // objects.count
inline constexpr std::size_t max_object_template_bytes = 64 * 1024;

// One step of the workload: a phase of pods (pods > 0), a node flap (node_flap set, pods 0), a
// churn (churn set; pods = rate * for, rate = churn.rate) or objects (objects set, pods 0).
struct Phase {
  std::string name;
  std::uint64_t pods = 0;
  std::optional<NodeFlap> node_flap;
  std::optional<Churn> churn;
  std::optional<ObjectStep> objects;
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
  faults::Duration every{std::chrono::seconds(10)};
  double rss_kib_per_minute = 1024;  // proxy VmRSS growth bound, KiB per minute
  double fds_per_minute = 1;         // proxy open-descriptor growth bound, per minute
};

struct Checks {
  faults::Duration settle{std::chrono::seconds(120)};
  // checks.quietAfter: invariants are also checked at every quiet point, this long after the last
  // faulted request of a fault window (nullopt: only at the end).
  std::optional<faults::Duration> quiet_after;
  std::optional<ResourceChecks> resources;
  // As written: nullopt when the scenario leaves `invariants` out, an empty list for `invariants: []`.
  std::optional<std::vector<std::string>> invariants;
  // checks.declared: the scenario's own checks, always checked after the invariants
  std::vector<DeclaredCheck> declared;
  // checks a reproduction expects to be VIOLATED (of invariants_to_check() and declared)
  std::vector<std::string> expect;

  // What the harness checks: the listed invariants in the order listed, the default set
  // (default_invariant_names()) when none are listed, nothing for `invariants: []`.
  std::vector<std::string> invariants_to_check() const;
};

struct Scenario : faults::Scenario {
  std::optional<Workload> workload;
  std::vector<ComponentFault> component_faults;  // carried out by the harness, ignored by the proxy
  Checks checks;
};

// The whole document: every error of every section (faults::ScenarioError, as the proxy's loader
// throws it, with the harness sections' errors in document order), at most
// faults::max_reported_errors of them.
std::shared_ptr<const Scenario> load_scenario_file(const std::filesystem::path& path);
std::shared_ptr<const Scenario> load_scenario_text(std::string_view text, std::string_view source_name);

}  // namespace faultline::harness::schema
