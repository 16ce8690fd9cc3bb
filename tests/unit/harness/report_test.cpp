#include "faultline/harness/report.hpp"

#include <gtest/gtest.h>

#include <boost/json.hpp>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "faultline/harness/metrics_scrape.hpp"
#include "faultline/harness/schema/invariants.hpp"
#include "files.hpp"
#include "fixtures.hpp"

namespace faultline::harness {
namespace {

namespace fs = std::filesystem;
namespace json = boost::json;

Report report_for(const Observations& obs, const std::vector<std::string>& expect) {
  Report r;
  r.scenario = "yunikorn-3355-outage";
  r.seed = 3355;
  r.scheduler = obs.scheduler;
  r.started = WallTime{};
  r.finished = WallTime{} + std::chrono::seconds(60);
  r.nodes = 2;
  r.pods_created = 4;
  r.objects_created = 2;
  r.create_rate_achieved = 812.5;
  r.checks = run_checks(schema::invariant_names(), expect, obs);
  r.verdict = decide_verdict(r.checks);
  r.stats = compute_stats(obs);
  r.faults = {{"outage-mid-bind", 3, 1}};
  r.fault_windows = fault_windows(*obs.audit);
  r.timeline = build_timeline(obs.pods, r.started);
  return r;
}

TEST(ExitCode, FollowsTheVerdict) {
  EXPECT_EQ(exit_code(Verdict::pass), 0);
  EXPECT_EQ(exit_code(Verdict::reproduced), 0);
  EXPECT_EQ(exit_code(Verdict::fail), 1);
  EXPECT_EQ(exit_code(Verdict::error), 2);
}

TEST(FaultWindows, SpanTheAuditRecordsOfEachRule) {
  auto windows = fault_windows(testing::observations_3355().audit.value());
  ASSERT_EQ(windows.size(), 1u);
  EXPECT_EQ(windows[0].rule, "outage-mid-bind");
  EXPECT_EQ(windows[0].action, "outage");
  EXPECT_EQ(windows[0].requests, 1);
}

TEST(Timeline, IsCumulativeAndEndsWithTheTotals) {
  auto obs = testing::observations_3355();
  auto timeline = build_timeline(obs.pods, WallTime{}, 400);
  ASSERT_FALSE(timeline.empty());
  for (std::size_t i = 1; i < timeline.size(); ++i) {
    EXPECT_GE(timeline[i].seconds, timeline[i - 1].seconds);
    EXPECT_GE(timeline[i].created, timeline[i - 1].created);
  }
  EXPECT_EQ(timeline.back().created, 4);
  EXPECT_EQ(timeline.back().bound, 3);
  EXPECT_EQ(timeline.back().running, 3);
}

TEST(Timeline, IsBoundedInSize) {
  Observations obs;
  for (int i = 0; i < 3000; ++i) {
    PodState p;
    p.uid = "uid-" + std::to_string(i);
    p.created = WallTime{} + std::chrono::milliseconds(i);
    obs.pods.pods[p.uid] = p;
  }
  auto timeline = build_timeline(obs.pods, WallTime{}, 100);
  EXPECT_LE(timeline.size(), 102u);
  EXPECT_EQ(timeline.back().created, 3000);
}

TEST(ReportJson, CarriesTheDesignFields) {
  auto doc = json::parse(render_json(report_for(testing::observations_3355(), {"pods-bound", "queue-accounting"})));
  EXPECT_EQ(doc.at("scenario").as_string(), "yunikorn-3355-outage");
  EXPECT_EQ(doc.at("seed").to_number<std::int64_t>(), 3355);
  EXPECT_EQ(doc.at("verdict").as_string(), "reproduced");
  EXPECT_EQ(doc.at("cluster").at("scheduler").as_string(), "yunikorn");
  EXPECT_EQ(doc.at("workload").at("podsCreated").to_number<std::int64_t>(), 4);
  EXPECT_DOUBLE_EQ(doc.at("workload").at("createRateAchieved").to_number<double>(), 812.5);
  EXPECT_EQ(doc.at("workload").at("objectsCreated").to_number<std::int64_t>(), 2);
  EXPECT_EQ(doc.at("workload").at("objectsFailed").to_number<std::int64_t>(), 0);
  EXPECT_EQ(doc.at("faults").at(0).at("rule").as_string(), "outage-mid-bind");
  const auto& checks = doc.at("checks").as_array();
  ASSERT_EQ(checks.size(), schema::invariant_names().size());
  EXPECT_EQ(checks[0].at("name").as_string(), "pods-bound");
  EXPECT_FALSE(checks[0].at("ok").as_bool());
  EXPECT_EQ(checks[0].at("expected").as_string(), "violated");
  EXPECT_EQ(checks[0].at("count").to_number<std::int64_t>(), 1);
  EXPECT_FALSE(checks[0].at("evidence").as_array().empty());
  EXPECT_EQ(doc.at("stats").at("strandedPods").to_number<std::int64_t>(), 1);
  EXPECT_EQ(doc.at("stats").at("queueAllocatedPods").to_number<std::int64_t>(), 4);
  EXPECT_EQ(doc.at("stats").at("phantomAllocations").to_number<std::int64_t>(), 1);
  // from the proxy audit: burst-00001's bind got 201, burst-00002's was cut by the outage
  EXPECT_EQ(doc.at("stats").at("bindsSucceeded").to_number<std::int64_t>(), 1);
  EXPECT_EQ(doc.at("stats").at("bindsFailed").to_number<std::int64_t>(), 1);
}

// scripts/components' yunikorn-build.json (passed by scripts/stack as FAULTLINE_YUNIKORN_BUILD) says
// which YuniKorn build ran: report.json carries it as a JSON object, not as a string.
TEST(ReportJson, RecordsTheYunikornBuild) {
  auto report = report_for(testing::observations_3355(), {"pods-bound", "queue-accounting"});
  auto without = json::parse(render_json(report));
  EXPECT_EQ(without.at("cluster").as_object().if_contains("yunikornBuild"), nullptr);
  report.yunikorn_build =
      R"({"yunikorn":"patch:3355-revert-assignment","module":"github.com/apache/yunikorn-k8shim","source":"patch",)"
      R"("version":"v1.9.0","patches":["0001-tests.patch","0002-fix.patch"]})";
  auto doc = json::parse(render_json(report));
  const auto& build = doc.at("cluster").at("yunikornBuild");
  EXPECT_EQ(build.at("yunikorn").as_string(), "patch:3355-revert-assignment");
  EXPECT_EQ(build.at("version").as_string(), "v1.9.0");
  ASSERT_EQ(build.at("patches").as_array().size(), 2u);
  EXPECT_EQ(build.at("patches").at(1).as_string(), "0002-fix.patch");
  EXPECT_NE(render_html(report).find("patch:3355-revert-assignment"), std::string::npos);
}

// The system file of the run (docs/systems.md): its name, file and identity, beside the scheduler.
TEST(ReportJson, RecordsTheSystem) {
  auto report = report_for(testing::observations_3355(), {"pods-bound"});
  report.scheduler = "labeller";
  EXPECT_EQ(json::parse(render_json(report)).at("cluster").as_object().if_contains("system"), nullptr);
  report.system = SystemRecord{
      "labeller", "/x/labeller.yaml", "faultline:labeller", {"kubectl/*"}, "https://127.0.0.1:10259/metrics"};
  auto doc = json::parse(render_json(report));
  EXPECT_EQ(doc.at("cluster").at("scheduler").as_string(), "labeller");
  const auto& system = doc.at("cluster").at("system");
  EXPECT_EQ(system.at("name").as_string(), "labeller");
  EXPECT_EQ(system.at("file").as_string(), "/x/labeller.yaml");
  EXPECT_EQ(system.at("identity").at("user").as_string(), "faultline:labeller");
  EXPECT_EQ(system.at("identity").at("userAgents").at(0).as_string(), "kubectl/*");
  EXPECT_EQ(system.at("metricsUrl").as_string(), "https://127.0.0.1:10259/metrics");
}

TEST(Report, SystemMetricsBeforeAndAfter) {
  auto report = report_for(testing::observations_3355(), {"pods-bound"});
  report.system = SystemRecord{"kube-scheduler", "/x/kube-scheduler.yaml", "system:kube-scheduler", {}, ""};
  EXPECT_EQ(json::parse(render_json(report)).at("cluster").at("system").as_object().if_contains("metrics"), nullptr);
  report.system->metrics_url = "https://127.0.0.1:10259/metrics";
  report.system->metrics_series = {"scheduler_schedule_attempts_total", "never_served"};
  report.system->metrics_before = metrics_from_text(
      "scheduler_schedule_attempts_total{profile=\"default-scheduler\",result=\"scheduled\"} 0\nother 1\n",
      report.system->metrics_series);
  report.system->metrics_before->at = WallTime{} + std::chrono::seconds(1);
  report.system->metrics_after = metrics_from_text(
      "scheduler_schedule_attempts_total{profile=\"default-scheduler\",result=\"scheduled\"} 40\n"
      "scheduler_schedule_attempts_total{profile=\"default-scheduler\",result=\"error\"} NaN\nbroken{\n",
      report.system->metrics_series);
  auto doc = json::parse(render_json(report));
  const auto& m = doc.at("cluster").at("system").at("metrics");
  EXPECT_EQ(m.at("url").as_string(), "https://127.0.0.1:10259/metrics");
  EXPECT_EQ(m.at("series").at(1).as_string(), "never_served");
  EXPECT_EQ(m.at("missing"), json::parse(R"(["never_served"])"));
  const auto& before = m.at("before");
  EXPECT_EQ(before.at("scrapedAt").as_string(), "1970-01-01T00:00:01.000Z");
  EXPECT_TRUE(before.at("error").is_null());
  EXPECT_EQ(before.at("served").as_int64(), 2);
  EXPECT_EQ(before.at("samples"), json::parse(R"([{"name":"scheduler_schedule_attempts_total",
      "labels":{"profile":"default-scheduler","result":"scheduled"},"value":0E0}])"));
  const auto& after = m.at("after");
  EXPECT_EQ(after.at("samples").at(0).at("value").as_double(), 40);
  EXPECT_EQ(after.at("samples").at(1).at("value").as_string(), "NaN");
  EXPECT_EQ(after.at("malformedLines").as_int64(), 1);
  EXPECT_EQ(after.at("firstMalformed").as_string(), "line 3: expected a label name at column 8");

