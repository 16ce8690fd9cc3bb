// Matrix files (faultline/faults/matrix.hpp): expansion into one scenario per cell, and the exact
// file:line:column errors of bad matrix files.
#include "faultline/harness/schema/matrix.hpp"

#include <gtest/gtest.h>

#include <fstream>

#include "faultline/harness/schema/yaml_edit.hpp"
#include "files.hpp"
#include "scenario_helpers.hpp"

namespace faultline::harness::schema {
namespace {

using namespace faults;

const std::filesystem::path kShipped = std::filesystem::path(FAULTLINE_SOURCE_DIR) / "harness/scenarios";

// A small base scenario next to the matrix (base.yaml), with a quoted string that must stay quoted.
const char* const kBase = R"(apiVersion: faultline/v1
kind: Scenario
metadata: {name: base}
workload:
  nodes: {count: 5, capacity: {cpu: "32", memory: 256Gi, pods: "110"}}
  phases:
    - name: burst
      pods: 100
      rate: 50
      template: {labels: {queue: root.default}}
faults:
  - name: outage
    when: {afterMatches: 30, of: {verbs: [create], resources: [pods/binding]}, for: 10s, limit: 1}
    action: {type: outage, mode: reset}
checks:
  expect: [pods-bound]
)";

class MatrixTest : public ::testing::Test {
 protected:
  void SetUp() override { std::ofstream(dir_.path() / "base.yaml") << kBase; }

  Matrix load(const std::string& text) { return load_matrix_text(text, "m.yaml", dir_.path(), kShipped); }
  // The errors, with the base scenario's path written BASE.
  std::vector<std::string> errors(const std::string& text) {
    std::vector<std::string> out = faults::testing::load_errors([&] { load(text); });
    const std::string base = (dir_.path() / "base.yaml").string();
    for (auto& e : out)
      for (auto at = e.find(base); at != std::string::npos; at = e.find(base)) e.replace(at, base.size(), "BASE");
    return out;
  }

