#pragma once
// What a long run checks along the way, not only at its end: the invariants at every quiet point
// after a fault window, and RSS / open descriptors of every local-stack component sampled at an
// interval, with the proxy's growth over the last half of the run as a check.
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include <boost/asio/awaitable.hpp>
#include <functional>

#include "faultline/harness/checks.hpp"
#include "faultline/harness/component_faults.hpp"
#include "faultline/harness/kube_client.hpp"
#include "faultline/harness/observations.hpp"
#include "faultline/harness/pod_watcher.hpp"
#include "faultline/harness/report.hpp"
#include "faultline/harness/schema/scenario.hpp"

namespace faultline::harness {

// The components the local stack records in RUN_DIR/pids/NAME (scripts/stack).
inline constexpr const char* kStackComponents[] = {"etcd", "kube-apiserver", "kwok", "faultline-proxy", "scheduler"};
inline constexpr const char* kProxyComponent = "faultline-proxy";

// VmRSS (KiB) and the descriptor count of process `pid`; throws naming what could not be read.
ResourceSample read_process_resources(int pid, const std::string& component);

// The least-squares slope of (x, y), in y per x; nullopt with fewer than two distinct x.
std::optional<double> least_squares_slope(const std::vector<double>& x, const std::vector<double>& y);

// `proxy-resources-flat`: the proxy's RSS and fd slopes (per minute) over the samples of the last
// half of the run (from the midpoint between its first and last sample) stay at or under the
// bounds. no_data when sampling failed (`error`), or the last half holds fewer than 3 samples.
CheckResult check_proxy_resources(const std::vector<ResourceSample>& samples, const schema::ResourceChecks& bounds,
                                  const std::string& error);

inline constexpr std::size_t kMaxQuietPoints = 2000;   // then only counted
inline constexpr std::size_t kQuietPointEvidence = 5;  // evidence lines kept per check

// The pods a quiet point checks: those created before `cutoff` (younger ones may still be
// scheduling), with everything else of `obs` as is.
Observations settled_before(const Observations& obs, WallTime cutoff);

// `quiet-points`: violated when a check at some quiet point was violated (evidence: its time and
// what), no_data when one had no data or when `faults_expected` and no quiet point came at all.
CheckResult summarize_quiet_points(const std::vector<QuietPoint>& points, std::size_t dropped,
                                   std::size_t dropped_failures, bool faults_expected, WallTime run_started);

// Samples every component that has a pid file in the stack's run dir, every `every`, until
// cancelled. At most kMaxSamplesPerComponent per component: beyond that, every other sample is
// dropped and the interval doubles. The first failure (a pid, /proc unreadable) goes into `error`
// and ends sampling.
inline constexpr std::size_t kMaxSamplesPerComponent = 4096;
struct ResourceSampling {
  std::vector<ResourceSample> samples;
  std::string error;
};
boost::asio::awaitable<void> sample_resources(const StackProcesses& stack, faults::Duration every,
                                              ResourceSampling& out);

// Watches the proxy's audit records (as collected so far) for faulted requests; `quiet_after`
// after the last one seen (on `clock`), with no new one meanwhile, is a quiet point: the invariants
// `names` that do not need YuniKorn are checked on the pods created before quiet_after ago, the
// pod watch's deletions and the audit so far, and the node list read then. Runs until cancelled.
struct QuietPoints {
  std::vector<QuietPoint> points;
  std::size_t dropped = 0;           // beyond kMaxQuietPoints
  std::size_t dropped_failures = 0;  // failed checks among those
};
// The latest faulted request (an audit record that names a rule) of a growing list of audit
// records, scanned once each: what the quiet points and the final settle count "after the faults"
// from.
struct LastFaultedRequest {
  std::size_t scanned = 0;
  std::optional<WallTime> at;  // the record's time
  std::string rule;
  // Scans the records added since the last call; true when one of them is a faulted request.
  bool update(const std::vector<AuditRecord>& records);
};

struct QuietPointSources {
  KubeClient& client;
  PodWatcher& watcher;
  std::function<const std::vector<AuditRecord>*()> audit;  // nullptr: not collected
  Observations base;                                       // scheduler, harness user agent
  std::vector<std::string> names;
  faults::Duration quiet_after;
  const faults::Clock& clock;
};
boost::asio::awaitable<void> watch_quiet_points(QuietPointSources sources, QuietPoints& out);

}  // namespace faultline::harness
