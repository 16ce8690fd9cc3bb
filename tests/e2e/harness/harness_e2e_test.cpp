// faultline-harness end to end: a real local stack (etcd, kube-apiserver, KWOK, faultline-proxy,
// YuniKorn or kube-scheduler) per test in a temporary run dir, the real harness binary, and the
// report files checked the way a user or CI would read them (JSON parser, XML parser, HTML parser).
#include <gtest/gtest.h>

#include <boost/json.hpp>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <future>
#include <map>
#include <string>
#include <thread>

#include "local_stack.hpp"

namespace {

namespace fs = std::filesystem;
namespace json = boost::json;

using namespace faultline::testing;  // tests/support/local_stack.hpp

// One local stack for one test (scheduler and KWOK, no nodes yet); always torn down.
class Stack {
 public:
  explicit Stack(const std::string& scheduler) : stack_("faultline-harness-e2e-" + scheduler) {
    // The proxy built next to the harness, unless the caller points at another build.
    std::string proxy = env_or("FAULTLINE_PROXY_BIN", (kBinary / "proxy" / "faultline-proxy").string());
    stack_.up("--scheduler " + scheduler + " --nodes 0", "FAULTLINE_PROXY_BIN=" + shell_quote(proxy));
  }
  ~Stack() { stack_.down(); }
  bool up() const { return stack_.started(); }
  const std::string& log() const { return stack_.log(); }
  fs::path env_file() const { return stack_.env_file(); }
  fs::path dir() const { return stack_.dir(); }
  std::string kubectl(const std::string& args) const { return stack_.kubectl(args); }
  std::string var(const std::string& name) const { return stack_.var(name); }