  faultline::testing::TempDir dir_{"matrix-test"};
};

std::string matrix(const std::string& rest) {
  return "apiVersion: faultline/v1\nkind: Matrix\nmetadata: {name: m}\nscenario: base.yaml\nscheduler: yunikorn\n" +
         rest;
}

TEST_F(MatrixTest, TwoAxesExpandIntoOneScenarioPerCellFirstAxisSlowest) {
  Matrix m =
      load(matrix("runs: 2\nnodes: 7\npods: 40\naxes:\n"
                  "  faults[0].when.afterMatches: [10, 25]\n"
                  "  faults[0].when.for: [2s, 10s, 30s]\n"));
  EXPECT_EQ(m.runs, 2u);
  EXPECT_EQ(m.scenario_file, dir_.path() / "base.yaml");
  ASSERT_EQ(m.cells.size(), 6u);
  ASSERT_EQ(m.axes.size(), 2u);
  EXPECT_EQ(m.axes[1].values, (std::vector<std::string>{"2s", "10s", "30s"}));
  const MatrixCell& c = m.cells[4];  // afterMatches 25, for 10s
  EXPECT_EQ(c.id, "c005");
  EXPECT_EQ(c.values, (std::vector<std::pair<std::string, std::string>>{{"faults[0].when.afterMatches", "25"},
                                                                        {"faults[0].when.for", "10s"}}));
  EXPECT_EQ(c.scenario->faults[0].when.trigger->after_matches, 25u);
  EXPECT_EQ(c.scenario->faults[0].when.for_, std::chrono::seconds(10));
  EXPECT_EQ(c.scenario->workload->nodes.count, 7u);
  EXPECT_EQ(c.scenario->workload->phases[0].pods, 40u);
  EXPECT_EQ(c.scenario->workload->nodes.capacity.at("cpu"), "32");
  EXPECT_NE(c.scenario_text.find("cpu: \"32\""), std::string::npos) << c.scenario_text;
  EXPECT_EQ(c.expected_verdict, "reproduced");
  // Each cell's text loads on its own, as the harness will load it.
  for (const auto& cell : m.cells) EXPECT_NO_THROW(load_scenario_text(cell.scenario_text, "cell"));
}

TEST_F(MatrixTest, LinkedPathsARangeAClusterAxisAndAShippedScenario) {
  Matrix m = load_matrix_text(
      "apiVersion: faultline/v1\nkind: Matrix\nmetadata: {name: w}\nscenario: yunikorn-3355-outage\n"
      "scheduler: yunikorn\nyunikorn: v1.9.0\ncluster: {maxMutatingRequestsInflight: 200}\naxes:\n"
      "  faults[0].when.afterMatches, faults[1].when.afterMatches: [100, 300]\n"
      "  seed: 1..3\n  cluster.maxRequestsInflight: [400, 3000]\n",
      "w.yaml", dir_.path(), kShipped);
  EXPECT_EQ(m.scenario_file, kShipped / "yunikorn-3355-outage.yaml");
  EXPECT_EQ(m.yunikorn, "v1.9.0");
  ASSERT_EQ(m.cells.size(), 12u);
  const MatrixCell& last = m.cells.back();
  EXPECT_EQ(last.scenario->faults[0].when.trigger->after_matches, 300u);
  EXPECT_EQ(last.scenario->faults[1].when.trigger->after_matches, 300u);
  EXPECT_EQ(last.scenario->seed, 3u);
  EXPECT_EQ(last.cluster.max_requests_inflight, 3000u);
  EXPECT_EQ(last.cluster.max_mutating_requests_inflight, 200u);
  EXPECT_EQ(m.cells[0].cluster.max_requests_inflight, 400u);
}

TEST_F(MatrixTest, SetWritesTheSameValuesIntoEveryCell) {
  Matrix m = load(matrix("set: {checks.settle: 45s, seed: 9}\naxes:\n  faults[0].when.for: [2s, 10s]\n"));
  ASSERT_EQ(m.cells.size(), 2u);
  for (const auto& cell : m.cells) {
    EXPECT_EQ(cell.scenario->checks.settle, std::chrono::seconds(45));
    EXPECT_EQ(cell.scenario->seed, 9u);
  }
  EXPECT_EQ(m.cells[1].scenario->faults[0].when.for_, std::chrono::seconds(10));
  ASSERT_EQ(m.axes.size(), 1u);  // a constant is not an axis: the report charts the axes only
}

// Every matrix shipped in harness/matrices loads and expands (what `make soak MATRIX=` will run).
TEST(ShippedMatrices, EveryOneLoads) {
  const auto dir = std::filesystem::path(FAULTLINE_SOURCE_DIR) / "harness/matrices";
  std::size_t files = 0;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    if (entry.path().extension() != ".yaml") continue;
    ++files;
    Matrix m;
    EXPECT_NO_THROW(m = load_matrix_file(entry.path(), kShipped)) << entry.path();
    EXPECT_FALSE(m.cells.empty()) << entry.path();
  }
  EXPECT_GE(files, 4u);  // the two reuse checks and the two 3355 windows
}

TEST_F(MatrixTest, NoAxesIsOneCellAControlExpectsPass) {
  Matrix m = load_matrix_text(
      "apiVersion: faultline/v1\nkind: Matrix\nmetadata: {name: c}\nscenario: yunikorn-3355-control\n"
      "scheduler: yunikorn\n",
      "c.yaml", dir_.path(), kShipped);
  ASSERT_EQ(m.cells.size(), 1u);
  EXPECT_EQ(m.cells[0].expected_verdict, "pass");
}

struct BadMatrix {
  const char* name;
  std::string rest;  // after the header lines (the first five lines)
  std::vector<std::string> errors;
};

std::ostream& operator<<(std::ostream& out, const BadMatrix& bad) { return out << bad.name; }

class BadMatrixTest : public MatrixTest, public ::testing::WithParamInterface<BadMatrix> {};

TEST_P(BadMatrixTest, ReportsExactlyTheseErrors) { EXPECT_EQ(errors(matrix(GetParam().rest)), GetParam().errors); }