  const std::string html = render_html(report);
  EXPECT_NE(html.find("<h2>Metrics of kube-scheduler</h2>"), std::string::npos);
  EXPECT_NE(html.find("<td>scheduler_schedule_attempts_total</td><td>profile=default-scheduler, "
                      "result=scheduled</td><td>0</td><td>40</td><td>40</td>"),
            std::string::npos)
      << html;
  EXPECT_NE(html.find("listed series not served: never_served"), std::string::npos);
  std::ostringstream summary;
  print_summary(report, summary);
  EXPECT_NE(summary.str().find("metrics: 2 samples of 2 listed series"), std::string::npos) << summary.str();

  report.system->metrics_after = MetricsScrape{};
  report.system->metrics_after->error = "GET https://127.0.0.1:10259/metrics: connecting: Connection refused";
  doc = json::parse(render_json(report));
  EXPECT_EQ(doc.at("cluster").at("system").at("metrics").at("after").at("error").as_string(),
            "GET https://127.0.0.1:10259/metrics: connecting: Connection refused");
  EXPECT_NE(render_html(report).find("after: could not be read: GET"), std::string::npos);
}

TEST(Junit, ExpectedViolationsArePassingTestcases) {
  std::string xml = render_junit(report_for(testing::observations_3355(), {"pods-bound", "queue-accounting"}));
  EXPECT_NE(xml.find("failures=\"0\""), std::string::npos);
  EXPECT_EQ(xml.find("<failure"), std::string::npos);
}

TEST(Junit, UnexpectedViolationIsAFailureWithEvidence) {
  std::string xml = render_junit(report_for(testing::observations_3355(), {}));
  EXPECT_NE(xml.find("failures=\"2\""), std::string::npos) << xml;
  EXPECT_NE(xml.find("<failure message=\"violated (1)"), std::string::npos);
  EXPECT_NE(xml.find("faultline/burst-00002"), std::string::npos);
}

TEST(Reports, FilesAreWrittenAndJunitParsesAsXml) {
  auto obs = testing::observations_3355();
  obs.pods.pods.begin()->second.name = "evil<&\"name>";  // must be escaped everywhere
  obs.pods.pods.begin()->second.deleted = WallTime{} + std::chrono::seconds(5);
  faultline::testing::TempDir tmp("faultline-report-test");
  const fs::path dir = tmp.path() / "files";  // write_reports creates it
  Report written = report_for(obs, {});
  write_reports(written, dir);
  ASSERT_TRUE(fs::exists(dir / "report.json"));
  ASSERT_TRUE(fs::exists(dir / "report.html"));
  ASSERT_TRUE(fs::exists(dir / "junit.xml"));
  std::string cmd =
      "python3 -c \"import sys,xml.etree.ElementTree as E; r=E.parse(sys.argv[1]).getroot(); "
      "assert len(r.findall('.//testcase'))==5\" " +
      (dir / "junit.xml").string();
  EXPECT_EQ(std::system(cmd.c_str()), 0) << "junit.xml is not well-formed XML";
  const std::string text = faultline::testing::slurp(dir / "report.html");
  EXPECT_NE(text.find("<svg"), std::string::npos);
  EXPECT_NE(text.find("rect class=\"fault\""), std::string::npos);
  EXPECT_EQ(text.find("evil<&"), std::string::npos);
  EXPECT_NE(text.find("evil&lt;&amp;"), std::string::npos);
}

// report.json's `timings`: every step's key, in order, seconds to the millisecond, null for a step
// the run did not reach; write_reports adds the time it took to write junit.xml and report.html.
TEST(Reports, TimingsGiveSecondsPerStep) {
  faultline::testing::TempDir tmp("faultline-report-timings");
  Report r = report_for(testing::observations_3355(), {});
  r.timings.prepare = 1.23456;
  r.timings.nodes = 2.0;
  r.timings.settle = 0.0004;
  write_reports(r, tmp.path());
  const auto doc = json::parse(faultline::testing::slurp(tmp.path() / "report.json"));
  const auto& t = doc.at("timings").as_object();
  std::vector<std::string> keys;
  for (const auto& kv : t) keys.emplace_back(kv.key());
  EXPECT_EQ(keys, (std::vector<std::string>{"prepare", "nodes", "observers", "workload", "settle", "collect", "checks",
                                            "reports"}));
  EXPECT_DOUBLE_EQ(t.at("prepare").to_number<double>(), 1.235);
  EXPECT_DOUBLE_EQ(t.at("nodes").to_number<double>(), 2.0);
  EXPECT_DOUBLE_EQ(t.at("settle").to_number<double>(), 0.0);
  EXPECT_TRUE(t.at("workload").is_null());
  ASSERT_TRUE(t.at("reports").is_number());
  EXPECT_GE(t.at("reports").to_number<double>(), 0.0);
  EXPECT_LT(t.at("reports").to_number<double>(), 60.0);
}

// Which faultline wrote a report: report.json, junit.xml's properties and report.html carry the
// version and commit of faultline-harness (faultline/version.hpp).
TEST(Reports, CarryTheFaultlineVersionAndCommit) {
  const Report r = report_for(testing::observations_3355(), {"pods-bound", "queue-accounting"});
  ASSERT_FALSE(std::string(faultline::version()).empty());
  ASSERT_FALSE(std::string(faultline::git_commit()).empty());
  const auto doc = json::parse(render_json(r));
  EXPECT_EQ(doc.at("faultline").at("version").as_string(), faultline::version());
  EXPECT_EQ(doc.at("faultline").at("commit").as_string(), faultline::git_commit());
  const std::string xml = render_junit(r);
  EXPECT_NE(xml.find("<property name=\"faultline.version\" value=\"" + std::string(faultline::version()) + "\"/>"),
            std::string::npos)
      << xml;
  EXPECT_NE(xml.find("<property name=\"faultline.commit\" value=\"" + std::string(faultline::git_commit()) + "\"/>"),
            std::string::npos)
      << xml;
  EXPECT_NE(render_html(r).find("faultline-harness " + std::string(faultline::version()) + " (commit " +
                                std::string(faultline::git_commit()) + ")"),
            std::string::npos);
}

// Two fault windows seconds apart on a five-minute timeline: their names go into separate lanes
// above the plot instead of the same line (they were printed over each other).
TEST(ReportHtml, CloseFaultWindowsAreLabelledInSeparateLanes) {
  Report r = report_for(testing::observations_3355(), {"pods-bound", "queue-accounting"});
  r.timeline = {{0, 0, 0, 0}, {300, 10, 10, 10}};
  r.fault_windows = {
      {"outage-mid-bind", "outage", r.started + std::chrono::seconds(8), r.started + std::chrono::seconds(18), 120},
      {"relist-after-outage", "watch-gone", r.started + std::chrono::seconds(18), r.started + std::chrono::seconds(18),
       1},
      {"late", "delay", r.started + std::chrono::seconds(200), r.started + std::chrono::seconds(210), 4}};
  const std::string html = render_html(r);
  auto label_y = [&html](const std::string& name) {
    const auto at = html.find("\">" + name + "<title>");
    if (at == std::string::npos) return -1.0;
    const auto y = html.rfind(" y=\"", at);
    return std::stod(html.substr(y + 4));
  };
  const double a = label_y("outage-mid-bind"), b = label_y("relist-after-outage"), c = label_y("late");
  ASSERT_GT(a, 0) << html;
  ASSERT_GT(b, 0) << html;
  EXPECT_NE(a, b) << "two labels on one line, 10 s apart";
  EXPECT_EQ(a, c) << "a label far from the others takes the first lane";
}

// yunikorn-build.json as key/value rows (nested keys dotted, lists joined), not as raw JSON.
TEST(ReportHtml, YunikornBuildIsAKeyValueTable) {
  Report r = report_for(testing::observations_3355(), {"pods-bound", "queue-accounting"});
  r.yunikorn_build = R"({"yunikorn":"patch:3355","version":"v1.9.0","patches":["0001-a.patch","0002-b.patch"],)"
                     R"("core":{"module":"github.com/apache/yunikorn-core","version":"v1.9.0"},"dirty":null})";
  const std::string html = render_html(r);
  EXPECT_NE(html.find("<tr><th>patches</th><td>0001-a.patch, 0002-b.patch</td></tr>"), std::string::npos) << html;
  EXPECT_NE(html.find("<tr><th>core.module</th><td>github.com/apache/yunikorn-core</td></tr>"), std::string::npos);
  EXPECT_EQ(html.find("{&quot;yunikorn&quot;"), std::string::npos);
}

TEST(Summary, ListsEveryCheckAndTheVerdict) {
  std::ostringstream out;
  print_summary(report_for(testing::observations_3355(), {"pods-bound", "queue-accounting"}), out);
  for (const auto& name : schema::invariant_names()) EXPECT_NE(out.str().find(name), std::string::npos) << name;
  EXPECT_NE(out.str().find("verdict: reproduced"), std::string::npos);
  EXPECT_NE(out.str().find("1 phantom allocations"), std::string::npos);
}

}  // namespace
}  // namespace faultline::harness

