#pragma once
// `faultline-harness explore`: the driver's files. An exploration directory (docs/explore.md):
//
//   DIR/plan.json                  the sweep plan format (sweep.hpp) plus, per cell, the plan's kind,
//                                  site, source, faults and index (its position among all the plans)
//   DIR/cells/<id>/run-NN/         the plan's runs (scripts/soak --plan)
//   DIR/reference/run-01/          the reference run: report.json, logs/proxy-audit.jsonl
//   DIR/minimize/<id>/minimized.yaml
//
// One or more such directories (the shards of one exploration) are read and merged into one
// Exploration, written as explore.json, junit.xml and a self-contained explore.html.

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "faultline/audit/record.hpp"

namespace faultline::harness::explore {

inline constexpr std::size_t max_reference_records = 1'000'000;   // audit records read from a reference run
inline constexpr std::size_t max_audit_line_bytes = 1024 * 1024;  // one audit line

// The audit records of a proxy audit log (JSON lines), at most max_records: more is an error, as is
// a line that does not decode ("FILE:LINE: what"). Empty lines are skipped.
std::vector<audit::Record> read_audit_file(const std::filesystem::path& file,
                                           std::size_t max_records = max_reference_records);

// One run of a plan, from its report.json.
struct PlanRun {
  std::uint64_t run = 0;              // 1-based
  std::string verdict;                // report.json's verdict, or "missing"
  std::string outcome;                // found | pass | inconclusive | error | missing
  std::vector<std::string> violated;  // checks violated (and not expected)
  bool fired = false;                 // every fault rule fired at least once
  std::optional<double> first_fault;  // seconds from the proxy being armed to the first fault (report_read.hpp)
  std::string error;
};

// A run's outcome from its report.json (read_run_report): `fail` (a plan expects no violation)
// is `found`; an `error` because a fault never fired is `inconclusive` (the run did not test the
// plan), any other `error` stays `error`.
PlanRun classify_run(std::string_view report_json, std::uint64_t run);

struct PlanResult {
  std::string id;
  std::uint64_t index = 0;  // position among all the plans of the exploration (before sharding)
  std::string kind, site, source;
  std::vector<std::string> faults;
  std::string shard;  // the directory it was read from
  std::string scenario_file;
  std::vector<PlanRun> runs;
  std::string verdict;                   // found | pass | inconclusive | error | missing (no run yet)
  bool fired = false;                    // some run fired every fault of the plan
  std::uint64_t found = 0, counted = 0;  // runs that violated an invariant, of the runs with a verdict
  std::optional<double> rate;
  std::vector<std::string> violated;  // union over the runs
  std::string minimized;              // DIR/minimize/<id>/minimized.yaml when it exists
};

// The plan's verdict from its runs: found when a run violated an invariant; else pass when a run
// passed with its faults fired; else inconclusive when a run's faults never fired; else error;
// missing without runs.
std::string plan_verdict(const std::vector<PlanRun>& runs);

// The system's writes and watches in the reference run, seconds from its first record.
struct TimelineEvent {
  double seconds = 0;
  bool watch = false;  // a watch request (else a write: create, update, patch, delete, deletecollection)
  std::string what;    // "create pods/binding"
};
std::vector<TimelineEvent> audit_timeline(const std::vector<audit::Record>& records);

struct Exploration {
  std::string name, scenario, scheduler;
  std::vector<std::string> dirs;
  std::uint64_t plans_total = 0;    // the plans generated (all shards)
  std::vector<std::string> shards;  // "1/2", ... as each directory's plan.json says
  std::vector<PlanResult> plans;    // by index
  std::vector<TimelineEvent> reference;
  std::string reference_dir;                     // where the reference run was read, "" when none
  std::string reference_note;                    // why there is no timeline
  std::optional<double> reference_armed_offset;  // seconds from the first audit record to the proxy being armed
};

// Reads and merges exploration directories (shards). Throws std::runtime_error on a bad plan.json,
// a plan id in two directories, or shards of different explorations.
Exploration read_exploration(const std::vector<std::filesystem::path>& dirs);

// A plan that found something, and where it stands in the order its re-runs and minimization
// take. Plans are grouped by the set of invariants their first violating run violated (their
// signature). A signature fewer plans share comes first: a rarer violation is likelier another
// bug, and a budget spent on one plan of each signature covers every kind of violation found. In
// each group the plan with the fewest fault rules (then the lowest index) is its `first`, the
// cheapest to minimize; every group's first comes before any group's other plans.
struct Finding {
  std::string id;
  std::vector<std::string> violated;  // the signature, sorted
  bool first = false;
};
std::vector<Finding> findings(const Exploration& e);

std::string render_explore_json(const Exploration& e);
std::string render_explore_junit(const Exploration& e);
std::string render_explore_html(const Exploration& e);
// explore.json, junit.xml and explore.html into dir.
void write_explore_reports(const Exploration& e, const std::filesystem::path& dir);

}  // namespace faultline::harness::explore
