#pragma once
// One reader of a run's report.json (what `faultline-harness run` writes, docs/harness.md): the
// figures sweeps, soaks and explorations take from it, read once. Pure: it takes the text.

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "faultline/harness/report.hpp"

namespace faultline::harness {

// The largest report.json a reader reads.
inline constexpr std::size_t max_report_bytes = 64 * 1024 * 1024;

struct ReportCheck {
  std::string name;
  std::string status;    // passed | violated | no-data
  std::string expected;  // ok | violated (the scenario's checks.expect)
};

struct RunReport {
  // Why the text is not a well-formed report ("" when it is): not JSON, not a JSON object, a
  // `verdict` missing or unknown, `checks` missing or an item without a name or status. The other
  // fields hold what could be read all the same.
  std::string malformed;
  bool object = false;                // the text is a JSON object (else nothing was read)
  std::string verdict;                // pass | fail | reproduced | error as written; "" when missing or not a string
  std::string error;                  // "" when null
  std::vector<ReportCheck> checks;    // in report order
  std::vector<std::string> violated;  // checks violated that the scenario does not expect violated
  std::vector<std::string> expected_violated;  // checks violated as the scenario expects
  std::vector<FaultCounter> faults;            // per fault rule of the proxy
  std::vector<std::string> unfired;            // the rules of `faults` that never fired
  bool never_fired = false;  // `error` says a fault never fired (a rule, or a component fault, which `faults` lacks)
  std::optional<std::chrono::system_clock::time_point> armed;     // when the proxy was armed
  std::optional<std::chrono::system_clock::time_point> finished;  // when the run ended
  // The first fault: seconds from the proxy being armed (`armed`, just before the first pod is
  // created) to the earliest `faultWindows[].first`. Counting from the arming, not from `started`,
  // leaves out the run's preparation (nodes, namespace), whose length varies from run to run and has
  // nothing to do with the faults: the same figure for a sweep's cells and on an exploration's
  // reference timeline. nullopt when the run was not armed or injected nothing.
  std::optional<double> first_fault_seconds;
  std::optional<double> seconds;   // durationSeconds
  std::optional<double> stranded;  // stats.strandedPods
  std::optional<double> phantom;   // stats.phantomAllocations

  bool all_fired() const { return unfired.empty() && !never_fired; }  // every fault rule fired at least once
};

// Never throws: a text that is not a report gives `malformed` and what could be read.
RunReport read_run_report(std::string_view report_json);

}  // namespace faultline::harness
