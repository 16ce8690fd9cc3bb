#pragma once
// `faultline-harness explore`'s minimizer: from a scenario whose runs violate some invariants, the
// smallest scenario that still violates them in every run. A pure, deterministic state machine (no
// I/O, no clock): the driver asks next() for a candidate scenario, runs it `repeats` times, and
// records the outcomes; the state is JSON, so an interrupted minimization resumes with the same
// candidate.
//
// Two phases:
//  1. Delta debugging (Zeller's ddmin) over the elements: the fault rules (faults[i]) and the
//     component faults (componentFaults[i]). A candidate is the scenario with some of them
//     removed; a candidate with no element left is never proposed.
//  2. Shrinking, one at a time, each numeric parameter of the elements left: the floor first, then
//     a binary search between the floor and the current value (at most max_steps_per_parameter
//     candidates each; the value found is the smallest that violated, exact for ranges up to 512):
//     when.afterMatches, when.limit, when.every (floor 1); when.at (floor 0s); when.for,
//     action.duration, action.latency, componentFaults' downFor (floor 1s, or 1ms when the value
//     is below 1s; values written in whole seconds are searched in whole seconds);
//     action.count (floor 1), action.afterEvents (floor 0). when.probability is "shrunk" to 1, one
//     candidate: a rule that fires on every match makes fewer random decisions than one that draws.
//     Each value is written into the YAML text in place (comments and quoting stay); a duration
//     searched in seconds in its shortest spelling ("1m30s"), one written in milliseconds in
//     milliseconds ("1200ms").
// A candidate is kept only when every one of its runs ends `fail` or `reproduced` AND every target
// invariant is violated in every run, so each step keeps the same violation. At most max_candidates
// candidates in all. A candidate the scenario loader refuses (a `pause` left without its `resume`,
// a `for` no longer shorter than `repeat`) is skipped without being proposed.

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace faultline::harness::explore {

// From a run's report.json: its verdict and the names of the checks it violated.
struct RunOutcome {
  std::string verdict;                // pass | fail | reproduced | error
  std::vector<std::string> violated;  // checks[] with status "violated" (expected or not), in report order
};

struct Candidate {
  std::string id;             // "cand-001", "cand-002", ... in the order proposed
  std::string scenario_yaml;  // the whole scenario to run
  std::string what;           // "without faults relist-after-outage", "faults[0] outage: when.afterMatches 300 -> 150"
};

inline constexpr std::size_t max_candidates = 200;
inline constexpr unsigned max_steps_per_parameter = 10;
inline constexpr unsigned max_repeats = 100;
inline constexpr std::size_t max_elements = 1000;

class Minimizer {
 public:
  // Throws std::invalid_argument when the scenario does not load, has no fault rule and no
  // component fault, `target_invariants` is empty or names a check the scenario does not check,
  // or `repeats` is 0 or above max_repeats.
  Minimizer(std::string scenario_yaml, std::vector<std::string> target_invariants, unsigned repeats = 3);

  // The next candidate to run; the same one again until it is recorded. nullopt: done.
  std::optional<Candidate> next();
  // The outcomes of the candidate's `repeats` runs. Throws std::logic_error for a candidate that is
  // not the one next() proposed (another id or text, recorded twice) or a wrong number of outcomes.
  void record(const Candidate& candidate, const std::vector<RunOutcome>& outcomes);
  // No candidate waits and there is none left to propose.
  bool done() const;

  // header_comment's lines as `# ` comments, then the smallest scenario kept so far with
  // metadata.name suffixed "-min", checks.expect = expect() and, when the last kept candidate's
  // runs also violated checks outside expect(), those left out of checks.invariants or removed
  // from checks.declared (so that the scenario ends `reproduced`). It loads with the harness's
  // scenario loader.
  std::string minimized_yaml(std::string_view header_comment) const;

  // Complete state; from_state_json(state_json()) proposes the same candidates. from_state_json
  // throws std::invalid_argument naming the key that is missing or wrong.
  std::string state_json() const;
  static Minimizer from_state_json(std::string_view json_text);

  // For the driver's report.
  std::string current_yaml() const { return current_yaml_; }           // the smallest scenario kept so far
  std::vector<std::string> elements_left() const;                      // names of the elements left
  const std::vector<std::string>& expect() const { return targets_; }  // targets every kept run violated
  std::size_t proposed() const { return next_id_ - 1; }                // candidates proposed so far
  std::size_t kept() const { return kept_count_; }
  // candidates the scenario loader refused, never proposed ("without componentFaults resume-x: ..."),
  // at most 100
  const std::vector<std::string>& skipped() const { return skipped_; }

  // Internal representation, public for the state codec.
  struct Element {
    std::string list;  // "faults" | "componentFaults"
    std::string name;
  };
  struct Parameter {
    std::string list;              // "faults" | "componentFaults"
    std::size_t index;             // in the scenario after phase 1
    std::string name;              // the element's name
    std::string key;               // "when.afterMatches"
    std::string kind;              // "count" | "duration" | "probability"
    std::uint64_t unit_ms = 1;     // durations: 1000 (whole seconds) or 1
    std::uint64_t lo = 0, hi = 0;  // binary search: hi is known to violate; lo the smallest left to try
    unsigned steps = 0;
  };
  struct Pending {
    std::string id, yaml, what;
    std::vector<std::size_t> subset;  // phase 1: the elements kept by the candidate
    std::uint64_t value = 0;          // phase 2: the value tried (units of the parameter)
  };

 private:
  Minimizer() = default;
  void validate_targets() const;
  std::optional<Candidate> advance();
  std::optional<Candidate> advance_ddmin();
  std::optional<Candidate> advance_shrink();
  void start_shrink();
  std::string yaml_of_subset(const std::vector<std::size_t>& subset) const;
  Candidate propose(std::string yaml, std::string what, std::vector<std::size_t> subset, std::uint64_t value);

  std::string original_yaml_;
  std::vector<std::string> original_targets_;
  unsigned repeats_ = 3;
  std::vector<Element> elements_;

  std::string phase_ = "ddmin";  // ddmin | shrink | done
  std::string current_yaml_;
  std::vector<std::string> targets_;   // violated in every run of each kept candidate
  std::vector<std::string> violated_;  // union of the checks violated by the last kept candidate's runs
  std::size_t kept_count_ = 0;

  // ddmin
  std::vector<std::size_t> current_;  // indexes into elements_ kept so far
  std::size_t granularity_ = 2;
  std::size_t position_ = 0;                                       // the test of this round: chunks, then complements
  std::vector<std::pair<std::vector<std::size_t>, bool>> tested_;  // subsets tested, kept or not

  // shrink
  std::vector<Parameter> parameters_;
  std::size_t parameter_ = 0;

  std::size_t next_id_ = 1;
  std::optional<Pending> pending_;
  std::vector<std::string> skipped_;  // candidates the loader refused: what, why
};

// The verdict and violated checks of a run, from its report.json text (read_run_report): every
// check violated, expected or not. Throws std::invalid_argument when the report is malformed.
RunOutcome outcome_of_report(std::string_view report_json);

}  // namespace faultline::harness::explore