const BadMatrix bad_matrices[] = {
    {"PathNotInScenario",
     "axes:\n  faults[3].when.afterMatches: [1]\n",
     {"m.yaml:7:3: axes.faults[3].when.afterMatches: faults[3] does not exist: faults has 1 item"}},
    {"ParentKeyMissing",
     "axes:\n  workload.nope.rate: [1]\n",
     {"m.yaml:7:3: axes.workload.nope.rate: workload.nope does not exist in the scenario"}},
    {"TypoInTheLastKeyIsAnUnknownKey",
     "axes:\n  workload.phases[0].rat: [1]\n",
     {"m.yaml:7:28: axes.workload.phases[0].rat[0]: with this value the scenario is invalid: " + std::string("") +
      "BASE:7:7: workload.phases[0].rat: unknown key, did you mean \"rate\"? (allowed: concurrency, "
      "name, pods, rate, start, template)"}},
    {"PathIsAMapping",
     "axes:\n  faults[0].when: [1]\n",
     {"m.yaml:7:3: axes.faults[0].when: faults[0].when is a mapping in the scenario, not a single value"}},
    {"MalformedPath",
     "axes:\n  faults[x].when: [1]\n",
     {"m.yaml:7:3: axes.faults[x].when: invalid path \"faults[x].when\": \"[x]\" is not a list index (write keys "
      "and list indexes: faults[0].when.afterMatches)"}},
    {"ValueOfTheWrongKindForTheScenario",
     "axes:\n  faults[0].when.afterMatches: [10, 2s]\n",
     {"m.yaml:7:37: axes.faults[0].when.afterMatches[1]: with this value the scenario is invalid: BASE:13:26: "
      "faults[0].when.afterMatches: expected a whole number, got \"2s\""}},
    {"ValueIsAMapping",
     "axes:\n  faults[0].when.for:\n    - {a: 1}\n",
     {"m.yaml:8:7: axes.faults[0].when.for[0]: expected a single value, got a mapping"}},
    {"EmptyAxis", "axes:\n  seed: []\n", {"m.yaml:7:9: axes.seed: the axis has no values"}},
    {"AxisNotAList",
     "axes:\n  seed: 5\n",
     {"m.yaml:7:9: axes.seed: expected a list of values or a range A..B of whole numbers, got \"5\""}},
    {"EmptyRange",
     "axes:\n  seed: 5..1\n",
     {"m.yaml:7:9: axes.seed: the range 5..1 is empty (write A..B with A <= B)"}},
    {"HugeRange",
     "axes:\n  seed: 0..18446744073709551615\n",
     {"m.yaml:7:9: axes.seed: the range 0..18446744073709551615 has 18446744073709551615 + 1 values; the maximum is "
      "1000"}},
    {"TooManyCells",
     "axes:\n  seed: 1..40\n  workload.phases[0].pods: 1..30\n",
     {"m.yaml:7:3: axes: more than 1000 cells (40 x 30); the maximum is 1000"}},
    {"TooManyRuns",
     "runs: 20\naxes:\n  seed: 1..600\n",
     {"m.yaml:8:3: axes: 600 cells x 20 runs = 12000 runs; the maximum is 10000"}},
    {"RunsPerCellBound", "runs: 101\n", {"m.yaml:6:7: runs: at most 100 runs per cell, got 101"}},
    {"DuplicateValue", "axes:\n  seed: [1, 2, 1]\n", {"m.yaml:7:16: axes.seed[2]: duplicate value \"1\""}},
    {"PathSetByTwoAxes",
     "axes:\n  seed: [1]\n  workload.phases[0].pods, seed: [5]\n",
     {"m.yaml:8:3: axes.workload.phases[0].pods, seed: path seed is already set by another axis"}},
    {"UnknownClusterSetting",
     "axes:\n  cluster.maxInflight: [1]\n",
     {"m.yaml:7:3: axes.cluster.maxInflight: unknown cluster setting \"maxInflight\" (known: maxRequestsInflight, "
      "maxMutatingRequestsInflight, exemptScheduler)"}},
    {"ClusterValueOfTheWrongKind",
     "axes:\n  cluster.maxRequestsInflight: [400, lots]\n",
     {"m.yaml:7:38: axes.cluster.maxRequestsInflight[1]: expected a whole number greater than 0, got \"lots\""}},
    {"ClusterSectionValue",
     "cluster: {exemptScheduler: maybe}\n",
     {"m.yaml:6:28: cluster.exemptScheduler: expected true or false, got \"maybe\""}},
    {"TooManyAxes",
     "axes: {a: [1], b: [1], c: [1], d: [1], e: [1], f: [1], g: [1], h: [1], i: [1]}\n",
     {"m.yaml:6:7: axes: 9 axes; the maximum is 8"}},
    {"PodsMustBePositive", "pods: 0\n", {"m.yaml:6:7: pods: must be greater than 0, got 0"}},
    {"UnknownKey",
     "axis: {seed: [1]}\n",
     {"m.yaml:6:1: axis: unknown key, did you mean \"axes\"? (allowed: apiVersion, axes, cluster, kind, metadata, "
      "nodes, pods, runs, scenario, scheduler, set, yunikorn)"}},
    {"SetPathAlsoAnAxis",
     "set: {checks.settle: 45s}\naxes:\n  checks.settle: [1s]\n",
     {"m.yaml:8:3: axes.checks.settle: path checks.settle is also under set: (a constant of every cell)"}},
    {"SetClusterSetting",
     "set: {cluster.maxRequestsInflight: 400}\n",
     {"m.yaml:6:7: set.cluster.maxRequestsInflight: cluster settings go under cluster:, not set:"}},
    {"SetValueTheScenarioRejects",
     "set: {checks.settle: soon}\n",
     {"m.yaml:6:22: set.checks.settle: with this value the scenario is invalid: BASE:16:11: checks.settle: invalid "
      "duration \"soon\" (write a number and a unit: 250ms, 10s, 2m, 1h)"}},
    {"SetNotAMapping", "set: [1]\n", {"m.yaml:6:6: set: expected a mapping of paths to values, got a list"}},
    {"SetPathNotInScenario",
     "set: {workload.nope.rate: 1}\n",
     {"m.yaml:6:7: set.workload.nope.rate: workload.nope does not exist in the scenario"}},
    {"SetValueIsAList", "set: {seed: [1, 2]}\n", {"m.yaml:6:13: set.seed: expected a single value, got a list"}},
};

