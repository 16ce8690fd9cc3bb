#pragma once
// One harness run: workload, faults, observers, settle, checks, report.
#include <chrono>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "faultline/harness/limits.hpp"
#include "faultline/harness/report.hpp"
#include "faultline/harness/schema/scenario.hpp"
#include "faultline/harness/workload.hpp"

namespace faultline::harness {

struct RunOptions {
  std::filesystem::path kubeconfig;  // empty: $KUBECONFIG or ~/.kube/config
  std::string context;
  std::string scheduler = "yunikorn";  // the system under test's name (yunikorn, kube-scheduler, ...)
  std::string scheduler_name;          // the pods' spec.schedulerName; empty: derived from `scheduler`
  std::string yunikorn_url;            // YuniKorn's REST API: required with yunikorn; empty: no YuniKorn checks
  std::optional<SystemRecord> system;  // the system file's, for the report
  // The checks of the system file, for a scenario that lists no invariants.
  std::optional<std::vector<std::string>> default_checks;
  std::string proxy_admin_url;  // required when the scenario has faults
  std::string proxy_admin_token;
  // The local stack (scripts/stack's run dir and the script), required for component faults.
  std::filesystem::path stack_run_dir;
  std::filesystem::path stack_script;
  std::filesystem::path out_dir;  // fullstatedump and other raw evidence go here too
  // Overrides of the scenario (the chaos driver's NODES=, PODS=, RATE=, ...); pods/rate apply to the
  // first phase of pods, nodes to the node pool.
  std::optional<std::uint64_t> nodes;
  std::optional<std::uint64_t> pods;
  std::optional<double> rate;
  std::optional<std::chrono::milliseconds> settle;
  std::optional<std::chrono::milliseconds> churn_for;  // every churn step's `for` (within its bounds)
  std::optional<std::vector<std::string>> expect;
  unsigned node_concurrency = 16;
  std::chrono::seconds node_ready_timeout{180};
  ReadLimits limits;  // of every answer read from the apiserver, the proxy and YuniKorn
};

// The most pods the pod watch tracks for a workload: twice the pods its phases create, plus 1,000.
std::uint64_t max_watched_pods(const schema::Workload& workload);

// Never throws for a failed run: the report then carries verdict `error` and the reason, plus
// whatever was observed before the failure.
// Deadlines, the settle's quiet period and phase offsets read `clock`.
Report run_scenario(const RunOptions& options, const schema::Scenario& scenario, const std::string& scenario_text,
                    const ProgressFn& progress, const faults::Clock& clock = real_clock());

// Checks the scenario's invariants (checks.invariants_to_check(): the default set when the scenario
// lists none, nothing for `invariants: []`) against what was observed, with `expect` overriding
// checks.expect when set. Fills report.checks, adds a note when nothing is checked, and returns the
// verdict of the checks (pass when there are none). Throws std::invalid_argument for an expectation
// that names an invariant not being checked. `declared` are the results of checks.declared
// (declared_checks.hpp), added after the invariants in the scenario's order (no-data for one
// missing); `expect` may name them too.
Verdict check_invariants(const schema::Checks& checks, const std::optional<std::vector<std::string>>& expect,
                         const Observations& obs, Report& report, const std::vector<CheckResult>& declared = {});

}  // namespace faultline::harness