 private:
  LocalStack stack_;
};

CommandResult run_harness(const Stack& stack, const fs::path& scenario, const fs::path& out) {
  return run_command(shell_quote((kBinary / "harness" / "faultline-harness").string()) + " run " +
                     shell_quote(scenario.string()) + " --env " + shell_quote(stack.env_file().string()) + " --out " +
                     shell_quote(out.string()));
}

// What CI does with the files: parse them. A run without pods has no timeline (no svg).
void expect_valid_reports(const fs::path& out, bool with_pods = true) {
  ASSERT_TRUE(fs::exists(out / "report.json"));
  EXPECT_NO_THROW(json::parse(slurp(out / "report.json")));
  CommandResult junit =
      run_command("python3 -c " +
                  shell_quote("import sys, xml.etree.ElementTree as E\n"
                              "root = E.parse(sys.argv[1]).getroot()\n"
                              "cases = root.findall('.//testcase')\n"
                              "assert root.tag == 'testsuites' and len(cases) >= 3, (root.tag, len(cases))\n") +
                  " " + shell_quote((out / "junit.xml").string()));
  EXPECT_EQ(junit.exit_code, 0) << junit.output;
  CommandResult html = run_command(
      "python3 -c " +
      shell_quote(
          "import sys\nfrom html.parser import HTMLParser\n"
          "class P(HTMLParser):\n"
          "    def __init__(s): super().__init__(); s.stack=[]; s.tags=set()\n"
          "    def handle_starttag(s, t, a):\n"
          "        s.tags.add(t)\n"
          "        if t not in ('meta','br','img','link','input','rect','line','polyline','path'): s.stack.append(t)\n"
          "    def handle_endtag(s, t):\n"
          "        if t in ('rect','line','polyline','path'): return\n"
          "        assert s.stack and s.stack[-1] == t, ('unbalanced', t, s.stack[-3:])\n"
          "        s.stack.pop()\n"
          "p = P(); p.feed(open(sys.argv[1]).read()); p.close()\n"
          "assert not p.stack, p.stack\n"
          "assert ({'html','table'} | ({'svg'} if sys.argv[2] == 'pods' else set())) <= p.tags, p.tags\n") +
      " " + shell_quote((out / "report.html").string()) + (with_pods ? " pods" : " no-pods"));
  EXPECT_EQ(html.exit_code, 0) << html.output;
}

json::object check_named(const json::value& report, const std::string& name) {
  for (const auto& c : report.at("checks").as_array()) {
    if (c.at("name").as_string() == name) return c.as_object();
  }
  ADD_FAILURE() << "no check " << name;
  return {};
}

// The value of the sample `name` with label `label`=`value` in one scrape of the system's metrics
// (report.json cluster.system.metrics.before or .after); fails the test when there is none.
double metric_value(const json::value& scrape, const std::string& name, const std::string& label,
                    const std::string& value) {
  for (const auto& s : scrape.at("samples").as_array()) {
    if (s.at("name").as_string() != name) continue;
    const auto* l = s.at("labels").as_object().if_contains(label);
    if (l != nullptr && l->as_string() == value) return s.at("value").to_number<double>();
  }
  ADD_FAILURE() << "no sample " << name << "{" << label << "=\"" << value << "\"} in " << json::serialize(scrape);
  return -1;
}

void no_fault_scenario_passes(const std::string& scheduler) {
  Stack stack(scheduler);
  ASSERT_TRUE(stack.up()) << stack.log();
  fs::path out = stack.dir() / "report";
  CommandResult r = run_harness(stack, kSource / "harness" / "scenarios" / "no-faults.yaml", out);
  EXPECT_EQ(r.exit_code, 0) << r.output;
  expect_valid_reports(out);
  json::value report = json::parse(slurp(out / "report.json"));
  EXPECT_EQ(report.at("verdict").as_string(), "pass") << r.output;
  EXPECT_EQ(report.at("cluster").at("scheduler").as_string(), scheduler);
  // The Kubernetes release in the reports is the running apiserver's (GET /version, asked here
  // with kubectl), which is the release scripts/components built (versions.json beside the binaries).
  CommandResult version = run_command(stack.kubectl("get --raw /version 2>/dev/null"));
  ASSERT_EQ(version.exit_code, 0) << version.output;
  const std::string git_version(json::parse(version.output).at("gitVersion").as_string());
  EXPECT_EQ(report.at("cluster").at("versions").at("kube-apiserver").as_string(), git_version);
  const json::value built =
      json::parse(slurp(fs::path(stack.var("FAULTLINE_COMPONENTS_BIN")) / ".." / "versions.json"));
  EXPECT_EQ(built.at("components").at("kube-apiserver").at("version").as_string(), git_version);
  EXPECT_NE(slurp(out / "report.html").find("kube-apiserver " + git_version), std::string::npos);
  EXPECT_EQ(report.at("workload").at("podsCreated").to_number<std::int64_t>(), 220);
  EXPECT_GT(report.at("workload").at("createRateAchieved").to_number<double>(), 0);
  EXPECT_EQ(report.at("stats").at("boundPods").to_number<std::int64_t>(), 220);
  EXPECT_EQ(report.at("stats").at("strandedPods").to_number<std::int64_t>(), 0);
  for (const char* name : {"pods-bound", "no-unexpected-deletes", "bound-to-live-node"}) {
    EXPECT_EQ(check_named(report, name).at("status").as_string(), "passed") << name;
  }
  const char* yunikorn_status = scheduler == "yunikorn" ? "passed" : "skipped";
  for (const char* name : {"queue-accounting", "no-orphan-allocations"}) {
    EXPECT_EQ(check_named(report, name).at("status").as_string(), yunikorn_status) << name;
  }
  // The system's metrics endpoint, read before the faults and after the settle: the scheduler's own
  // count of pods it placed rose by at least the pods of the run.
  const auto& metrics = report.at("cluster").at("system").at("metrics");
  ASSERT_TRUE(metrics.at("before").at("error").is_null()) << metrics;
  ASSERT_TRUE(metrics.at("after").at("error").is_null()) << metrics;
  const bool ks = scheduler == "kube-scheduler";
  const std::string counter =
      ks ? "scheduler_schedule_attempts_total" : "yunikorn_scheduler_container_allocation_attempt_total";
  const std::string label = ks ? "result" : "state";
  const std::string value = ks ? "scheduled" : "allocated";
  const double after = metric_value(metrics.at("after"), counter, label, value);
  // Before the first pod a labelled counter may not be served yet: it counts from 0.
  double before = 0;
  for (const auto& s : metrics.at("before").at("samples").as_array())
    if (s.at("name").as_string() == counter && s.at("labels").at(label).as_string() == value)
      before = s.at("value").to_number<double>();
  EXPECT_GE(after - before, 220) << metrics;
  EXPECT_GT(metrics.at("after").at("served").to_number<std::int64_t>(), 0);
  EXPECT_EQ(metrics.at("after").at("malformedLines").to_number<std::int64_t>(), 0) << metrics;
  EXPECT_NE(slurp(out / "report.html").find("<h2>Metrics of " + scheduler + "</h2>"), std::string::npos);
  if (scheduler == "yunikorn") {
    EXPECT_EQ(report.at("stats").at("queueAllocatedPods").to_number<std::int64_t>(), 220);
    EXPECT_EQ(report.at("stats").at("phantomAllocations").to_number<std::int64_t>(), 0);
    EXPECT_TRUE(fs::exists(out / "yunikorn-fullstatedump.json"));
  }
}

TEST(HarnessE2E, NoFaultScenarioPassesOnYunikorn) { no_fault_scenario_passes("yunikorn"); }

TEST(HarnessE2E, NoFaultScenarioPassesOnKubeScheduler) { no_fault_scenario_passes("kube-scheduler"); }

TEST(HarnessE2E, PodDeletedBehindTheHarnessFailsNoUnexpectedDeletes) {
  Stack stack("kube-scheduler");
  ASSERT_TRUE(stack.up()) << stack.log();
  fs::path out = stack.dir() / "report";
  auto harness = std::async(std::launch::async, [&] {
    return run_harness(stack, fs::path(FAULTLINE_TEST_DATA_DIR) / "harness" / "scenarios" / "delete-behind-back.yaml",
                       out);
  });
  // Wait for the first phase's pods to run, then delete one as another client (kubectl).
  std::string victim = "first-00007";
  bool deleted = false;
  for (int i = 0; i < 120 && !deleted; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(250));
    CommandResult phase = run_command(stack.kubectl("-n faultline get pod " + victim + " -o jsonpath={.status.phase}"));
    if (phase.exit_code == 0 && phase.output == "Running") {
      CommandResult del = run_command(stack.kubectl("-n faultline delete pod " + victim + " --wait=false"));
      ASSERT_EQ(del.exit_code, 0) << del.output;
      deleted = true;
    }
  }
  ASSERT_TRUE(deleted) << "pod " << victim << " never ran";
  CommandResult r = harness.get();
  EXPECT_EQ(r.exit_code, 1) << "an unexpected delete is an unexpected verdict\n" << r.output;
  expect_valid_reports(out);
  json::value report = json::parse(slurp(out / "report.json"));
  EXPECT_EQ(report.at("verdict").as_string(), "fail");
  json::object check = check_named(report, "no-unexpected-deletes");
  EXPECT_EQ(check.at("status").as_string(), "violated");
  EXPECT_EQ(check.at("count").to_number<std::int64_t>(), 1);
  EXPECT_NE(json::serialize(check.at("evidence")).find("faultline/" + victim), std::string::npos)
      << json::serialize(check);
  EXPECT_EQ(check_named(report, "pods-bound").at("status").as_string(), "passed");
  std::string junit = slurp(out / "junit.xml");
  EXPECT_NE(junit.find("<failure"), std::string::npos);
  EXPECT_NE(junit.find(victim), std::string::npos);
}

