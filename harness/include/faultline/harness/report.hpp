#pragma once
// The run's outcome as files (report.json, junit.xml, report.html) and a summary table.
#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "faultline/harness/checks.hpp"
#include "faultline/harness/observations.hpp"
#include "faultline/harness/prom_text.hpp"
#include "faultline/version.hpp"

namespace faultline::harness {

struct FaultCounter {
  std::string rule;
  std::int64_t matched = 0;
  std::int64_t fired = 0;
};

// When a rule actually fired, from the proxy's audit records that carry its name.
struct FaultWindow {
  std::string rule;
  std::string action;
  WallTime first{};
  WallTime last{};
  std::int64_t requests = 0;
};
std::vector<FaultWindow> fault_windows(const std::vector<AuditRecord>& audit);

// A step the harness carried out itself: a workload's node flap, or a component fault. Shown on
// the timeline next to the proxy's fault windows.
struct StepRecord {
  std::string name;                   // the scenario's name for it
  std::string kind;                   // nodeFlap, kill, pause, resume, restart
  std::string target;                 // the component, or the nodes taken away
  WallTime started{};                 // the nodes deleted / the signal sent
  std::optional<WallTime> recovered;  // the nodes created again / the component healthy or running again
  std::string detail;                 // what it did, with numbers
  std::string error;                  // empty when it was carried out; otherwise the run is an error
};

// Cumulative pod counts over time, for the timeline.
struct TimelinePoint {
  double seconds = 0;  // since the run started
  std::int64_t created = 0;
  std::int64_t bound = 0;
  std::int64_t running = 0;
};
// At most max_points points, one per event time bucket, ending with the final counts.
std::vector<TimelinePoint> build_timeline(const PodObservations& pods, WallTime start, std::size_t max_points = 400);

// RSS and open descriptors of one local-stack component at one moment (checks.resources).
struct ResourceSample {
  WallTime at{};
  std::string component;
  std::int64_t rss_kib = 0;  // /proc/PID/status VmRSS
  std::int64_t fds = 0;      // entries of /proc/PID/fd
};

// One quiet point (checks.quietAfter): when it was, what it followed, the invariants checked there.
struct QuietPoint {
  WallTime at{};
  std::string after;  // "the window of rule R (last faulted request <time>)"
  std::vector<CheckResult> checks;
};

// One reading of the system's metrics endpoint: the samples of the series its system file lists.
struct MetricsScrape {
  WallTime at{};
  std::string error;                  // why the endpoint could not be read; empty: it was read
  std::vector<MetricSample> samples;  // of the listed series, as served
  std::size_t seen = 0;               // well-formed samples the endpoint served, of any name
  std::size_t dropped = 0;            // samples of listed series past kMaxMetricSamples
  std::size_t malformed = 0;          // lines skipped
  std::string first_malformed;
};

// The system under test as its system file describes it (docs/systems.md).
struct SystemRecord {
  std::string name;
  std::string file;
  std::string user;  // the identity it authenticates as
  std::vector<std::string> user_agents;
  std::string metrics_url;  // where it serves its metrics (metrics.url, filled by the stack); empty: none
  std::vector<std::string> metrics_series{};      // metrics.series
  std::optional<MetricsScrape> metrics_before{};  // before the faults were armed; none: not scraped
  std::optional<MetricsScrape> metrics_after{};   // after the last settle; none: not scraped
};

// The listed series that no scrape which read the endpoint served (empty when none read it).
std::vector<std::string> missing_series(const SystemRecord& s);

// Seconds spent in each step of a run, in order (report.json's `timings`); none: the step was not
// reached (the run failed before it).
struct RunTimings {
  std::optional<double> prepare;    // contact, namespace, pods left by an earlier run, the proxy's scenario
  std::optional<double> nodes;      // the KWOK nodes created, Ready and, on YuniKorn, registered there
  std::optional<double> observers;  // the pod watch, declared watches, audit poller, metrics before
  std::optional<double> workload;   // the phases (with a `start: settled` phase's settle)
  std::optional<double> settle;     // waiting for the faults to end and settling (components recovered)
  std::optional<double> collect;    // metrics after, audit, rule counters, YuniKorn state, node list
  std::optional<double> checks;     // stopping the observers, the checks, stats and the timeline
  std::optional<double> reports;    // writing junit.xml and report.html
};

struct Report {
  // The faultline-harness that wrote the report (faultline/version.hpp).
  std::string faultline_version{faultline::version()};
  std::string faultline_commit{faultline::git_commit()};
  std::string scenario;
  std::string scenario_file;
  std::uint64_t seed = 0;
  Verdict verdict = Verdict::error;
  std::string error;  // why the run failed (verdict error)
  std::string scheduler;
  std::optional<SystemRecord> system;  // none: run without a system file (--scheduler)
  std::map<std::string, std::string> versions;
  std::string yunikorn_build;  // scripts/components' yunikorn-build.json (a JSON object); empty: not known
  WallTime started{};
  WallTime finished{};
  std::optional<WallTime> armed;  // when the proxy was armed (time zero of its faults); none: never
  // The last settle before the verdict: when the last fault ended (the later of the last faulted
  // request, the last component fault's recovery and the last moment a rule's window or an outage
  // was seen open; none: the scenario has no faults, or none ran) and when the settle period began
  // (once every fault had ended).
  std::optional<WallTime> faults_ended;
  std::optional<WallTime> settle_started;
  std::int64_t nodes = 0;
  std::int64_t pods_created = 0;
  std::int64_t objects_created = 0;  // by the workload's objects steps
  std::int64_t objects_failed = 0;
  double create_rate_achieved = 0;                     // pods/s over the creation window, measured
  std::map<std::string, std::int64_t> client_retries;  // transient apiserver errors retried, by kind
  std::vector<FaultCounter> faults;
  std::vector<FaultWindow> fault_windows;
  std::vector<StepRecord> steps;  // node flaps and component faults, in the order they started
  std::vector<CheckResult> checks;
  RunStats stats;
  std::vector<TimelinePoint> timeline;
  std::vector<QuietPoint> quiet_points;   // checks.quietAfter
  std::vector<ResourceSample> resources;  // checks.resources
  std::vector<std::string> notes;         // things a reader should know (e.g. settle timed out)
  RunTimings timings;
};

int exit_code(Verdict v);  // 0 pass/reproduced, 1 fail, 2 error

std::string render_json(const Report& r);
std::string render_junit(const Report& r);
std::string render_html(const Report& r);
void print_summary(const Report& r, std::ostream& out);

// Writes junit.xml, report.html and then report.json into dir (created if missing); the time the
// first two took goes into r.timings.reports. report.json comes last: a directory with one holds
// every report.
void write_reports(Report& r, const std::filesystem::path& dir);

}  // namespace faultline::harness
