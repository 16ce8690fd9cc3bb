// The chaos driver end to end, as `make chaos` runs it: scripts/chaos brings a real local stack up
// (etcd, kube-apiserver, KWOK, faultline-proxy, YuniKorn v1.9.0 or kube-scheduler) in a temporary
// run dir, runs the real faultline-harness with a shipped scenario, and brings the stack down. The
// tests read report.json the way a user or CI would and check the verdict and the numbers behind it.
// One stack at a time: YuniKorn v1.9.0 always serves its REST API on port 9080.
#include <gtest/gtest.h>

#include <algorithm>
#include <boost/json.hpp>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>

#include "local_stack.hpp"

namespace {

namespace fs = std::filesystem;
namespace json = boost::json;

// The size of these runs: 1000 pods pass the 300-bind trigger with a backlog left for the outage,
// on 100 KWOK nodes (10 pods each); small enough for CI on a 2-core machine. `make chaos` uses the
// scenario's 500 nodes and 3000 pods.
constexpr const char* kNodes = "100";
constexpr const char* kPods = "1000";

using namespace faultline::testing;  // tests/support/local_stack.hpp

// One scripts/chaos run with its report.
struct ChaosRun {
  CommandResult result;
  std::unique_ptr<TempDir> dir;  // removed after the test unless it failed
  fs::path out;
  json::object report;