INSTANTIATE_TEST_SUITE_P(Matrix, BadMatrixTest, ::testing::ValuesIn(bad_matrices),
                         [](const auto& param_info) { return std::string(param_info.param.name); });

TEST_F(MatrixTest, MissingScenarioAndABuildWithoutYunikornAreReported) {
  auto errs = errors(
      "apiVersion: faultline/v1\nkind: Matrix\nmetadata: {name: m}\nscenario: nowhere\nscheduler: kube-scheduler\n"
      "yunikorn: v1.9.0\n");
  ASSERT_EQ(errs.size(), 2u);
  EXPECT_EQ(errs[0], "m.yaml:6:11: yunikorn: a YuniKorn build needs scheduler: yunikorn");
  EXPECT_TRUE(errs[1].starts_with("m.yaml:4:11: scenario: no scenario \"nowhere\": not a file relative to "))
      << errs[1];
  // The list names every shipped scenario, in name order (more get shipped over time).
  EXPECT_NE(errs[1].find(", and not a shipped scenario ("), std::string::npos) << errs[1];
  EXPECT_NE(errs[1].find("kube-scheduler-3355-outage, no-faults, "), std::string::npos) << errs[1];
  EXPECT_NE(errs[1].find(", yunikorn-3355-outage, "), std::string::npos) << errs[1];
}

TEST_F(MatrixTest, WrongKindAndMissingKeys) {
  EXPECT_EQ(
      errors("apiVersion: faultline/v1\nkind: Scenario\n"),
      (std::vector<std::string>{
          "m.yaml:2:7: kind: must be \"Matrix\", got \"Scenario\"", "m.yaml:1:1: metadata: required key is missing",
          "m.yaml:1:1: scheduler: required key is missing", "m.yaml:1:1: scenario: required key is missing"}));
}

TEST(YamlEdit, ReplacesOneValueAndKeepsEverythingElseAsWritten) {
  const std::string text = "a: {b: \"x, y\", c: 1}  # note\nd:\n  - e: 'it''s'\n    f: 2\n";
  EXPECT_EQ(with_value_at(text, "a.c", "5"), "a: {b: \"x, y\", c: 5}  # note\nd:\n  - e: 'it''s'\n    f: 2\n");
  EXPECT_EQ(with_value_at(text, "a.b", "z"), "a: {b: z, c: 1}  # note\nd:\n  - e: 'it''s'\n    f: 2\n");
  EXPECT_EQ(with_value_at(text, "d[0].e", "\"q\""), "a: {b: \"x, y\", c: 1}  # note\nd:\n  - e: \"q\"\n    f: 2\n");
  // A missing last key is added to its mapping, in its style.
  EXPECT_EQ(with_value_at(text, "d[0].g", "3"),
            "a: {b: \"x, y\", c: 1}  # note\nd:\n  - g: 3\n    e: 'it''s'\n    f: 2\n");
  EXPECT_EQ(with_value_at(text, "a.h", "4"), "a: {h: 4, b: \"x, y\", c: 1}  # note\nd:\n  - e: 'it''s'\n    f: 2\n");
  EXPECT_THROW(with_value_at("a: |\n  text\n", "a", "1"), YamlEditError);
  EXPECT_THROW(with_value_at(text, "d[1].e", "1"), YamlEditError);
}

}  // namespace
}  // namespace faultline::harness::schema
