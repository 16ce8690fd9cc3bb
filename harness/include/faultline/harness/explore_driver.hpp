#pragma once
// `faultline-harness explore reference|plan|found|minimize-step|report`: the steps scripts/explore runs,
// each reading and writing files of an exploration directory (docs/explore.md), so that every step
// can be resumed and tested on its own. Each returns the exit status: 0 done, 2 bad input (said on
// `err`, with file:line where there is one).

#include <cstddef>
#include <ostream>
#include <string>
#include <vector>

namespace faultline::harness::explore {

inline constexpr unsigned max_candidate_repeats = 100;

struct PlanCommand {
  std::string scenario_file;  // the scenario explored (its faults are removed)
  std::string reference_dir;  // the reference run: report.json, logs/proxy-audit.jsonl
  std::string out;            // the exploration directory
  std::string system = "yunikorn";
  // The shipped systems (harness/systems): `system`'s file, when it is a name, is found here; its
  // explore.components are the components the kill and pause plans target. Empty, with a name that
  // is not a file: the default components.
  std::string systems_dir;
  unsigned shard_index = 1, shard_count = 1;
  std::size_t max_plans = 0;  // 0: all (at most max_plans of explore_plan.hpp)
};

// DIR/plan.json (the sweep plan of this shard's plans), DIR/cells/<id>/scenario.yaml and
// DIR/generation.tsv; prints the generation rules' counts. A DIR that holds another plan is refused.
int explore_plan(const PlanCommand& c, std::ostream& out, std::ostream& err);

inline constexpr std::size_t max_sets = 64;

// DIR/reference/scenario.yaml (the scenario without its faults, each `sets` entry PATH=VALUE
// written into it as schema::with_value_at does, named in a first comment line) and
// DIR/reference/plan.json, a one-cell plan whose run goes to DIR/reference/run-01.
int explore_reference(const std::string& scenario_file, const std::string& dir, const std::string& system,
                      const std::vector<std::string>& sets, std::ostream& out, std::ostream& err);

// One step of minimizing plan `id` of DIR: records the runs of the candidate written last (when
// they are there), then writes the next candidate as DIR/minimize/<id>/plan.json (prints
// "candidate DIR/minimize/<id>") or, when done, DIR/minimize/<id>/minimized.yaml (prints
// "minimized PATH").
int explore_minimize_step(const std::string& dir, const std::string& id, unsigned repeats, std::ostream& out,
                          std::ostream& err);

// The plans of DIR that found something, one per line in the order of `findings`
// (explore_report.hpp): "ID<TAB>first|more<TAB>invariant,invariant".
int explore_found(const std::string& dir, std::ostream& out, std::ostream& err);

// explore.json, junit.xml and explore.html of one or more exploration directories (shards) into
// `out_dir` (default: the first); prints the plan table.
int explore_report(const std::vector<std::string>& dirs, const std::string& out_dir, std::ostream& out,
                   std::ostream& err);

}  // namespace faultline::harness::explore
