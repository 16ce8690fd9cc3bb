// `faultline-harness explore`'s driver without a cluster: run outcomes from report.json text,
// plan verdicts, the reference audit log's bounds, `explore plan` on a real audit trace (sharded
// and not), the merge of shards, and explore.json / junit.xml / explore.html as a reader sees them.
#include "faultline/harness/explore_report.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <boost/json.hpp>
#include <chrono>
#include <filesystem>
#include <sstream>

#include "faultline/audit/record.hpp"
#include "faultline/harness/explore_driver.hpp"
#include "faultline/harness/sweep.hpp"
#include "faultline/net/certs.hpp"
#include "files.hpp"

namespace faultline::harness::explore {
namespace {

namespace fs = std::filesystem;
namespace json = boost::json;
using faultline::testing::slurp;
using faultline::testing::TempDir;

std::string report(std::string_view verdict, std::string_view error, bool fired, std::string_view violated,
                   std::string_view expected = "ok") {
  json::array checks{json::object{{"name", "pods-bound"}, {"status", "passed"}, {"expected", "ok"}}};
  if (!violated.empty())
    checks.push_back(json::object{{"name", violated}, {"status", "violated"}, {"expected", expected}});
  json::object o{{"verdict", verdict},
                 {"error", error.empty() ? json::value(nullptr) : json::value(error)},
                 {"started", "2026-12-07T10:00:00.000Z"},
                 {"armed", "2026-12-07T10:00:01.000Z"},
                 {"faults", json::array{json::object{{"rule", "r"}, {"matched", 3}, {"fired", fired ? 1 : 0}}}},
                 {"faultWindows", fired ? json::array{json::object{{"rule", "r"},
                                                                   {"first", "2026-12-07T10:00:03.500Z"},
                                                                   {"last", "2026-12-07T10:00:03.500Z"}}}
                                        : json::array{}},
                 {"checks", std::move(checks)}};
  return json::serialize(o);
}

TEST(ExploreRun, NeverFiredIsInconclusiveNotPass) {
  const PlanRun r = classify_run(
      report("error", "fault rule 'r' never fired (matched 0 requests): the run did not test what the scenario asks",
             false, ""),
      1);
  EXPECT_EQ(r.outcome, "inconclusive");
  EXPECT_FALSE(r.fired);
  EXPECT_EQ(plan_verdict({r}), "inconclusive");
  // A limit rule left open, never fired (its match never came): inconclusive too. One that fired
  // and stayed open is an error.
  const std::string open = " within checks.settle (30.1s) after the workload: it has no when.for and can still fire";
  EXPECT_EQ(
      classify_run(
          report("error", "fault rule w (fired 0 of its limit of 1) never fired and did not end" + open, false, ""), 1)
          .outcome,
      "inconclusive");
  EXPECT_EQ(
      classify_run(report("error", "fault rule w (fired 1 of its limit of 2) did not end" + open, true, ""), 1).outcome,
      "error");
}

TEST(ExploreRun, FailWithAViolationIsFound) {
  const PlanRun r = classify_run(report("fail", "", true, "bound-to-live-node"), 2);
  EXPECT_EQ(r.outcome, "found");
  EXPECT_TRUE(r.fired);
  EXPECT_EQ(r.run, 2u);
  ASSERT_EQ(r.violated, std::vector<std::string>{"bound-to-live-node"});
  ASSERT_TRUE(r.first_fault.has_value());
  EXPECT_DOUBLE_EQ(*r.first_fault, 2.5);  // from the arming
}

TEST(ExploreRun, AnExpectedViolationIsNotFoundAndOtherErrorsStayErrors) {
  EXPECT_EQ(classify_run(report("fail", "", true, "pods-bound", "violated"), 1).outcome, "error");
  EXPECT_EQ(classify_run(report("error", "the apiserver did not answer", true, ""), 1).outcome, "error");
  EXPECT_EQ(classify_run(report("pass", "", true, ""), 1).outcome, "pass");
  EXPECT_EQ(classify_run("not json", 1).outcome, "error");
}

TEST(ExploreRun, PlanVerdictOrder) {
  PlanRun found, pass, inconclusive, error;
  found.outcome = "found";
  pass.outcome = "pass";
  inconclusive.outcome = "inconclusive";
  error.outcome = "error";
  EXPECT_EQ(plan_verdict({pass, found}), "found");
  EXPECT_EQ(plan_verdict({inconclusive, pass}), "pass");
  EXPECT_EQ(plan_verdict({error, inconclusive}), "inconclusive");
  EXPECT_EQ(plan_verdict({error}), "error");
  EXPECT_EQ(plan_verdict({}), "missing");
}

// A reference run as scripts/soak leaves it: report.json and logs/proxy-audit.jsonl with the
// system's binds and events, written with the proxy's own codec.
void write_reference(const fs::path& run, int binds) {
  fs::create_directories(run / "logs");
  const auto t0 = std::chrono::system_clock::time_point(std::chrono::seconds(1'800'000'000));
  std::string lines;
  std::uint64_t seq = 0;
  for (int i = 0; i < binds; ++i) {
    audit::Record bind;
    bind.user_agent = "kube-scheduler/v1.36.3";
    bind.proto = "h2";
    bind.method = "POST";
    bind.path = "/api/v1/namespaces/faultline/pods/p" + std::to_string(i) + "/binding";
    bind.verb = "create";
    bind.resource = "pods";
    bind.subresource = "binding";
    bind.namespace_ = "faultline";
    bind.name = "p" + std::to_string(i);
    bind.status = 201;
    bind.upstream_status = 201;
    lines += audit::to_json_line(bind, ++seq, t0 + std::chrono::milliseconds(1000 + 200 * i));
    audit::Record event = bind;
    event.path = "/apis/events.k8s.io/v1/namespaces/faultline/events";
    event.resource = "events.events.k8s.io";
    event.subresource = "";
    lines += audit::to_json_line(event, ++seq, t0 + std::chrono::milliseconds(1050 + 200 * i));
  }
  audit::Record watch;
  watch.user_agent = "kube-scheduler/v1.36.3";
  watch.method = "GET";
  watch.path = "/api/v1/pods?watch=true";
  watch.verb = "watch";
  watch.resource = "pods";
  watch.watch = true;
  watch.status = 200;
  lines += audit::to_json_line(watch, ++seq, t0 + std::chrono::milliseconds(500));
  net::write_file(run / "logs" / "proxy-audit.jsonl", lines);
  net::write_file(run / "report.json",
                  R"({"verdict":"pass","started":"2027-01-15T08:00:00.000Z","armed":"2027-01-15T08:00:00.500Z"})");
}

constexpr const char* kScenario = R"(apiVersion: faultline/v1
kind: Scenario
metadata: {name: unit-explore}
seed: 7
workload:
  nodes: {count: 3, capacity: {cpu: "32", memory: 256Gi, pods: "110"}}
  phases:
    - {name: burst, pods: 10, rate: 5}
faults:
  - name: bind-500
    match: {verbs: [create], resources: [pods/binding]}
    when: {afterMatches: 2, limit: 1}
    action: {type: respond, code: 500, message: injected}
checks:
  settle: 15s
  expect: [pods-bound]
  invariants: [pods-bound, no-unexpected-deletes, bound-to-live-node]
)";

struct Fixture {
  TempDir tmp{"faultline-explore-report", TempDir::Keep::on_failure};
  fs::path scenario = tmp.path() / "scenario.yaml";
  fs::path reference = tmp.path() / "ref" / "run-01";
  Fixture() {
    net::write_file(scenario, kScenario);
    write_reference(reference, 10);
  }
  int plan(const fs::path& out, unsigned index, unsigned count, std::string* said = nullptr) {
    PlanCommand c;
    c.scenario_file = scenario.string();
    c.reference_dir = reference.string();
    c.out = out.string();
    c.system = "kube-scheduler";
    c.shard_index = index;
    c.shard_count = count;
    std::ostringstream o, e;
    const int code = explore_plan(c, o, e);
    if (said != nullptr) *said = o.str() + e.str();
    return code;
  }
};

std::vector<std::string> cell_ids(const fs::path& dir) {
  std::vector<std::string> ids;
  const json::value plan = json::parse(slurp(dir / "plan.json"));
  for (const auto& c : plan.at("cells").as_array()) ids.emplace_back(c.at("id").as_string());
  return ids;
}

// A run of each plan whose outcome follows from its position: found, pass, never fired, in turn.
void fake_runs(const fs::path& dir) {
  const json::value plan = json::parse(slurp(dir / "plan.json"));
  for (const auto& c : plan.at("cells").as_array()) {
    const auto index = c.at("index").to_number<std::uint64_t>();
    const fs::path run = dir / "cells" / std::string(c.at("id").as_string()) / "run-01";
    fs::create_directories(run);
    const std::string text = index % 3 == 0   ? report("fail", "", true, "bound-to-live-node")
                             : index % 3 == 1 ? report("pass", "", true, "")
                                              : report("error", "fault rule 'r' never fired (matched 0)", false, "");
    net::write_file(run / "report.json", text);
  }
}

TEST(ExplorePlan, WritesThePlanTheCellsAndTheGenerationTable) {
  Fixture f;
  const fs::path out = f.tmp.path() / "x";
  std::string said;
  ASSERT_EQ(f.plan(out, 1, 1, &said), 0) << said;
  const json::object plan = json::parse(slurp(out / "plan.json")).as_object();
  EXPECT_EQ(plan.at("scheduler").as_string(), "kube-scheduler");
  EXPECT_EQ(plan.at("explore").at("shard").as_string(), "1/1");
  const auto& cells = plan.at("cells").as_array();
  ASSERT_FALSE(cells.empty()) << said;
  EXPECT_EQ(plan.at("explore").at("plans").to_number<std::uint64_t>(), cells.size());
  for (std::size_t i = 0; i < cells.size(); ++i) {
    const auto& c = cells[i].as_object();
    EXPECT_EQ(c.at("index").to_number<std::uint64_t>(), i);
    for (const char* key : {"kind", "site", "source"}) EXPECT_FALSE(c.at(key).as_string().empty()) << key;
    const std::string yaml = slurp(out / "cells" / std::string(c.at("id").as_string()) / "scenario.yaml");
    EXPECT_TRUE(yaml.find("\nfaults:") != std::string::npos || yaml.find("\ncomponentFaults:") != std::string::npos)
        << yaml;
    EXPECT_EQ(yaml.find("bind-500"), std::string::npos) << "the explored scenario's own fault stays out:\n" << yaml;
  }
  EXPECT_NE(slurp(out / "generation.tsv").find("produced"), std::string::npos);
  EXPECT_NE(said.find("21 audit records"), std::string::npos) << said;
  // The same command again is fine; another shard into the same directory is refused.
  EXPECT_EQ(f.plan(out, 1, 1), 0);
  EXPECT_EQ(f.plan(out, 1, 2, &said), 2);
  EXPECT_NE(said.find("is another plan"), std::string::npos) << said;
}

// The system's file (explore.components) says what the kill and pause plans target: Airflow's
// scheduler 1, paused after its pod creations and when scheduler 2 starts; kube-scheduler's file
// declares none: the stack's scheduler, as before.
TEST(ExplorePlan, TheSystemFileSaysWhatKillAndPausePlansTarget) {
  Fixture f;
  std::string lines = slurp(f.reference / "logs" / "proxy-audit.jsonl");
  const auto t0 = std::chrono::system_clock::time_point(std::chrono::seconds(1'800'000'000));
  audit::Record r;
  r.proto = "h1";
  r.status = 201;
  r.upstream_status = 201;
  r.user_agent = "airflow-scheduler-1 OpenAPI-Generator/23.6.0/python";
  r.method = "POST";
  r.path = "/api/v1/namespaces/airflow/pods";
  r.verb = "create";
  r.resource = "pods";
  r.namespace_ = "airflow";
  lines += audit::to_json_line(r, 100, t0 + std::chrono::milliseconds(900));
  r.user_agent = "airflow-scheduler-2 OpenAPI-Generator/23.6.0/python";
  r.method = "GET";
  r.verb = "list";
  r.status = 200;
  r.upstream_status = 200;
  lines += audit::to_json_line(r, 101, t0 + std::chrono::milliseconds(5000));
  // A watch kept open past the run's end (report.json's finished): the harness never counts it.
  r.user_agent = "airflow-scheduler-3 OpenAPI-Generator/23.6.0/python";
  r.path = "/api/v1/namespaces/airflow/pods?watch=true";
  r.verb = "watch";
  r.watch = true;
  r.duration = std::chrono::seconds(100);
  lines += audit::to_json_line(r, 102, t0 + std::chrono::milliseconds(6000));
  net::write_file(f.reference / "logs" / "proxy-audit.jsonl", lines);
  net::write_file(f.reference / "report.json",
                  R"({"verdict":"pass","started":"2027-01-15T08:00:00.000Z","armed":"2027-01-15T08:00:00.500Z",)"
                  R"("finished":"2027-01-15T08:01:00.000Z"})");
  const std::string shipped = (fs::path(FAULTLINE_SOURCE_DIR) / "harness" / "systems").string();
  auto plan = [&](const std::string& system, const std::string& systems_dir, const fs::path& out, std::string& said) {
    PlanCommand c;
    c.scenario_file = f.scenario.string();
    c.reference_dir = f.reference.string();
    c.out = out.string();
    c.system = system;
    c.systems_dir = systems_dir;
    std::ostringstream o, e;
    const int code = explore_plan(c, o, e);
    said = o.str() + e.str();
    return code;
  };
  auto has = [](const std::vector<std::string>& ids, const std::string& id) {
    return std::find(ids.begin(), ids.end(), id) != ids.end();
  };
  std::string said;
  ASSERT_EQ(plan("airflow", shipped, f.tmp.path() / "airflow", said), 0) << said;
  EXPECT_NE(said.find("kill and pause plans target airflow-scheduler (explore.components of "), std::string::npos)
      << said;
  auto ids = cell_ids(f.tmp.path() / "airflow");
  EXPECT_TRUE(has(ids, "pause-40s-after-first-request-airflow-scheduler-2"));
  EXPECT_TRUE(has(ids, "pause-after-first-request-airflow-scheduler-2"));
  EXPECT_TRUE(has(ids, "pause-40s-after-create-pods-first"));
  EXPECT_FALSE(has(ids, "kill-after-create-pods-binding-first"));
  EXPECT_FALSE(has(ids, "pause-after-first-request-airflow-scheduler-3"));
  EXPECT_NE(
      slurp(f.tmp.path() / "airflow" / "cells" / "pause-40s-after-first-request-airflow-scheduler-2" / "scenario.yaml")
          .find("    target: airflow-scheduler\n    action: pause\n    downFor: 40s\n"),
      std::string::npos);
  EXPECT_NE(slurp(f.tmp.path() / "airflow" / "generation.tsv").find("\ncomponents\t"), std::string::npos);

  ASSERT_EQ(plan("kube-scheduler", shipped, f.tmp.path() / "ks", said), 0) << said;
  EXPECT_NE(said.find("kill and pause plans target the stack's scheduler ("), std::string::npos) << said;
  ids = cell_ids(f.tmp.path() / "ks");
  EXPECT_TRUE(has(ids, "kill-after-create-pods-binding-first"));
  EXPECT_FALSE(has(ids, "pause-after-first-request-airflow-scheduler-2"));
  EXPECT_EQ(slurp(f.tmp.path() / "ks" / "generation.tsv").find("\ncomponents\t"), std::string::npos);

  // A system file with a bad explore section: its errors, file:line:column.
  const fs::path bad = f.tmp.path() / "bad.yaml";
  net::write_file(bad,
                  "apiVersion: faultline/v1\nkind: System\nmetadata: {name: b}\nidentity: {user: u}\n"
                  "hooks: {up: [x]}\nexplore: {components: [{target: kwok, userAgents: [x], downFor: [0s]}]}\n");
  EXPECT_EQ(plan(bad.string(), "", f.tmp.path() / "bad", said), 2);
  EXPECT_NE(said.find(bad.string() + ":6:66: explore.components[0].downFor[0]: must be greater than 0"),
            std::string::npos)
      << said;
  EXPECT_EQ(plan("nosuch", shipped, f.tmp.path() / "nosuch", said), 2);
  EXPECT_NE(said.find("no system \"nosuch\""), std::string::npos) << said;
}

TEST(ExplorePlan, ABadAuditLineIsNamedByFileAndLine) {
  Fixture f;
  std::string lines = slurp(f.reference / "logs" / "proxy-audit.jsonl");
  lines.insert(lines.find('\n') + 1, "{\"seq\": \"x\"}\n");
  net::write_file(f.reference / "logs" / "proxy-audit.jsonl", lines);
  std::string said;
  EXPECT_EQ(f.plan(f.tmp.path() / "x", 1, 1, &said), 2);
  EXPECT_NE(said.find("proxy-audit.jsonl:2: "), std::string::npos) << said;
  EXPECT_THROW(read_audit_file(f.reference / "logs" / "proxy-audit.jsonl"), std::runtime_error);
}

TEST(ExplorePlan, AuditRecordsAreBounded) {
  Fixture f;
  EXPECT_EQ(read_audit_file(f.reference / "logs" / "proxy-audit.jsonl", 21).size(), 21u);
  try {
    read_audit_file(f.reference / "logs" / "proxy-audit.jsonl", 20);
    FAIL() << "read more than the bound";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("proxy-audit.jsonl:21: more than 20 audit records"), std::string::npos)
        << e.what();
  }
}

TEST(ExploreReport, MergedShardsGiveTheTableOfOneUnshardedRun) {
  Fixture f;
  const fs::path whole = f.tmp.path() / "whole", s1 = f.tmp.path() / "s1", s2 = f.tmp.path() / "s2";
  ASSERT_EQ(f.plan(whole, 1, 1), 0);
  ASSERT_EQ(f.plan(s1, 1, 2), 0);
  ASSERT_EQ(f.plan(s2, 2, 2), 0);
  // The shards split the plans: none in both, none left out, same ids.
  auto ids1 = cell_ids(s1), ids2 = cell_ids(s2);
  ASSERT_FALSE(ids1.empty());
  ASSERT_FALSE(ids2.empty());
  std::vector<std::string> both = ids1;
  both.insert(both.end(), ids2.begin(), ids2.end());
  std::sort(both.begin(), both.end());
  auto all = cell_ids(whole);
  std::sort(all.begin(), all.end());
  EXPECT_EQ(both, all);
  for (const auto& d : {whole, s1, s2}) fake_runs(d);
  const Exploration one = read_exploration({whole});
  const Exploration merged = read_exploration({s2, s1});
  ASSERT_EQ(one.plans.size(), merged.plans.size());
  EXPECT_EQ(merged.plans_total, one.plans_total);
  for (std::size_t i = 0; i < one.plans.size(); ++i) {
    const auto &a = one.plans[i], &b = merged.plans[i];
    EXPECT_EQ(a.id, b.id);
    EXPECT_EQ(a.index, b.index);
    EXPECT_EQ(a.fired, b.fired) << a.id;
    EXPECT_EQ(a.verdict, b.verdict) << a.id;
    EXPECT_EQ(a.found, b.found) << a.id;
    EXPECT_EQ(a.counted, b.counted) << a.id;
    EXPECT_EQ(a.violated, b.violated) << a.id;
  }
  // The table of explore.json is the same but for the directory each plan was read from.
  auto table = [](const Exploration& e) {
    json::array rows = json::parse(render_explore_json(e)).at("plans").as_array();
    for (auto& r : rows) {
      r.as_object().erase("shard");
      r.as_object().erase("scenario");
    }
    return json::serialize(rows);
  };
  EXPECT_EQ(table(one), table(merged));
  // A directory given twice is refused: its plans would count twice.
  EXPECT_THROW(read_exploration({s1, s1}), std::runtime_error);
}

PlanResult result(std::uint64_t index, std::size_t faults, std::vector<std::vector<std::string>> runs) {
  PlanResult p;
  p.id = "plan-" + std::to_string(index);
  p.index = index;
  p.faults.assign(faults, "rule");
  for (auto& violated : runs) {
    PlanRun r;
    r.outcome = violated.empty() ? "pass" : "found";
    r.violated = std::move(violated);
    p.runs.push_back(std::move(r));
  }
  p.verdict = plan_verdict(p.runs);
  return p;
}

// The rarer violation first, the smallest plan of each first, every group's first before the rest;
// a plan's group is its first violating run's, whatever its later runs violated.
TEST(ExploreFindings, RarestViolationFirstAndTheSmallestPlanOfEach) {
  Exploration e;
  e.plans = {result(0, 1, {{"pods-bound"}}),
             result(1, 7, {{"queue-accounting", "pods-bound"}}),
             result(2, 1, {{}, {"pods-bound"}}),
             result(3, 2, {{"pods-bound", "queue-accounting"}}),
             result(4, 1, {{"pods-bound"}, {"pods-bound", "no-orphan-allocations"}}),
             result(5, 1, {{}, {}})};
  std::vector<std::string> order;
  for (const auto& f : findings(e))
    order.push_back(f.id + (f.first ? " first " : " more ") + [&] {
      std::string v;
      for (const auto& s : f.violated) v += (v.empty() ? "" : ",") + s;
      return v;
    }());
  EXPECT_EQ(order, (std::vector<std::string>{"plan-3 first pods-bound,queue-accounting", "plan-0 first pods-bound",
                                             "plan-1 more pods-bound,queue-accounting", "plan-2 more pods-bound",
                                             "plan-4 more pods-bound"}));
  EXPECT_TRUE(findings(Exploration{}).empty());
}

TEST(ExploreFindings, FoundListsThePlansThatViolated) {
  Fixture f;
  const fs::path out = f.tmp.path() / "x";
  ASSERT_EQ(f.plan(out, 1, 1), 0);
  fake_runs(out);
  std::ostringstream o, err;
  ASSERT_EQ(explore_found(out.string(), o, err), 0) << err.str();
  // One violation (fake_runs): one group, its plans by fault rules then index, the first marked.
  Exploration e = read_exploration({out});
  std::erase_if(e.plans, [](const PlanResult& p) { return p.verdict != "found"; });
  ASSERT_GE(e.plans.size(), 2u);
  std::stable_sort(e.plans.begin(), e.plans.end(),
                   [](const PlanResult& a, const PlanResult& b) { return a.faults.size() < b.faults.size(); });
  std::string want;
  for (const auto& p : e.plans)
    want += p.id + (&p == &e.plans.front() ? "\tfirst" : "\tmore") + "\tbound-to-live-node\n";
  EXPECT_EQ(o.str(), want);
  std::ostringstream o2, err2;
  EXPECT_EQ(explore_found((f.tmp.path() / "nothing").string(), o2, err2), 2);
  EXPECT_NE(err2.str().find("faultline-harness explore found: "), std::string::npos) << err2.str();
}

TEST(ExploreReport, JunitFailsFoundPlansAndSkipsInconclusiveOnes) {
  Fixture f;
  const fs::path out = f.tmp.path() / "x";
  ASSERT_EQ(f.plan(out, 1, 1), 0);
  fake_runs(out);
  const Exploration e = read_exploration({out});
  ASSERT_GE(e.plans.size(), 3u);
  std::size_t found = 0, inconclusive = 0, pass = 0;
  for (const auto& p : e.plans) {
    found += p.verdict == "found" ? 1 : 0;
    inconclusive += p.verdict == "inconclusive" ? 1 : 0;
    pass += p.verdict == "pass" ? 1 : 0;
    if (p.verdict == "inconclusive") {
      EXPECT_FALSE(p.fired) << p.id;
    }
  }
  EXPECT_GT(found, 0u);
  EXPECT_GT(inconclusive, 0u);
  EXPECT_GT(pass, 0u);
  const std::string junit = render_explore_junit(e);
  EXPECT_NE(junit.find("tests=\"" + std::to_string(e.plans.size()) + "\" failures=\"" + std::to_string(found) +
                       "\" errors=\"0\" skipped=\"" + std::to_string(inconclusive) + "\""),
            std::string::npos)
      << junit;
  const std::string first = "<testcase name=\"" + e.plans[0].id + "\"";
  const auto at = junit.find(first);
  ASSERT_NE(at, std::string::npos) << junit;
  EXPECT_EQ(junit.find("<failure message=\"violated bound-to-live-node in 100% (1/1)\"", at),
            junit.find("<failure", at))
      << junit;
  EXPECT_NE(junit.find("<skipped message=\"inconclusive: its faults never fired\"/>"), std::string::npos) << junit;
}

TEST(ExploreReport, HtmlIsSelfContainedWithThePlanTableAndTheReferenceTimeline) {
  Fixture f;
  const fs::path dir = f.tmp.path() / "x";
  ASSERT_EQ(f.plan(dir, 1, 1), 0);
  fake_runs(dir);
  // The reference run where scripts/explore puts it.
  fs::create_directories(dir / "reference");
  fs::copy(f.reference, dir / "reference" / "run-01", fs::copy_options::recursive);
  std::ostringstream o, e;
  ASSERT_EQ(explore_report({dir.string()}, "", o, e), 0) << e.str();
  const std::string html = slurp(dir / "explore.html");
  EXPECT_EQ(html.find("<script"), std::string::npos);
  EXPECT_EQ(html.find("src="), std::string::npos);
  EXPECT_EQ(html.find("href="), std::string::npos);
  EXPECT_NE(html.find("<table id=\"plans\">"), std::string::npos);
  for (const auto& id : cell_ids(dir)) EXPECT_NE(html.find("<td>" + id + "</td>"), std::string::npos) << id;
  EXPECT_NE(html.find(">writes</text>"), std::string::npos);
  EXPECT_NE(html.find("max 1 per"), std::string::npos) << "one watch in the reference run";
  // Each plan whose fault fired is marked on the timeline in its verdict's colour.
  EXPECT_NE(html.find("stroke=\"#b22222\" stroke-width=\"2\"><title>"), std::string::npos);
  const json::value report = json::parse(slurp(dir / "explore.json"));
  EXPECT_EQ(report.at("reference").at("writes").to_number<std::uint64_t>(), 20u);
  EXPECT_EQ(report.at("reference").at("watches").to_number<std::uint64_t>(), 1u);
  EXPECT_FALSE(slurp(dir / "junit.xml").empty());
  EXPECT_NE(o.str().find("plan\tkind\tfired\tverdict"), std::string::npos);
}

TEST(ExploreMinimize, WritesACandidatePlanOrTheResultAndRepeatsAPendingCandidate) {
  Fixture f;
  const fs::path dir = f.tmp.path() / "x";
  ASSERT_EQ(f.plan(dir, 1, 1), 0);
  fake_runs(dir);
  const Exploration e = read_exploration({dir});
  // A plan with a trigger count to shrink: its minimization proposes candidates.
  std::string found, passed;
  for (const auto& p : e.plans) {
    if (p.verdict == "found" && found.empty() && slurp(p.scenario_file).find("afterMatches: ") != std::string::npos)
      found = p.id;
    if (p.verdict == "pass" && passed.empty()) passed = p.id;
  }
  ASSERT_FALSE(found.empty());
  std::ostringstream o, err;
  EXPECT_EQ(explore_minimize_step(dir.string(), passed, 2, o, err), 2);
  EXPECT_NE(err.str().find("violated no invariant"), std::string::npos) << err.str();
  std::ostringstream o1, e1;
  ASSERT_EQ(explore_minimize_step(dir.string(), found, 2, o1, e1), 0) << e1.str();
  const fs::path m = dir / "minimize" / found;
  ASSERT_EQ(o1.str(), "candidate " + m.string() + "\n");
  const json::object plan = json::parse(slurp(m / "plan.json")).as_object();
  EXPECT_EQ(plan.at("runs").to_number<int>(), 2);
  ASSERT_EQ(plan.at("cells").as_array().size(), 1u);
  const std::string cand(plan.at("cells").as_array()[0].at("dir").as_string());
  EXPECT_FALSE(slurp(m / cand / "scenario.yaml").empty());
  // Its runs are not there yet: the same candidate again, nothing recorded.
  std::ostringstream o2, e2;
  ASSERT_EQ(explore_minimize_step(dir.string(), found, 2, o2, e2), 0) << e2.str();
  EXPECT_EQ(o2.str(), o1.str());
  EXPECT_FALSE(fs::exists(m / "history.tsv"));
  // Its runs: recorded, then the next candidate. They end `error` (a fault never fired) with the
  // invariant violated by their cut-short settle: not reproduced, not kept.
  auto write_runs = [&](const std::string& id, const std::string& text) {
    for (int r = 1; r <= 2; ++r) {
      fs::create_directories(m / id / ("run-0" + std::to_string(r)));
      net::write_file(m / id / ("run-0" + std::to_string(r)) / "report.json", text);
    }
  };
  write_runs(cand, report("error", "fault rule 'r' never fired and did not end", false, "bound-to-live-node"));
  std::ostringstream o3, e3;
  ASSERT_EQ(explore_minimize_step(dir.string(), found, 2, o3, e3), 0) << e3.str();
  EXPECT_NE(slurp(m / "history.tsv").find(cand + "\t0/2\tno\t"), std::string::npos) << slurp(m / "history.tsv");
  ASSERT_TRUE(o3.str().starts_with("candidate ")) << o3.str();
  const std::string next(json::parse(slurp(m / "plan.json")).at("cells").as_array()[0].at("dir").as_string());
  ASSERT_NE(next, cand);
  // The next one's runs violate it: reproduced and kept.
  write_runs(next, report("fail", "", true, "bound-to-live-node"));
  std::ostringstream o4, e4;
  ASSERT_EQ(explore_minimize_step(dir.string(), found, 2, o4, e4), 0) << e4.str();
  EXPECT_NE(slurp(m / "history.tsv").find(next + "\t2/2\tyes\t"), std::string::npos) << slurp(m / "history.tsv");
}

// The targets a minimization keeps are the invariants the plan's first violating run violated (its
// group in `explore found`), not every invariant any of its runs violated.
TEST(ExploreMinimize, TargetsAreWhatThePlansFirstViolatingRunViolated) {
  Fixture f;
  const fs::path dir = f.tmp.path() / "x";
  ASSERT_EQ(f.plan(dir, 1, 1), 0);
  fake_runs(dir);
  std::string found;
  for (const auto& p : read_exploration({dir}).plans)
    if (p.verdict == "found" && found.empty() && slurp(p.scenario_file).find("afterMatches: ") != std::string::npos)
      found = p.id;
  ASSERT_FALSE(found.empty());
  // Two more runs: one violating another invariant as well as a third that violated nothing.
  json::value plan = json::parse(slurp(dir / "plan.json"));
  for (auto& c : plan.at("cells").as_array())
    if (c.at("id").as_string() == found) c.as_object()["runs"] = 3;
  net::write_file(dir / "plan.json", json::serialize(plan));
  for (const auto& [run, text] : {std::pair{"run-02", report("fail", "", true, "no-unexpected-deletes")},
                                  std::pair{"run-03", report("pass", "", true, "")}}) {
    fs::create_directories(dir / "cells" / found / run);
    net::write_file(dir / "cells" / found / run / "report.json", text);
  }
  std::ostringstream o, e;
  ASSERT_EQ(explore_minimize_step(dir.string(), found, 2, o, e), 0) << e.str();
  const json::object state = json::parse(slurp(dir / "minimize" / found / "state.json")).as_object();
  EXPECT_EQ(json::serialize(state.at("targets")), R"(["bound-to-live-node"])");
}

// scripts/soak --plan: a cell's own `runs` and `dir` win over the plan's, in matrix report too.
TEST(ExploreSweepPlan, ACellsOwnRunsAndDirWinOverThePlans) {
  TempDir tmp("faultline-explore-sweep", TempDir::Keep::on_failure);
  const std::string plan_text =
      R"({"name":"p","scenario":"s.yaml","scheduler":"kube-scheduler","yunikorn":"","runs":1,"axes":[],"cells":[)"
      R"({"id":"a","values":[],"cluster":"","stackArgs":[],"expected":"pass","runs":3},)"
      R"({"id":"b","values":[],"cluster":"","stackArgs":[],"expected":"pass","dir":"elsewhere/b"}]})";
  net::write_file(tmp.path() / "plan.json", plan_text);
  const SweepPlan parsed = parse_plan_json(plan_text);
  EXPECT_EQ(parse_plan_json(plan_json(parsed)).cells[0].runs_wanted, 3u) << "written back as read";
  for (int r = 1; r <= 3; ++r) {
    fs::create_directories(tmp.path() / "cells" / "a" / ("run-0" + std::to_string(r)));
    net::write_file(tmp.path() / "cells" / "a" / ("run-0" + std::to_string(r)) / "report.json",
                    report("pass", "", true, ""));
  }
  fs::create_directories(tmp.path() / "elsewhere" / "b" / "run-01");
  net::write_file(tmp.path() / "elsewhere" / "b" / "run-01" / "report.json", report("pass", "", true, ""));
  const SweepPlan plan = read_sweep(tmp.path());
  const SweepSummary s = summarize(plan);
  EXPECT_EQ(s.runs_total, 4u);
  EXPECT_EQ(s.runs_done, 4u);
  ASSERT_EQ(s.cells.size(), 2u);
  EXPECT_TRUE(s.cells[0].as_expected);
  EXPECT_TRUE(s.cells[1].as_expected);
  EXPECT_THROW(parse_plan_json(R"({"name":"p","runs":1,"axes":[],"cells":[{"id":"c","values":[],"cluster":"",)"
                               R"("stackArgs":[],"expected":"pass","dir":"../c"}]})"),
               std::runtime_error);
}

}  // namespace
}  // namespace faultline::harness::explore
