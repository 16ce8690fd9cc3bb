// The scenario reference (docs/scenarios.md) stays in step with the loader: its example loads, and
// it names every action type and invariant the code knows. (scripts/check-docs, run by make lint,
// checks every key and each action's keys.)
#include <gtest/gtest.h>

#include "faultline/harness/schema/scenario.hpp"
#include "files.hpp"

namespace faultline::harness::schema {
namespace {

using namespace faults;

std::string reference() { return faultline::testing::slurp(std::string(FAULTLINE_SOURCE_DIR) + "/docs/scenarios.md"); }

TEST(ScenarioReference, ExampleLoads) {
  std::string section = reference();
  auto begin = section.find("```yaml\n");
  ASSERT_NE(begin, std::string::npos);
  begin += 8;
  auto end = section.find("```", begin);
  auto scenario = load_scenario_text(section.substr(begin, end - begin), "docs/scenarios.md");
  EXPECT_EQ(scenario->metadata.name, "yunikorn-3355-outage");
  EXPECT_EQ(scenario->faults.size(), 1u);
}

TEST(ScenarioReference, DocumentsEveryActionType) {
  std::string section = reference();
  for (auto type : known_action_types())
    EXPECT_NE(section.find("| `" + std::string(type) + "` |"), std::string::npos) << type;
}

TEST(ScenarioReference, DocumentsEveryInvariant) {
  std::string section = reference();
  for (const auto& spec : invariant_specs)
    EXPECT_NE(section.find("`" + std::string(spec.name) + "`"), std::string::npos) << spec.name;
}

}  // namespace
}  // namespace faultline::harness::schema
