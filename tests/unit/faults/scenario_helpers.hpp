#pragma once
// Builds small scenarios from YAML snippets, so each test shows exactly the rule it exercises.

#include <chrono>
#include <memory>
#include <string>

#include "faultline/faults/engine.hpp"
#include "faultline/faults/scenario.hpp"

namespace faultline::faults::testing {

// A complete scenario whose `faults:` section is `faults_yaml` (a YAML list, any indentation).
inline std::shared_ptr<const Scenario> scenario_with_faults(const std::string& faults_yaml, std::uint64_t seed = 42) {
  std::string text = "apiVersion: faultline/v1\nkind: Scenario\nmetadata: {name: unit}\nseed: " + std::to_string(seed) +
                     "\nfaults:\n" + faults_yaml + "\n";
  return load_scenario_text(text, "unit.yaml");
}

// One rule that always fires with `action_yaml` (a flow mapping like "{type: reset}").
inline std::shared_ptr<const Scenario> scenario_with_action(const std::string& action_yaml) {
  return scenario_with_faults("- {name: only, action: " + action_yaml + "}");
}

inline Clock::time_point t0() { return Clock::time_point{} + std::chrono::hours(1); }

inline Request bind_request(const std::string& pod = "burst-1") {
  return make_request("POST", "/api/v1/namespaces/faultline/pods/" + pod + "/binding",
                      {{"User-Agent", "yunikorn-scheduler"}});
}

inline Request pod_watch() { return make_request("GET", "/api/v1/pods?watch=true&resourceVersion=10"); }

// Arms a fresh engine on `scenario` at t0() and decides one request at t0().
inline Plan decide_once(std::shared_ptr<const Scenario> scenario, const Request& request) {
  Engine engine(std::move(scenario));
  engine.arm(t0());
  return engine.decide(request, t0());
}

// Runs a load expected to fail and returns its error lines.
template <typename Load>
std::vector<std::string> load_errors(Load load) {
  try {
    load();
  } catch (const ScenarioError& e) {
    return e.errors();
  }
  return {"<loaded without errors>"};
}

}  // namespace faultline::faults::testing