namespace faultline::harness {
namespace {

// A node flap and a component fault appear in report.json (with seconds on the timeline's axis),
// as shaded spans of report.html's timeline and in its table, and in the printed summary.
TEST(Steps, AppearInTheJsonTheTimelineAndTheSummary) {
  auto obs = testing::observations_3355();
  Report r = report_for(obs, {});
  StepRecord flap{"flap",
                  "nodeFlap",
                  "kwok-node-3, kwok-node-7",
                  r.started + std::chrono::seconds(12),
                  r.started + std::chrono::seconds(18),
                  "deleted 2 of the 20 nodes asked for",
                  ""};
  StepRecord kill{"apiserver-kill",
                  "kill",
                  "kube-apiserver",
                  r.started + std::chrono::seconds(20),
                  std::nullopt,
                  "",
                  "component fault apiserver-kill (kill kube-apiserver): kube-apiserver is not running"};
  r.steps = {flap, kill};
  json::value doc = json::parse(render_json(r));
  const json::array& steps = doc.at("steps").as_array();
  ASSERT_EQ(steps.size(), 2u);
  EXPECT_EQ(steps[0].at("name").as_string(), "flap");
  EXPECT_EQ(steps[0].at("kind").as_string(), "nodeFlap");
  EXPECT_EQ(steps[0].at("startedSeconds").as_double(), 12.0);
  EXPECT_EQ(steps[0].at("recoveredSeconds").as_double(), 18.0);
  EXPECT_TRUE(steps[0].at("error").is_null());
  EXPECT_TRUE(steps[1].at("recovered").is_null());
  EXPECT_EQ(steps[1].at("error").as_string(), kill.error);

  std::string html = render_html(r);
  EXPECT_NE(html.find("<rect class=\"step\""), std::string::npos);
  EXPECT_NE(html.find("<title>flap (nodeFlap kwok-node-3, kwok-node-7)</title>"), std::string::npos);
  EXPECT_NE(html.find("FAILED: " + kill.error), std::string::npos);

  std::ostringstream summary;
  print_summary(r, summary);
  EXPECT_NE(summary.str().find("step flap (nodeFlap kwok-node-3, kwok-node-7, +12.0s): deleted 2"), std::string::npos)
      << summary.str();
}

}  // namespace
}  // namespace faultline::harness
