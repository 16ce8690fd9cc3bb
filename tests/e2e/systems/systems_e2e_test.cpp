// Systems under test from system files, end to end as `make chaos SYSTEM=... SCENARIO=...` runs
// them: scripts/chaos brings a real local stack up with the system behind faultline-proxy, runs the
// real faultline-harness with the scenario, and brings the stack down. The tests read report.json
// as a user would: the verdict, the declared checks and their evidence, the system's metrics.
#include <gtest/gtest.h>

#include <boost/json.hpp>
#include <filesystem>
#include <memory>
#include <string>

#include "local_stack.hpp"

namespace {

namespace fs = std::filesystem;
namespace json = boost::json;

using namespace faultline::testing;  // tests/support/local_stack.hpp

const fs::path kLabeller = kSource / "tests" / "e2e" / "systems" / "labeller";

struct ChaosRun {
  CommandResult result;
  std::unique_ptr<TempDir> dir;  // removed after the test unless it failed
  fs::path out;
  json::object report;

  std::string verdict() const {
    const auto* v = report.if_contains("verdict");
    return v != nullptr && v->is_string() ? std::string(v->as_string()) : "";
  }
  // The report's entry for one check, or null.
  const json::object* check(const std::string& name) const {
    const auto* checks = report.if_contains("checks");
    if (checks == nullptr || !checks->is_array()) return nullptr;
    for (const auto& c : checks->as_array())
      if (c.is_object() && c.as_object().at("name").as_string() == name) return &c.as_object();
    return nullptr;
  }
  std::string context() const { return "chaos output:\n" + result.output + "\nreports in " + out.string(); }
};

ChaosRun chaos(const std::string& system, const std::string& scenario) {
  ChaosRun run;
  run.dir = std::make_unique<TempDir>("faultline-systems-e2e", TempDir::Keep::on_failure);
  run.out = run.dir->path();
  const std::string command =
      "FAULTLINE_HARNESS_BIN=" +
      shell_quote(env_or("FAULTLINE_HARNESS_BIN", kBinary / "harness" / "faultline-harness")) +
      " FAULTLINE_PROXY_BIN=" + shell_quote(env_or("FAULTLINE_PROXY_BIN", kBinary / "proxy" / "faultline-proxy")) +
      " " + shell_quote((kSource / "scripts" / "chaos").string()) + " --system " + shell_quote(system) +
      " --scenario " + shell_quote(scenario) + " --out " + shell_quote(run.out.string());
  run.result = run_command(command);
  const std::string text = slurp(run.out / "report.json");
  if (!text.empty()) {
    boost::system::error_code ec;
    auto v = json::parse(text, ec);
    if (!ec && v.is_object()) run.report = v.as_object();
  }
  return run;
}

std::string text_of(const json::value& v) { return v.is_string() ? std::string(v.as_string()) : json::serialize(v); }

// A controller faultline knows nothing about, from its system file: every ConfigMap the workload
// creates gets its label, so the declared check passes, with data.
TEST(SystemsE2E, OwnControllerKeepsItsDeclaredInvariant) {
  ChaosRun run = chaos((kLabeller / "system.yaml").string(), (kLabeller / "holds.yaml").string());
  ASSERT_FALSE(run.report.empty()) << run.context();
  EXPECT_EQ(run.result.exit_code, 0) << run.context();
  EXPECT_EQ(run.verdict(), "pass") << run.context();
  const json::object* check = run.check("every-configmap-labelled");
  ASSERT_NE(check, nullptr) << run.context();
  EXPECT_EQ(check->at("status").as_string(), "passed") << json::serialize(*check);
  EXPECT_NE(text_of(check->at("summary")).find("10"), std::string::npos) << json::serialize(*check);
  EXPECT_EQ(run.report.at("cluster").at("system").at("name").as_string(), "labeller") << run.context();
}

// The same controller while the proxy answers each of its patches 500: the run fails, and the check's
// evidence names the ConfigMaps that never got their label.
TEST(SystemsE2E, AFaultMakesOwnControllerFailWithEvidence) {
  ChaosRun run = chaos((kLabeller / "system.yaml").string(), (kLabeller / "patches-fail.yaml").string());
  ASSERT_FALSE(run.report.empty()) << run.context();
  EXPECT_EQ(run.result.exit_code, 1) << run.context();
  EXPECT_EQ(run.verdict(), "fail") << run.context();
  const json::object* check = run.check("every-configmap-labelled");
  ASSERT_NE(check, nullptr) << run.context();
  EXPECT_EQ(check->at("status").as_string(), "violated") << json::serialize(*check);
  EXPECT_EQ(check->at("count").to_number<std::int64_t>(), 10) << json::serialize(*check);
  const std::string evidence = json::serialize(check->at("evidence"));
  for (const char* name : {"cm-1", "cm-10"}) EXPECT_NE(evidence.find(name), std::string::npos) << evidence;
  bool fired = false;
  for (const auto& f : run.report.at("faults").as_array())
    if (f.at("rule").as_string() == "patches-fail") fired = f.at("fired").to_number<std::int64_t>() > 0;
  EXPECT_TRUE(fired) << run.context();
}

// kube-controller-manager of the stack's Kubernetes release, from its shipped system file: one
// DaemonSet gets one daemon pod on each of the 20 KWOK nodes, and the report keeps the controller's
// own metrics.
TEST(SystemsE2E, KubeControllerManagerRunsADaemonSetWithoutFaults) {
  ChaosRun run = chaos("kube-controller-manager", "daemonset-control");
  ASSERT_FALSE(run.report.empty()) << run.context();
  EXPECT_EQ(run.result.exit_code, 0) << run.context();
  EXPECT_EQ(run.verdict(), "pass") << run.context();
  for (const char* name : {"one-daemon-pod-per-node", "every-node-has-its-pod"}) {
    const json::object* check = run.check(name);
    ASSERT_NE(check, nullptr) << name << "\n" << run.context();
    EXPECT_EQ(check->at("status").as_string(), "passed") << json::serialize(*check);
  }
  const auto& cluster = run.report.at("cluster").as_object();
  EXPECT_EQ(cluster.at("system").at("name").as_string(), "kube-controller-manager") << run.context();
  EXPECT_EQ(text_of(cluster.at("versions").at("kube-apiserver")).rfind("v1.36.", 0), 0u) << run.context();
  // The controller's own work queue, read before the faults were armed and after the settle.
  const auto daemonset_adds = [&](const char* when) -> double {
    const auto* read = cluster.at("system").at("metrics").as_object().if_contains(when);
    if (read == nullptr || !read->is_object()) return -1;
    for (const auto& s : read->at("samples").as_array()) {
      const auto& o = s.as_object();
      const auto* name = o.at("labels").as_object().if_contains("name");
      if (o.at("name").as_string() == "workqueue_adds_total" && name != nullptr && *name == "daemonset")
        return o.at("value").to_number<double>();
    }
    return 0;
  };
  const double before = daemonset_adds("before");
  EXPECT_GE(before, 0) << "no metrics read before the run:\n" << run.context();
  EXPECT_GT(daemonset_adds("after"), before) << json::serialize(cluster.at("system"));
}

}  // namespace
