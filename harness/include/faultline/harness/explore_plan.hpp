#pragma once
// `faultline-harness explore`: the fault plans derived from what the system under test did in a
// reference run (the scenario without its faults), read from the proxy's audit log.
//
// Each plan is a whole scenario a user can run alone: the reference scenario (faults,
// componentFaults and checks.expect removed) plus the plan's own `faults:` / `componentFaults:`.
// The kinds and the ideas they come from:
//
// | kind                 | source     | what                                                          |
// |----------------------|------------|---------------------------------------------------------------|
// | write-fail           | Rainmaker  | one write of a site answered 500, 503, 429 or 409, not applied |
// | write-drop-response  | Rainmaker  | one write applied, its answer lost                              |
// | write-cut            | Rainmaker  | one write's connection reset before it reaches the apiserver    |
// | outage, outage-relist| outage     | a 10 s reset/blackhole outage at a moment of the writes, with or |
// |                      |            | without the relist a restarted apiserver causes (watch-gone)    |
// | watch-reset/-gone/-drop/-delay | Sieve | a watch of a resource whose events preceded writes     |
// | stale-read           | Sieve      | a relist served from before a delete whose object came back     |
// | kill, pause          | CrashTuner | by default the system under test (`scheduler`) killed or paused  |
// |                      |            | for 10 s right after a write to meta-information (bindings,     |
// |                      |            | nodes, leases, status); with GenerateOptions::components, each   |
// |                      |            | declared component, for each of its downFor lengths, right after |
// |                      |            | each of its own writes and right after the first request of each |
// |                      |            | peer (a user agent whose first request came after arming)        |
//
// Pruning as Sieve does (counted per rule in Plans::rules): no plan for a write the apiserver did
// not answer 2xx (not effective), for a site the reference run never reached, for a watch that
// relayed no event or that no write of the system followed; at most max_plans plans
// (deterministically: the first occurrence of every site before any site's densest or last one).
//
// Same reference scenario and audit -> the same plans, ids and order.

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "faultline/audit/record.hpp"
#include "faultline/harness/schema/component_fault.hpp"

namespace faultline::harness::explore {

inline constexpr std::size_t max_plans = 1000;               // the sweep's bound
inline constexpr std::size_t max_audit_records = 1'000'000;  // records read from the reference audit
inline constexpr std::size_t max_plan_id_bytes = 96;         // before a "-2" collision suffix
// A watch that relayed at most this many bytes carried no object event (a bookmark is about 150).
inline constexpr std::uint64_t min_watch_event_bytes = 256;

struct Plan {
  std::string id;             // stable, content-derived, filename-safe, e.g. "write-503-create-pods-binding-first";
                              // the same plan gets the same id whether or not the plans are sharded
  std::string kind;           // write-fail | write-drop-response | write-cut | outage | outage-relist |
                              // watch-reset | watch-gone | watch-drop | watch-delay | stale-read | kill | pause
  std::string site;           // human text: "create pods/binding by yunikorn* (occurrence 312 of 3000, densest burst)"
  std::string source;         // the idea it comes from: "Rainmaker", "Sieve", "CrashTuner", "outage"
  std::string scenario_yaml;  // the whole scenario a user can run alone (no checks.expect)
  std::vector<std::string> faults;  // names of its fault rules and component faults

  friend bool operator==(const Plan&, const Plan&) = default;
};

struct GenerationRule {
  std::string name;
  std::uint64_t produced = 0;  // plans (or, for the input rules, records) the rule let through
  std::uint64_t removed = 0;   // candidates it removed
  std::string why_removed;

  friend bool operator==(const GenerationRule&, const GenerationRule&) = default;
};

struct Plans {
  std::vector<Plan> plans;
  std::vector<GenerationRule> rules;
};

struct GenerateOptions {
  // When the reference run armed the proxy (report.json's `armed`): the proxy's triggers count
  // requests from then on, so earlier records are left out (counted in rule "before-arm").
  // nullopt: every record counts.
  std::optional<std::chrono::system_clock::time_point> armed;
  // When the reference run ended (report.json's `finished`): a record that ended later was written
  // after the run (a watch the system kept open, added to the audit afterwards), and the harness,
  // which counts a component fault's `afterMatches` over the records written during a run, never
  // counts it. nullopt: every record was written during the run.
  std::optional<std::chrono::system_clock::time_point> finished;
  // User agents (prefixes) that are not the system under test: the harness's own.
  std::vector<std::string> ignored_user_agents{"faultline-harness"};
  // The components the kill and pause plans target (a system file's explore.components), in order.
  // Empty: the stack's `scheduler`, kill and pause for 10 s right after writes to meta-information.
  std::vector<schema::ExploreComponent> components;
};

// The scenario text with `faults`, `componentFaults` and `checks.expect` removed. Edits the text
// (comments and quoting stay) when these are block-style entries; otherwise the document is written
// out again with yaml-cpp. Throws std::runtime_error when the text is not one YAML mapping.
std::string reference_scenario(std::string_view scenario_text);

// The plans from the reference scenario (as reference_scenario returns it, or any scenario: its
// faults, componentFaults and checks.expect are removed first) and the reference run's audit
// records, in log order. Every plan's scenario_yaml loads with schema::load_scenario_text; a plan
// that would not is removed and counted (rule "invalid"). Throws std::runtime_error when the
// reference scenario itself does not load.
Plans generate_plans(std::string_view reference_scenario_text, const std::vector<audit::Record>& reference_audit);
Plans generate_plans(std::string_view reference_scenario_text, const std::vector<audit::Record>& reference_audit,
                     const GenerateOptions& options);

// The plans of shard `index` (1-based) of `count`: those at positions i (0-based, in `all`) with
// i % count == index - 1, ids unchanged. Throws std::invalid_argument for count 0 or index outside 1..count.
std::vector<Plan> shard_of(const std::vector<Plan>& all, unsigned index /*1-based*/, unsigned count);

// One line per rule, "name\tproduced\tremoved\twhy" under a header line (DIR/generation.tsv).
std::string generation_tsv(const std::vector<GenerationRule>& rules);

}  // namespace faultline::harness::explore