// checks.declared on the real apiserver: an objects step creates two ConfigMaps sharing a label
// value; kubectl deletes one of them mid-run. The duplicate is still reported (with both names and
// when it happened), `reaches` passes and fails as written, and a mistyped field path or a resource
// that does not exist is no-data.
TEST(HarnessE2E, DeclaredChecksJudgeObjectsTheWorkloadCreated) {
  Stack stack("kube-scheduler");
  ASSERT_TRUE(stack.up()) << stack.log();
  fs::path out = stack.dir() / "report";
  auto harness = std::async(std::launch::async, [&] {
    return run_harness(stack, fs::path(FAULTLINE_TEST_DATA_DIR) / "harness" / "scenarios" / "declared-configmaps.yaml",
                       out);
  });
  bool deleted = false;
  for (int i = 0; i < 240 && !deleted; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(250));
    CommandResult get = run_command(stack.kubectl("-n declared get configmap cm-2 -o name"));
    if (get.exit_code == 0 && get.output.find("cm-2") != std::string::npos) {
      CommandResult del = run_command(stack.kubectl("-n declared delete configmap cm-2"));
      ASSERT_EQ(del.exit_code, 0) << del.output;
      deleted = true;
    }
  }
  ASSERT_TRUE(deleted) << "configmap cm-2 was never created";
  CommandResult r = harness.get();
  EXPECT_EQ(r.exit_code, 1) << "a mistyped field path has no data: the verdict is fail\n" << r.output;
  expect_valid_reports(out, false);
  json::value report = json::parse(slurp(out / "report.json"));
  EXPECT_EQ(report.at("verdict").as_string(), "fail") << json::serialize(report.at("checks"));
  EXPECT_EQ(report.at("workload").at("objectsCreated").to_number<std::int64_t>(), 2);
  EXPECT_EQ(report.at("workload").at("objectsFailed").to_number<std::int64_t>(), 0);

  json::object slot = check_named(report, "one-per-slot");
  EXPECT_EQ(slot.at("status").as_string(), "violated") << json::serialize(slot);
  EXPECT_EQ(slot.at("expected").as_string(), "violated");
  const std::string evidence = json::serialize(slot.at("evidence"));
  EXPECT_NE(evidence.find("group metadata.labels.slot=a: 2 objects at +"), std::string::npos) << evidence;
  EXPECT_NE(evidence.find("declared/cm-1, declared/cm-2"), std::string::npos) << evidence;
  EXPECT_NE(evidence.find("1 at the end (max 1)"), std::string::npos) << evidence;

  json::object set = check_named(report, "value-set");
  EXPECT_EQ(set.at("status").as_string(), "passed") << json::serialize(set);
  EXPECT_NE(std::string(set.at("summary").as_string()).find("1/1 live objects reached data.v"), std::string::npos)
      << json::serialize(set);
  json::object never = check_named(report, "value-never-two");
  EXPECT_EQ(never.at("status").as_string(), "violated") << json::serialize(never);
  EXPECT_NE(json::serialize(never.at("evidence")).find("declared/cm-1: data.v is \\\"1\\\" at the end"),
            std::string::npos)
      << json::serialize(never);
  json::object typo = check_named(report, "typo");
  EXPECT_EQ(typo.at("status").as_string(), "no-data") << json::serialize(typo);
  EXPECT_EQ(typo.at("summary").as_string(),
            "no data: field metadata.labels.slott is absent on all 2 objects of configmaps");
  json::object missing = check_named(report, "missing-resource");
  EXPECT_EQ(missing.at("status").as_string(), "no-data") << json::serialize(missing);
  EXPECT_NE(std::string(missing.at("summary").as_string())
                .find("the watch of widgets (/apis/example.com/v1/namespaces/declared/widgets) failed: listing"),
            std::string::npos)
      << json::serialize(missing);
  // The proxy's audit was read (without it the check has no data) and holds no kubectl delete.
  json::object writes = check_named(report, "no-kubectl-writes");
  EXPECT_EQ(writes.at("status").as_string(), "passed") << json::serialize(writes);
  std::string junit = slurp(out / "junit.xml");
  EXPECT_NE(junit.find("one-per-slot"), std::string::npos);
  EXPECT_NE(slurp(out / "report.html").find("value-never-two"), std::string::npos);

  // Again on the same stack: cm-1 is still there from the first run (cm-2 was deleted), and an
  // object this step did not create is an error, not a creation.
  fs::path again = stack.dir() / "report-again";
  CommandResult second = run_harness(
      stack, fs::path(FAULTLINE_TEST_DATA_DIR) / "harness" / "scenarios" / "declared-configmaps.yaml", again);
  EXPECT_EQ(second.exit_code, 2) << second.output;
  json::value report2 = json::parse(slurp(again / "report.json"));
  EXPECT_EQ(report2.at("workload").at("objectsCreated").to_number<std::int64_t>(), 1);
  EXPECT_EQ(report2.at("workload").at("objectsFailed").to_number<std::int64_t>(), 1);
  EXPECT_NE(std::string(report2.at("error").as_string()).find("cm-1: "), std::string::npos) << report2.at("error");
  EXPECT_NE(std::string(report2.at("error").as_string()).find("not created by this step"), std::string::npos)
      << report2.at("error");
  // The run failed after the first scrape of kube-scheduler's metrics: it was read again at the end.
  const auto& metrics = report2.at("cluster").at("system").at("metrics");
  EXPECT_TRUE(metrics.at("before").at("error").is_null()) << metrics;
  ASSERT_TRUE(metrics.at("after").is_object()) << metrics;
  EXPECT_TRUE(metrics.at("after").at("error").is_null()) << metrics;
  EXPECT_GT(metrics.at("after").at("served").to_number<std::int64_t>(), 0) << metrics;
}

