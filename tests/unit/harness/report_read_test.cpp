// The one reader of a run's report.json (report_read.hpp) on reports real runs wrote: a violation
// the scenario expects and one it does not, fault rules that never fired, the first fault counted
// from the arming; and the sweep's and exploration's readers agreeing with it.
#include "faultline/harness/report_read.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <string>

#include "faultline/harness/explore_minimize.hpp"
#include "faultline/harness/explore_report.hpp"
#include "faultline/harness/sweep.hpp"
#include "files.hpp"

namespace faultline::harness {
namespace {

std::string data(const std::string& name) {
  return faultline::testing::slurp(std::string(FAULTLINE_TEST_DATA_DIR) + "/harness/explore/" + name);
}

bool has(const std::vector<std::string>& v, const std::string& s) {
  return std::find(v.begin(), v.end(), s) != v.end();
}

// A run that reproduced: its one violation is the one checks.expect names.
TEST(RunReport, AnExpectedViolationIsNotAViolation) {
  const RunReport r = read_run_report(data("min-report-reproduced.json"));
  EXPECT_EQ(r.malformed, "");
  EXPECT_TRUE(r.object);
  EXPECT_EQ(r.verdict, "reproduced");
  EXPECT_TRUE(r.violated.empty());
  EXPECT_EQ(r.expected_violated, std::vector<std::string>{"one-daemon-pod-per-node"});
  ASSERT_EQ(r.checks.size(), 2u);
  EXPECT_EQ(r.checks[0].expected, "violated");
  EXPECT_EQ(r.faults[0].rule, "stale-pod-relist");
  EXPECT_EQ(r.faults.size(), 4u);
  EXPECT_TRUE(r.unfired.empty());
  EXPECT_FALSE(r.never_fired);
  EXPECT_TRUE(r.all_fired());
  // armed 13:30:59.852, the earliest window 13:31:14.857 (15.670 s from `started`).
  ASSERT_TRUE(r.first_fault_seconds.has_value());
  EXPECT_NEAR(*r.first_fault_seconds, 15.005, 0.0005);
}

// A run that failed: pods-bound violated, which the scenario does not expect.
TEST(RunReport, AnUnexpectedViolation) {
  const RunReport r = read_run_report(data("run-report-fail.json"));
  EXPECT_EQ(r.malformed, "");
  EXPECT_EQ(r.verdict, "fail");
  EXPECT_EQ(r.error, "");
  EXPECT_EQ(r.violated, std::vector<std::string>{"pods-bound"});
  EXPECT_TRUE(r.expected_violated.empty());
  EXPECT_TRUE(r.all_fired());
  ASSERT_TRUE(r.first_fault_seconds.has_value());
  EXPECT_NEAR(*r.first_fault_seconds, 2.751, 0.0005);  // 18:01:30.865 - armed 18:01:28.114
  EXPECT_EQ(r.stranded, 1.0);
  EXPECT_EQ(r.phantom, 0.0);
  EXPECT_NEAR(r.seconds.value_or(0), 69.1425, 0.0001);
}

// A run that ended in error: two of its 17 rules fired, 15 never did.
TEST(RunReport, RulesThatNeverFired) {
  const RunReport r = read_run_report(data("run-report-never-fired.json"));
  EXPECT_EQ(r.malformed, "");
  EXPECT_EQ(r.verdict, "error");
  EXPECT_TRUE(r.never_fired);
  EXPECT_FALSE(r.all_fired());
  EXPECT_EQ(r.faults.size(), 17u);
  EXPECT_EQ(r.unfired.size(), 15u);
  EXPECT_EQ(r.unfired.front(), "relist-configmaps");
  EXPECT_FALSE(has(r.unfired, "outage"));
  EXPECT_FALSE(has(r.unfired, "relist-pods"));
  EXPECT_TRUE(r.violated.empty());
  ASSERT_TRUE(r.first_fault_seconds.has_value());  // the rules that fired did inject
  EXPECT_NEAR(*r.first_fault_seconds, 2.663, 0.0005);
}

TEST(RunReport, MalformedTextsSayWhy) {
  EXPECT_FALSE(read_run_report("{").object);
  EXPECT_EQ(read_run_report("{").malformed.rfind("not JSON: ", 0), 0u);
  EXPECT_EQ(read_run_report("[]").malformed, "not a JSON object");
  EXPECT_EQ(read_run_report(R"({"checks": []})").malformed, "\"verdict\" missing or not a string");
  EXPECT_EQ(read_run_report(R"({"verdict": "maybe", "checks": []})").malformed,
            "\"verdict\": unknown verdict \"maybe\"");
  EXPECT_EQ(read_run_report(R"({"verdict": "pass"})").malformed, "\"checks\" missing or not a list");
  EXPECT_EQ(read_run_report(R"({"verdict": "pass", "checks": [1]})").malformed, "\"checks\": an item is not an object");
  const RunReport unnamed = read_run_report(R"({"verdict": "fail", "checks": [{"status": "violated"}]})");
  EXPECT_EQ(unnamed.malformed, "\"checks\": an item without a \"name\" or \"status\" string");
  EXPECT_TRUE(unnamed.object);
  EXPECT_EQ(unnamed.verdict, "fail");
  EXPECT_EQ(read_run_report(std::string(max_report_bytes + 1, ' ')).malformed,
            "larger than " + std::to_string(max_report_bytes) + " bytes");
  // Never armed: no first fault, whatever the windows say.
  const RunReport unarmed = read_run_report(
      R"({"verdict": "pass", "checks": [], "started": "2026-12-07T10:00:00.000Z",
          "faultWindows": [{"rule": "r", "first": "2026-12-07T10:00:01.000Z"}]})");
  EXPECT_EQ(unarmed.malformed, "");
  EXPECT_FALSE(unarmed.first_fault_seconds.has_value());
}

// The sweep's, the exploration's and the minimizer's views of one report are the reader's.
TEST(RunReport, EveryReaderAgrees) {
  const std::string text = data("min-report-reproduced.json");
  const RunReport r = read_run_report(text);
  const SweepRun sweep = parse_run_report(text, 1);
  const explore::PlanRun plan = explore::classify_run(text, 1);
  const explore::RunOutcome outcome = explore::outcome_of_report(text);
  EXPECT_EQ(sweep.first_fault_seconds, r.first_fault_seconds);
  EXPECT_EQ(plan.first_fault, r.first_fault_seconds);
  EXPECT_EQ(plan.violated, r.violated);
  EXPECT_EQ(outcome.violated, std::vector<std::string>{"one-daemon-pod-per-node"});  // expected or not
  EXPECT_EQ(explore::classify_run(data("run-report-never-fired.json"), 1).outcome, "inconclusive");
  EXPECT_FALSE(explore::classify_run(data("run-report-never-fired.json"), 1).fired);
  EXPECT_EQ(explore::classify_run(data("run-report-fail.json"), 1).outcome, "found");
}

}  // namespace
}  // namespace faultline::harness
