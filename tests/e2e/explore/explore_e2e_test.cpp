// scripts/explore end to end, as `make explore` runs it: tests/e2e/explore/tiny.yaml (3 KWOK nodes,
// 10 pods) on kube-scheduler, three plans, on one local stack that every run reuses. The reports are
// read the way a user or CI would; the same command again runs nothing.
#include <gtest/gtest.h>
#include <unistd.h>

#include <boost/json.hpp>
#include <filesystem>
#include <string>

#include "local_stack.hpp"

namespace {

namespace fs = std::filesystem;
namespace json = boost::json;
using namespace faultline::testing;  // tests/support/local_stack.hpp

CommandResult explore(const fs::path& out) {
  return run_command(
      "FAULTLINE_HARNESS_BIN=" +
      shell_quote(env_or("FAULTLINE_HARNESS_BIN", kBinary / "harness" / "faultline-harness")) +
      " FAULTLINE_PROXY_BIN=" + shell_quote(env_or("FAULTLINE_PROXY_BIN", kBinary / "proxy" / "faultline-proxy")) +
      " " + shell_quote((kSource / "scripts" / "explore").string()) + " --scenario " +
      shell_quote((kSource / "tests" / "e2e" / "explore" / "tiny.yaml").string()) +
      " --set 'workload.phases[0].pods=8' --system kube-scheduler --max-plans 3 --repeats 1 --budget 12m --out " +
      shell_quote(out.string()));
}

TEST(ExploreE2E, TinyExplorationOnKubeSchedulerReportsEveryPlanAndResumesRunningNothing) {
  const fs::path out = fs::temp_directory_path() / ("faultline-explore-e2e-" + std::to_string(::getpid()));
  fs::remove_all(out);
  const CommandResult first = explore(out);
  const std::string context = "explore output:\n" + first.output + "\nexploration in " + out.string();
  ASSERT_EQ(first.exit_code, 0) << context;

  // The reference run kept the proxy's audit log of its run: the scheduler's binds are in it ...
  const std::string audit = slurp(out / "reference" / "run-01" / "logs" / "proxy-audit.jsonl");
  EXPECT_NE(audit.find("\"subresource\":\"binding\""), std::string::npos) << context;
  // ... and the watches it kept open through the run, recorded when scripts/explore restarted it.
  EXPECT_NE(audit.find("\"watch\":true"), std::string::npos) << context;
  EXPECT_NE(first.output.find("watches it kept open added"), std::string::npos) << context;
  EXPECT_EQ(json::parse(slurp(out / "reference" / "run-01" / "report.json")).at("verdict").as_string(), "pass");
  // --set changed the scenario of the reference run and of every plan: 8 pods, not tiny.yaml's 10.
  const std::string reference = slurp(out / "reference" / "scenario.yaml");
  EXPECT_EQ(reference.substr(0, reference.find('\n')), "# tiny.yaml with workload.phases[0].pods=8") << reference;
  EXPECT_NE(reference.find("      pods: 8\n"), std::string::npos) << reference;
  EXPECT_EQ(json::parse(slurp(out / "reference" / "run-01" / "report.json")).at("workload").at("podsCreated"), 8);

  const json::object report = json::parse(slurp(out / "explore.json")).as_object();
  const json::array& plans = report.at("plans").as_array();
  ASSERT_EQ(plans.size(), 3u) << context;
  EXPECT_EQ(report.at("verdicts").at("missing").to_number<int>(), 0) << context;
  EXPECT_GT(report.at("reference").at("writes").to_number<int>(), 0) << context;
  for (const auto& p : plans) {
    const std::string id(p.at("id").as_string());
    const std::string verdict(p.at("verdict").as_string());
    // kube-scheduler recovers from one failed write: pass, or inconclusive when the fault did not fire.
    EXPECT_TRUE(verdict == "pass" || verdict == "inconclusive" || verdict == "found") << id << ": " << verdict;
    EXPECT_EQ(p.at("fired").as_bool(), verdict != "inconclusive") << id;
    EXPECT_FALSE(slurp(out / "cells" / id / "run-01" / "logs" / "proxy-audit.jsonl").empty()) << id;
    // Every plan ran on the reference run's stack, reset in between.
    EXPECT_EQ(slurp(out / "cells" / id / "run-01" / "stack.txt"), "reused\n") << id;
    EXPECT_NE(slurp(out / "cells" / id / "scenario.yaml").find("      pods: 8\n"), std::string::npos) << id;
  }
  const std::string junit = slurp(out / "junit.xml");
  EXPECT_NE(junit.find("tests=\"3\""), std::string::npos) << junit;
  const std::string html = slurp(out / "explore.html");
  EXPECT_NE(html.find("<table id=\"plans\">"), std::string::npos);
  EXPECT_EQ(html.find("<script"), std::string::npos);
  EXPECT_NE(first.output.find("runs per hour"), std::string::npos) << context;

  // Again: every run has its report, so nothing runs.
  const CommandResult again = explore(out);
  EXPECT_EQ(again.exit_code, 0) << again.output;
  EXPECT_NE(again.output.find("1 of 1 runs already done"), std::string::npos) << again.output;
  EXPECT_EQ(again.output.find("soak: ["), std::string::npos) << again.output;
  if (!HasFailure()) fs::remove_all(out);
}

}  // namespace
