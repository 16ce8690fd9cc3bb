#pragma once
// End-state invariants. Each check is a pure function of the Observations; a check that saw no
// data fails (status no_data) instead of passing vacuously.
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "faultline/harness/observations.hpp"

namespace faultline::harness {

enum class CheckStatus { passed, violated, no_data, skipped };
std::string to_string(CheckStatus s);

struct CheckResult {
  std::string name;
  CheckStatus status = CheckStatus::no_data;
  std::int64_t count = 0;             // how many things violate the invariant
  std::string summary;                // one line a human reads first
  std::vector<std::string> evidence;  // pod names, allocation keys, audit records
  bool expected_violated = false;     // listed in the scenario's `expect:`

  bool failed() const { return status == CheckStatus::violated || status == CheckStatus::no_data; }
};

CheckResult check_pods_bound(const Observations& obs);
CheckResult check_queue_accounting(const Observations& obs);
CheckResult check_no_orphan_allocations(const Observations& obs);
CheckResult check_no_unexpected_deletes(const Observations& obs);
CheckResult check_bound_to_live_node(const Observations& obs);

// Runs the named checks, in the order given; the names are faults' invariants (faults/invariants.hpp,
// unknown names throw std::invalid_argument). Invariants that need YuniKorn are skipped, saying so,
// when obs.scheduler is not yunikorn. No names, no results.
std::vector<CheckResult> run_checks(const std::vector<std::string>& names, const std::vector<std::string>& expect,
                                    const Observations& obs);

enum class Verdict { pass, fail, reproduced, error };
std::string to_string(Verdict v);

// pass: nothing expected, nothing failed (also with no checks at all). reproduced: exactly the expected checks were
// violated (with data). Anything else is fail. `error` is decided by the caller when the run itself broke.
Verdict decide_verdict(const std::vector<CheckResult>& results);

// Headline numbers for the report (docs/harness.md, "Report": `stats`).
struct RunStats {
  std::int64_t pods = 0;
  std::int64_t bound_pods = 0;
  std::int64_t running_pods = 0;
  std::int64_t stranded_pods = 0;
  std::int64_t deleted_pods = 0;
  std::optional<std::int64_t> queue_allocated_pods;  // only with a YuniKorn snapshot
  std::optional<std::int64_t> phantom_allocations;
  // Bind requests through the proxy (only with its audit): answered 2xx, and everything else
  // (an injected or upstream error status, or a connection cut before any answer).
  std::optional<std::int64_t> binds_succeeded;
  std::optional<std::int64_t> binds_failed;
};
RunStats compute_stats(const Observations& obs);

// Evidence lists are capped so a 3000-pod failure stays readable; the count stays exact.
inline constexpr std::size_t kMaxEvidence = 50;

}  // namespace faultline::harness
