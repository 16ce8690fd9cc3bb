// The README's scenario section stays in step with the loader: its example loads, and it names
// every action type and invariant the code knows.
#include <gtest/gtest.h>

#include "faultline/faults/scenario.hpp"
#include "files.hpp"

namespace faultline::faults {
namespace {

std::string faults_section() {
  const std::string readme = faultline::testing::slurp(std::string(FAULTLINE_SOURCE_DIR) + "/README.md");
  auto begin = readme.find("<!-- BEGIN faults -->");
  auto end = readme.find("<!-- END faults -->");
  if (begin == std::string::npos || end == std::string::npos) return "";
  return readme.substr(begin, end - begin);
}

TEST(Readme, ScenarioExampleLoads) {
  std::string section = faults_section();
  auto begin = section.find("```yaml\n");
  ASSERT_NE(begin, std::string::npos);
  begin += 8;
  auto end = section.find("```", begin);
  auto scenario = load_scenario_text(section.substr(begin, end - begin), "README.md");
  EXPECT_EQ(scenario->metadata.name, "yunikorn-3355-outage");
  EXPECT_EQ(scenario->faults.size(), 1u);
}

TEST(Readme, DocumentsEveryActionType) {
  std::string section = faults_section();
  for (auto type : known_action_types())
    EXPECT_NE(section.find("| `" + std::string(type) + "` |"), std::string::npos) << type;
}

TEST(Readme, DocumentsEveryInvariant) {
  std::string section = faults_section();
  for (const auto& spec : invariant_specs)
    EXPECT_NE(section.find("`" + std::string(spec.name) + "`"), std::string::npos) << spec.name;
}

}  // namespace
}  // namespace faultline::faults
