#include <boost/json.hpp>
#include <cmath>

#include "faultline/harness/metrics_scrape.hpp"
#include "faultline/harness/report.hpp"
#include "faultline/net/certs.hpp"
#include "faultline/net/rfc3339.hpp"

namespace faultline::harness {
namespace json = boost::json;
namespace {

json::value optional_int(const std::optional<std::int64_t>& v) { return v ? json::value(*v) : json::value(nullptr); }

// Seconds to the millisecond; null for a step the run did not reach.
json::object timings_json(const RunTimings& t) {
  const auto secs = [](const std::optional<double>& v) {
    return v ? json::value(std::round(*v * 1000) / 1000) : json::value(nullptr);
  };
  return {{"prepare", secs(t.prepare)},   {"nodes", secs(t.nodes)},    {"observers", secs(t.observers)},
          {"workload", secs(t.workload)}, {"settle", secs(t.settle)},  {"collect", secs(t.collect)},
          {"checks", secs(t.checks)},     {"reports", secs(t.reports)}};
}

json::object check_json(const CheckResult& c) {
  json::array evidence;
  for (const auto& e : c.evidence) evidence.emplace_back(e);
  return {{"name", c.name},
          {"ok", !c.failed()},
          {"status", to_string(c.status)},
          {"expected", c.expected_violated ? "violated" : "ok"},
          {"count", c.count},
          {"summary", c.summary},
          {"evidence", std::move(evidence)}};
}

// A finite value as a JSON number; NaN, +Inf and -Inf, which JSON has no numbers for, as those strings.
json::value sample_value(double v) { return std::isfinite(v) ? json::value(v) : json::value(format_sample_value(v)); }

json::value scrape_json(const std::optional<MetricsScrape>& scrape) {
  if (!scrape) return nullptr;
  json::array samples;
  for (const auto& s : scrape->samples) {
    json::object labels;
    for (const auto& [k, v] : s.labels) labels[k] = v;
    samples.push_back(json::object{{"name", s.name}, {"labels", std::move(labels)}, {"value", sample_value(s.value)}});
  }
  return json::object{{"scrapedAt", net::format_rfc3339(scrape->at, 3)},
                      {"error", scrape->error.empty() ? json::value(nullptr) : json::value(scrape->error)},
                      {"samples", std::move(samples)},
                      {"served", scrape->seen},
                      {"dropped", scrape->dropped},
                      {"malformedLines", scrape->malformed},
                      {"firstMalformed",
                       scrape->first_malformed.empty() ? json::value(nullptr) : json::value(scrape->first_malformed)}};
}

}  // namespace

std::string render_json(const Report& r) {
  json::object versions;
  for (const auto& [k, v] : r.versions) versions[k] = v;
  json::object retries;
  for (const auto& [k, v] : r.client_retries) retries[k] = v;
  json::array faults;
  for (const auto& f : r.faults)
    faults.push_back(json::object{{"rule", f.rule}, {"matched", f.matched}, {"fired", f.fired}});
  json::array windows;
  for (const auto& w : r.fault_windows) {
    windows.push_back(json::object{{"rule", w.rule},
                                   {"action", w.action},
                                   {"first", net::format_rfc3339(w.first, 3)},
                                   {"last", net::format_rfc3339(w.last, 3)},
                                   {"requests", w.requests}});
  }
  auto seconds = [&r](WallTime t) { return std::chrono::duration<double>(t - r.started).count(); };
  json::array steps;
  for (const auto& st : r.steps) {
    steps.push_back(json::object{
        {"name", st.name},
        {"kind", st.kind},
        {"target", st.target},
        {"started", net::format_rfc3339(st.started, 3)},
        {"startedSeconds", seconds(st.started)},
        {"recovered", st.recovered ? json::value(net::format_rfc3339(*st.recovered, 3)) : json::value(nullptr)},
        {"recoveredSeconds", st.recovered ? json::value(seconds(*st.recovered)) : json::value(nullptr)},
        {"detail", st.detail},
        {"error", st.error.empty() ? json::value(nullptr) : json::value(st.error)}});
  }
  json::array checks;
  for (const auto& c : r.checks) checks.push_back(check_json(c));
  json::array timeline;
  for (const auto& p : r.timeline) timeline.push_back(json::array{p.seconds, p.created, p.bound, p.running});
  json::array quiet;
  for (const auto& q : r.quiet_points) {
    json::array qchecks;
    for (const auto& c : q.checks) qchecks.push_back(check_json(c));
    quiet.push_back(json::object{{"at", net::format_rfc3339(q.at, 3)},
                                 {"seconds", seconds(q.at)},
                                 {"after", q.after},
                                 {"checks", std::move(qchecks)}});
  }
  json::array samples;
  for (const auto& s : r.resources) samples.push_back(json::array{seconds(s.at), s.component, s.rss_kib, s.fds});
  json::array notes;
  for (const auto& n : r.notes) notes.emplace_back(n);
  double duration = std::chrono::duration<double>(r.finished - r.started).count();
  json::object cluster{{"scheduler", r.scheduler}, {"versions", std::move(versions)}};
  if (!r.yunikorn_build.empty()) cluster["yunikornBuild"] = json::parse(r.yunikorn_build);
  if (r.system) {
    json::array agents;
    for (const auto& a : r.system->user_agents) agents.emplace_back(a);
    cluster["system"] = json::object{
        {"name", r.system->name},
        {"file", r.system->file},
        {"identity", json::object{{"user", r.system->user}, {"userAgents", agents}}},
        {"metricsUrl", r.system->metrics_url.empty() ? json::value(nullptr) : json::value(r.system->metrics_url)}};
  }
  if (r.system && !r.system->metrics_url.empty()) {
    json::array series;
    for (const auto& n : r.system->metrics_series) series.emplace_back(n);
    json::array missing;
    for (const auto& n : missing_series(*r.system)) missing.emplace_back(n);
    cluster.at("system").as_object()["metrics"] = json::object{{"url", r.system->metrics_url},
                                                               {"series", std::move(series)},
                                                               {"before", scrape_json(r.system->metrics_before)},
                                                               {"after", scrape_json(r.system->metrics_after)},
                                                               {"missing", std::move(missing)}};
  }
  json::object doc{
      {"faultline", json::object{{"version", r.faultline_version}, {"commit", r.faultline_commit}}},
      {"scenario", r.scenario},
      {"scenarioFile", r.scenario_file},
      {"seed", r.seed},
      {"verdict", to_string(r.verdict)},
      {"error", r.error.empty() ? json::value(nullptr) : json::value(r.error)},
      {"started", net::format_rfc3339(r.started, 3)},
      {"finished", net::format_rfc3339(r.finished, 3)},
      {"armed", r.armed ? json::value(net::format_rfc3339(*r.armed, 3)) : json::value(nullptr)},
      {"faultsEnded", r.faults_ended ? json::value(net::format_rfc3339(*r.faults_ended, 3)) : json::value(nullptr)},
      {"settleStarted",
       r.settle_started ? json::value(net::format_rfc3339(*r.settle_started, 3)) : json::value(nullptr)},
      {"durationSeconds", duration},
      {"timings", timings_json(r.timings)},
      {"cluster", std::move(cluster)},
      {"workload", json::object{{"nodes", r.nodes},
                                {"podsCreated", r.pods_created},
                                {"createRateAchieved", r.create_rate_achieved},
                                {"objectsCreated", r.objects_created},
                                {"objectsFailed", r.objects_failed}}},
      {"clientRetries", std::move(retries)},
      {"faults", std::move(faults)},
      {"faultWindows", std::move(windows)},
      {"steps", std::move(steps)},
      {"checks", std::move(checks)},
      {"stats", json::object{{"pods", r.stats.pods},
                             {"boundPods", r.stats.bound_pods},
                             {"runningPods", r.stats.running_pods},
                             {"strandedPods", r.stats.stranded_pods},
                             {"deletedPods", r.stats.deleted_pods},
                             {"queueAllocatedPods", optional_int(r.stats.queue_allocated_pods)},
                             {"phantomAllocations", optional_int(r.stats.phantom_allocations)},
                             {"bindsSucceeded", optional_int(r.stats.binds_succeeded)},
                             {"bindsFailed", optional_int(r.stats.binds_failed)}}},
      {"timeline", json::object{{"columns", json::array{"seconds", "created", "bound", "running"}},
                                {"points", std::move(timeline)}}},
      {"quietPoints", std::move(quiet)},
      {"resources", json::object{{"columns", json::array{"seconds", "component", "rssKiB", "fds"}},
                                 {"samples", std::move(samples)}}},
      {"notes", std::move(notes)},
  };
  return json::serialize(doc) + "\n";
}

void write_reports(Report& r, const std::filesystem::path& dir) {
  const auto start = std::chrono::steady_clock::now();
  net::write_file(dir / "junit.xml", render_junit(r));
  net::write_file(dir / "report.html", render_html(r));
  r.timings.reports = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  net::write_file(dir / "report.json", render_json(r));
}

}  // namespace faultline::harness