// Every bind is answered 500 for 20 s while checks.settle is 15 s: the pods stay Pending without a
// change the watch sees, which a settle that ignored the faults took for the end (verdict fail
// after 15 s, every pod stranded, the rule still firing). The settle begins once the window
// closed; kube-scheduler binds the pods then (its backoff after failed binds is at most 10 s),
// and the report says when the fault ended and settling began.
TEST(HarnessE2E, SettleBeginsOnlyAfterTheFaultWindowEnded) {
  Stack stack("kube-scheduler");
  ASSERT_TRUE(stack.up()) << stack.log();
  const fs::path scenario = stack.dir() / "bind-errors-window.yaml";
  std::ofstream(scenario) << R"(apiVersion: faultline/v1
kind: Scenario
metadata: {name: bind-errors-window}
seed: 3
workload:
  nodes: {count: 3}
  phases:
    - {name: burst, pods: 10, template: {requests: {cpu: 10m, memory: 16Mi}}}
faults:
  - name: bind-500
    match: {verbs: [create], resources: [pods/binding]}
    when: {for: 20s}
    action: {type: respond, code: 500, message: injected bind failure}
checks:
  settle: 15s
  invariants: [pods-bound, no-unexpected-deletes, bound-to-live-node]
)";
  fs::path out = stack.dir() / "report";
  CommandResult r = run_harness(stack, scenario, out);
  EXPECT_EQ(r.exit_code, 0) << r.output;
  expect_valid_reports(out);
  json::value report = json::parse(slurp(out / "report.json"));
  EXPECT_EQ(report.at("verdict").as_string(), "pass") << r.output;
  EXPECT_GT(report.at("faults").as_array()[0].at("fired").to_number<std::int64_t>(), 0);
  EXPECT_EQ(report.at("stats").at("boundPods").to_number<std::int64_t>(), 10);
  ASSERT_TRUE(report.at("faultsEnded").is_string()) << json::serialize(report);
  ASSERT_TRUE(report.at("settleStarted").is_string()) << json::serialize(report);
  // RFC 3339 UTC with milliseconds: compared as text, then as seconds after arming.
  const std::string armed(report.at("armed").as_string());
  const std::string ended(report.at("faultsEnded").as_string());
  const std::string began(report.at("settleStarted").as_string());
  EXPECT_LT(ended, began);
  CommandResult gap = run_command("python3 -c " +
                                  shell_quote("import sys, datetime as d\n"
                                              "t = lambda s: d.datetime.fromisoformat(s.replace('Z', '+00:00'))\n"
                                              "print('%.3f' % (t(sys.argv[2]) - t(sys.argv[1])).total_seconds())\n") +
                                  " " + shell_quote(armed) + " " + shell_quote(began));
  ASSERT_EQ(gap.exit_code, 0) << gap.output;
  EXPECT_GE(std::stod(gap.output), 19.5) << "settling began " << gap.output << " s after arming, inside the window";
  const std::string junit = slurp(out / "junit.xml");
  EXPECT_NE(junit.find("name=\"faultsEnded\" value=\"" + ended + "\""), std::string::npos) << junit;
  EXPECT_NE(junit.find("name=\"settleStarted\" value=\"" + began + "\""), std::string::npos) << junit;
  EXPECT_NE(slurp(out / "report.html").find(began), std::string::npos);
}