  std::int64_t stat(const char* name) const {
    const auto* stats = report.if_contains("stats");
    if (stats == nullptr || !stats->is_object()) return -1;
    const auto* v = stats->as_object().if_contains(name);
    return v != nullptr && v->is_int64() ? v->as_int64() : -1;
  }
  std::string verdict() const {
    const auto* v = report.if_contains("verdict");
    return v != nullptr && v->is_string() ? std::string(v->as_string()) : "";
  }
  // How often a fault rule fired, -1 when the report does not list it.
  std::int64_t fired(const std::string& rule) const {
    const auto* faults = report.if_contains("faults");
    if (faults == nullptr || !faults->is_array()) return -1;
    for (const auto& f : faults->as_array()) {
      const auto& o = f.as_object();
      if (o.at("rule").as_string() == rule) return o.at("fired").to_number<std::int64_t>();
    }
    return -1;
  }
  std::string context() const { return "chaos output:\n" + result.output + "\nreports in " + out.string(); }
};

// extra: more scripts/chaos options, e.g. the YuniKorn build under test.
ChaosRun chaos(const std::string& scenario, const std::string& scheduler, const std::string& extra = "") {
  ChaosRun run;
  run.dir = std::make_unique<TempDir>("faultline-chaos-e2e-" + scenario, TempDir::Keep::on_failure);
  run.out = run.dir->path();
  std::string command =
      "FAULTLINE_HARNESS_BIN=" +
      shell_quote(env_or("FAULTLINE_HARNESS_BIN", kBinary / "harness" / "faultline-harness")) +
      " FAULTLINE_PROXY_BIN=" + shell_quote(env_or("FAULTLINE_PROXY_BIN", kBinary / "proxy" / "faultline-proxy")) +
      " " + shell_quote((kSource / "scripts" / "chaos").string()) + " --scenario " + shell_quote(scenario) +
      " --scheduler " + scheduler + " --nodes " + kNodes + " --pods " + kPods + " --out " +
      shell_quote(run.out.string()) + extra;
  run.result = run_command(command);
  std::string text = slurp(run.out / "report.json");
  if (!text.empty()) {
    boost::system::error_code ec;
    auto v = json::parse(text, ec);
    if (!ec && v.is_object()) run.report = v.as_object();
  }
  return run;
}

// The faults section of a scenario file, comments left out: from the line `faults:` to the next
// top-level key.
std::string faults_section(const fs::path& file) {
  std::ifstream in(file);
  std::string out;
  bool inside = false;
  for (std::string line; std::getline(in, line);) {
    bool top_level = !line.empty() && line[0] != ' ' && line[0] != '#';
    if (top_level) inside = line.rfind("faults:", 0) == 0;
    bool comment = line.find_first_not_of(' ') != std::string::npos && line[line.find_first_not_of(' ')] == '#';
    if (inside && !comment) out += line + "\n";
  }
  return out;
}

TEST(ChaosDriver, UnknownScenarioIsAnErrorBeforeAnyStackStarts) {
  CommandResult r = run_command(shell_quote((kSource / "scripts" / "chaos").string()) +
                                " --scenario no-such-scenario --scheduler yunikorn");
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("no scenario 'no-such-scenario'"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("yunikorn-3355-outage"), std::string::npos) << "lists the shipped scenarios:\n" << r.output;
  EXPECT_EQ(r.output.find("local stack"), std::string::npos) << r.output;
}

TEST(ChaosScenarios, KubeSchedulerControlCarriesExactlyTheReproductionsFaults) {
  const fs::path dir = kSource / "harness" / "scenarios";
  std::string repro = faults_section(dir / "yunikorn-3355-outage.yaml");
  ASSERT_NE(repro.find("outage"), std::string::npos) << repro;
  EXPECT_EQ(faults_section(dir / "kube-scheduler-3355-outage.yaml"), repro);
}

// The same workload without faults on YuniKorn: every check passes, every pod is bound, the queue
// books exactly the bound pods.
TEST(ChaosE2E, YuniKornWithoutFaultsPasses) {
  ChaosRun run = chaos("yunikorn-3355-control", "yunikorn");
  ASSERT_FALSE(run.report.empty()) << run.context();
  EXPECT_EQ(run.result.exit_code, 0) << run.context();
  EXPECT_EQ(run.verdict(), "pass") << run.context();
  EXPECT_EQ(run.stat("strandedPods"), 0) << run.context();
  EXPECT_EQ(run.stat("phantomAllocations"), 0) << run.context();
  EXPECT_GT(run.stat("boundPods"), 0) << run.context();
  EXPECT_EQ(run.stat("queueAllocatedPods"), run.stat("boundPods")) << run.context();
  EXPECT_TRUE(fs::exists(run.out / "logs" / "scheduler.log")) << "YuniKorn's log kept with the reports";
}

// The YUNIKORN-3355 faults against kube-scheduler: it forgets the assumed pods whose binds failed
// and schedules them again, so every pod ends bound and Running although both faults fired.
TEST(ChaosE2E, KubeSchedulerUnderThe3355FaultsPasses) {
  ChaosRun run = chaos("kube-scheduler-3355-outage", "kube-scheduler");
  ASSERT_FALSE(run.report.empty()) << run.context();
  EXPECT_EQ(run.result.exit_code, 0) << run.context();
  EXPECT_EQ(run.verdict(), "pass") << run.context();
  EXPECT_GT(run.fired("outage-mid-bind"), 0) << run.context();
  EXPECT_GT(run.fired("relist-after-outage"), 0) << run.context();
  EXPECT_EQ(run.stat("strandedPods"), 0) << run.context();
}

// Stranded pods never settle, so a run that reproduces waits checks.settle out twice (before the
// `afterwards` phase and at the end): 45 s without any change instead of the scenario's 120 s.
const std::string kShortSettle = " --settle 45s";

// The reproduction: pods left Pending with no node while YuniKorn's queue books them.
TEST(ChaosE2E, YuniKornUnderThe3355FaultsStrandsPodsTheQueueStillBooks) {
  ChaosRun run = chaos("yunikorn-3355-outage", "yunikorn", kShortSettle);
  ASSERT_FALSE(run.report.empty()) << run.context();
  EXPECT_GT(run.fired("outage-mid-bind"), 0) << run.context();
  EXPECT_GT(run.fired("relist-after-outage"), 0) << run.context();
  EXPECT_EQ(run.verdict(), "reproduced") << run.context();
  EXPECT_EQ(run.result.exit_code, 0) << run.context();
  EXPECT_GT(run.stat("strandedPods"), 0) << run.context();
  EXPECT_GT(run.stat("phantomAllocations"), 0) << run.context();
  EXPECT_GT(run.stat("queueAllocatedPods"), run.stat("boundPods")) << run.context();
}

// The same reproduction, same seed and faults, on v1.9.0 plus the candidate fix
// (scripts/go/yunikorn/patches/3355-revert-assignment), judged without the scenario's expectation:
// the queue books no pod on a node it was never bound to, and report.json names the build.
TEST(ChaosE2E, The3355CandidateFixLeavesNoPhantomAllocation) {
  const std::string yunikorn = "patch:3355-revert-assignment";
  CommandResult build =
      run_command("YUNIKORN=" + yunikorn + " " + shell_quote((kSource / "scripts" / "components").string()) + " build");
  ASSERT_EQ(build.exit_code, 0) << build.output;
  ChaosRun run = chaos("yunikorn-3355-outage", "yunikorn", " --no-expect --yunikorn " + yunikorn + kShortSettle);
  ASSERT_FALSE(run.report.empty()) << run.context();
  EXPECT_GT(run.fired("outage-mid-bind"), 0) << run.context();
  EXPECT_GT(run.fired("relist-after-outage"), 0) << run.context();
  EXPECT_EQ(run.stat("phantomAllocations"), 0) << run.context();
  EXPECT_EQ(run.stat("queueAllocatedPods"), run.stat("boundPods")) << run.context();
  const auto& checks = run.report.at("checks").as_array();
  auto queue = std::find_if(checks.begin(), checks.end(),
                            [](const json::value& c) { return c.at("name").as_string() == "queue-accounting"; });
  ASSERT_NE(queue, checks.end()) << run.context();
  EXPECT_EQ(queue->at("status").as_string(), "passed") << run.context();
  const auto* build_info = run.report.at("cluster").as_object().if_contains("yunikornBuild");
  ASSERT_NE(build_info, nullptr) << run.context();
  EXPECT_EQ(build_info->at("yunikorn").as_string(), yunikorn) << run.context();
  EXPECT_EQ(build_info->at("patches").as_array().size(), 2u) << run.context();
}

}  // namespace
