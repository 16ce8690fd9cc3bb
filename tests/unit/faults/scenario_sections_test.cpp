// The scenario loader of faultline::faults (the proxy's) and the sections it leaves to the harness:
// accepted unread and listed, while everything else of the document is checked as before; and a
// SectionReader sees each of those sections, its errors reported with the loader's own.
#include <gtest/gtest.h>

#include <string>
#include <utility>
#include <vector>

#include "faultline/faults/scenario_reader.hpp"
#include "scenario_helpers.hpp"

namespace faultline::faults {
namespace {

using testing::load_errors;

// Workload, componentFaults and checks that faultline-harness would refuse.
constexpr const char* kHarnessSectionsWrong = R"(apiVersion: faultline/v1
kind: Scenario
metadata: {name: sections}
workload: {nodes: {count: 0}, colour: blue}
faults:
  - {name: r, action: {type: reset}}
componentFaults: [{name: k, target: nowhere, action: kill}]
checks: {invariants: [no-such-invariant]}
)";

TEST(ScenarioSections, TheProxysLoaderListsTheHarnessSectionsUnread) {
  auto scenario = load_scenario_text(kHarnessSectionsWrong, "sections.yaml");
  ASSERT_EQ(scenario->faults.size(), 1u);
  EXPECT_EQ(scenario->faults[0].name, "r");
  EXPECT_EQ(scenario->unread_sections, (std::vector<std::string>{"workload", "componentFaults", "checks"}));

  auto faults_only = testing::scenario_with_action("{type: reset}");
  EXPECT_TRUE(faults_only->unread_sections.empty());
}

TEST(ScenarioSections, EverythingElseIsStillChecked) {
  EXPECT_EQ(
      load_errors([] {
        load_scenario_text(
            "apiVersion: faultline/v1\nkind: Scenario\nmetadata: {name: x}\nworkload: {}\n"
            "fault: []\n",
            "x.yaml");
      }),
      (std::vector<std::string>{
          R"(x.yaml:5:1: fault: unknown key, did you mean "faults"? (allowed: apiVersion, checks, componentFaults, faults, kind, metadata, seed, workload))"}));
}

// Records the sections it is handed and reports one error in each that is present.
class Recorder final : public SectionReader {
 public:
  void read(std::string_view key, const YAML::Node& node, detail::Errors& errors) override {
    seen.emplace_back(key, node.IsDefined());
    if (node.IsDefined()) errors.add(node.Mark(), key, "seen");
  }
  std::vector<std::pair<std::string, bool>> seen;
};

TEST(ScenarioSections, ASectionReaderSeesEachSectionAndItsErrorsJoinTheLoadersInDocumentOrder) {
  Scenario scenario;
  Recorder recorder;
  const std::string text = R"(apiVersion: faultline/v1
kind: Scenario
metadata: {name: sections}
workload: {nodes: {count: 1}}
faults:
  - {name: r, when: {probability: 2}, action: {type: reset}}
checks: {}
)";
  EXPECT_EQ(load_errors([&] { load_scenario_text(text, "s.yaml", scenario, recorder); }),
            (std::vector<std::string>{"s.yaml:4:11: workload: seen",
                                      "s.yaml:6:35: faults[0].when.probability: must be between 0 and 1, got 2",
                                      "s.yaml:7:9: checks: seen"}));
  EXPECT_EQ(recorder.seen, (std::vector<std::pair<std::string, bool>>{
                               {"workload", true}, {"componentFaults", false}, {"checks", true}}));
  EXPECT_TRUE(scenario.unread_sections.empty());
}

}  // namespace
}  // namespace faultline::faults