// A rule with a limit and no window whose match never comes (no client watches configmaps with
// that user agent) stays open: the run cannot be judged after the faults, an error. That it never
// fired is said in those words, so that explore counts the plan `inconclusive`, as for a trigger
// never reached, not `error`.
TEST(HarnessE2E, ALimitRuleThatNeverFiredIsAnErrorThatSaysSo) {
  Stack stack("kube-scheduler");
  ASSERT_TRUE(stack.up()) << stack.log();
  const fs::path scenario = stack.dir() / "never-fired.yaml";
  std::ofstream(scenario) << R"(apiVersion: faultline/v1
kind: Scenario
metadata: {name: never-fired}
seed: 3
workload:
  nodes: {count: 1}
  phases:
    - {name: burst, pods: 2, template: {requests: {cpu: 10m, memory: 16Mi}}}
faults:
  - name: reset-a-watch
    match: {verbs: [watch], resources: [configmaps], userAgents: ["nobody/*"]}
    when: {limit: 1}
    action: {type: watch-reset, afterEvents: 1}
checks:
  settle: 5s
  invariants: [pods-bound]
)";
  fs::path out = stack.dir() / "report";
  CommandResult r = run_harness(stack, scenario, out);
  EXPECT_EQ(r.exit_code, 2) << r.output;
  const json::value report = json::parse(slurp(out / "report.json"));
  EXPECT_EQ(report.at("verdict").as_string(), "error") << r.output;
  const std::string error(report.at("error").as_string());
  EXPECT_NE(error.find("fault rule reset-a-watch (fired 0 of its limit of 1) never fired and did not end within "
                       "checks.settle"),
            std::string::npos)
      << error;
}

