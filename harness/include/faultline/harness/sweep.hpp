#pragma once
// A matrix sweep's results (scripts/soak --matrix): the plan `faultline-harness matrix expand`
// wrote (plan.json), each run's report.json, and per cell the reproduction rate with its 95% Wilson
// interval, the median stranded pods, phantom allocations and time to the first fault. Written as
// soak.json, soak.tsv, junit.xml (one testcase per cell) and a self-contained soak.html.

#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "faultline/harness/schema/matrix.hpp"

namespace faultline::harness {

// The Wilson score interval of k successes in n trials at z (1.96: 95%). {0, 1} when n is 0.
struct Interval {
  double low = 0;
  double high = 1;
};
Interval wilson_interval(std::uint64_t k, std::uint64_t n, double z = 1.959963984540054);

// The median of the values (the mean of the middle two for an even count); nullopt when empty.
std::optional<double> median(std::vector<double> values);

// One run of a cell, from its report.json (verdict "missing" when there is none).
struct SweepRun {
  std::uint64_t run = 0;  // 1-based
  std::string verdict;    // pass | reproduced | fail | error | missing
  std::optional<double> stranded;
  std::optional<double> phantom;
  std::optional<double> first_fault_seconds;  // from the proxy being armed to the first fault (report_read.hpp)
  std::optional<double> seconds;              // the run's duration
  std::string stack;                          // how the stack was had: fresh, reused, or why fresh
  std::string error;
};

struct SweepCell {
  std::string id;
  std::vector<std::pair<std::string, std::string>> values;  // axis -> value
  std::string cluster;                                      // the cluster settings, as a stack key
  std::vector<std::string> stack_args;                      // `scripts/stack up` options for them
  std::string expected;                                     // pass | reproduced
  std::vector<SweepRun> runs;
  std::uint64_t runs_wanted = 0;  // plan.json's cell `runs` (scripts/soak --plan): 0 is the plan's `runs`
  std::string dir;                // plan.json's cell `dir`, relative to the sweep directory: "" is cells/<id>
};

struct SweepAxis {
  std::string name;
  std::vector<std::string> values;
};

struct SweepPlan {
  std::string name;
  std::string scenario;
  std::string scheduler;
  std::string yunikorn;
  std::uint64_t runs = 1;
  std::vector<SweepAxis> axes;
  std::vector<SweepCell> cells;
};

// The plan of an expanded matrix (what plan.json holds), and its JSON both ways.
SweepPlan plan_of(const schema::Matrix& m);
std::string plan_json(const SweepPlan& plan);
SweepPlan parse_plan_json(std::string_view text);  // throws std::runtime_error

// cluster settings -> "maxRequestsInflight=400 ..." (empty: the stack's defaults), and the
// `scripts/stack up` options for them.
std::string cluster_key(const schema::ClusterSettings& c);
std::vector<std::string> cluster_stack_args(const schema::ClusterSettings& c);

// A run read from report.json's text (read_run_report): verdict "error" when it is not a JSON
// object or has no verdict.
SweepRun parse_run_report(std::string_view report_json, std::uint64_t run);

struct CellSummary {
  const SweepCell* cell = nullptr;
  std::uint64_t done = 0;        // runs with a report
  std::uint64_t counted = 0;     // runs with a verdict other than error: the rate's n
  std::uint64_t reproduced = 0;  // the rate's k: runs that broke invariants as the scenario expects
                                 // (verdict reproduced), or for a control any violation (verdict fail)
  std::optional<double> rate;
  Interval interval;
  std::optional<double> median_stranded;
  std::optional<double> median_phantom;
  std::optional<double> median_first_fault_seconds;
  std::map<std::string, std::uint64_t> verdicts;
  std::uint64_t fresh_stacks = 0;  // runs on a stack brought up again after an unhealthy one
  bool as_expected = false;        // every run done and every verdict the expected one
};

struct SweepSummary {
  const SweepPlan* plan = nullptr;
  std::vector<CellSummary> cells;
  std::uint64_t runs_done = 0;
  std::uint64_t runs_total = 0;
};

SweepSummary summarize(const SweepPlan& plan);

std::string render_sweep_json(const SweepSummary& s);
std::string render_sweep_tsv(const SweepSummary& s);
std::string render_sweep_junit(const SweepSummary& s);
std::string render_sweep_html(const SweepSummary& s);
// soak.html's chart on its own (the heatmap for two axes, the line chart for one), or nothing.
std::optional<std::string> render_sweep_svg(const SweepSummary& s);

// The sweep directory: DIR/plan.json, DIR/cells/<id>/run-<NN>/{report.json,stack.txt}. Reads
// every run there is (bounded reads), writes soak.json, soak.tsv, junit.xml and soak.html into DIR.
SweepPlan read_sweep(const std::filesystem::path& dir);
void write_sweep_reports(const SweepSummary& s, const std::filesystem::path& dir);
std::filesystem::path run_dir(const std::filesystem::path& dir, const std::string& cell, std::uint64_t run);
// The runs a cell wants: its own `runs`, else the plan's.
std::uint64_t runs_of(const SweepPlan& plan, const SweepCell& cell);

}  // namespace faultline::harness