// A churn soak at a tiny size (docs/sweeps-and-soaks.md, "Churn soak"): 60 s of churn at 2 pods/s, an outage that
// repeats every 25 s, invariants at each quiet point and RSS/fds of every component sampled.
TEST(HarnessE2E, ChurnSoakChecksAtEveryQuietPointAndSamplesTheStack) {
  Stack stack("kube-scheduler");
  ASSERT_TRUE(stack.up()) << stack.log();
  const fs::path scenario = stack.dir() / "churn-tiny.yaml";
  {
    std::ofstream out(scenario);
    out << R"(apiVersion: faultline/v1
kind: Scenario
metadata: {name: churn-tiny}
seed: 14
workload:
  nodes: {count: 3}
  phases:
    - {name: churn, churn: {rate: 2/s, lifetime: 10s, for: 60s}, template: {requests: {cpu: 10m, memory: 16Mi}}}
faults:
  - name: outage
    when: {at: 5s, for: 3s, repeat: 25s, limit: 1}
    action: {type: outage, mode: reset}
checks:
  settle: 30s
  quietAfter: 15s
  resources: {every: 2s, rssKiBPerMinute: 65536, fdsPerMinute: 1000}
  invariants: [pods-bound, no-unexpected-deletes, bound-to-live-node]
)";
  }
  fs::path out = stack.dir() / "report";
  CommandResult r = run_harness(stack, scenario, out);
  EXPECT_EQ(r.exit_code, 0) << r.output;
  expect_valid_reports(out);
  json::value report = json::parse(slurp(out / "report.json"));
  EXPECT_EQ(report.at("verdict").as_string(), "pass") << r.output;
  // The outage fired once in each of at least two windows (5 s and 30 s after arm; 55 s may be too).
  ASSERT_EQ(report.at("faults").as_array().size(), 1u);
  EXPECT_GE(report.at("faults").as_array()[0].at("fired").to_number<std::int64_t>(), 2);
  // A quiet point after each window, each with the three invariants checked and held.
  const auto& quiet = report.at("quietPoints").as_array();
  EXPECT_GE(quiet.size(), 2u) << r.output;
  double previous = 0;
  for (const auto& point : quiet) {
    double at = point.at("seconds").to_number<double>();
    EXPECT_GT(at, previous);
    previous = at;
    const auto& checks = point.at("checks").as_array();
    ASSERT_EQ(checks.size(), 3u);
    for (const auto& c : checks) EXPECT_EQ(c.at("status").as_string(), "passed") << json::serialize(c);
  }
  EXPECT_EQ(check_named(report, "quiet-points").at("status").as_string(), "passed");
  // Pods were deleted at the end of their lifetime by the harness, not flagged as unexpected.
  EXPECT_GE(report.at("stats").at("deletedPods").to_number<std::int64_t>(), 80);
  EXPECT_EQ(check_named(report, "no-unexpected-deletes").at("status").as_string(), "passed");
  // Samples of every component, the proxy's with a fitted slope.
  std::map<std::string, int> samples;
  for (const auto& s : report.at("resources").at("samples").as_array()) {
    const auto& row = s.as_array();
    EXPECT_GT(row[2].to_number<std::int64_t>(), 0);
    EXPECT_GT(row[3].to_number<std::int64_t>(), 0);
    ++samples[std::string(row[1].as_string())];
  }
  for (const char* component : {"etcd", "kube-apiserver", "kwok", "faultline-proxy", "scheduler"})
    EXPECT_GE(samples[component], 20) << component;
  json::object flat = check_named(report, "proxy-resources-flat");
  EXPECT_EQ(flat.at("status").as_string(), "passed") << json::serialize(flat);
}

}  // namespace
