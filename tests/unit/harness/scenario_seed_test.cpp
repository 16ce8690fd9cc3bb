// `faultline-harness run --seed N`: the scenario the proxy is sent carries seed N and is otherwise
// the scenario of the file.
#include "faultline/harness/scenario_seed.hpp"

#include <gtest/gtest.h>

#include <boost/json/object.hpp>
#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>

#include <string>

#include "faultline/faults/yaml_json.hpp"
#include "faultline/harness/schema/scenario.hpp"

namespace faultline::harness {
namespace {

namespace json = boost::json;

std::string shipped(const std::string& name) {
  return faults::read_scenario_file(std::string(FAULTLINE_SOURCE_DIR) + "/harness/scenarios/" + name);
}

// The scenario as JSON without its seed.
json::object without_seed(const std::string& yaml) {
  json::object o = json::parse(faults::yaml_to_json(yaml)).as_object();
  o.erase("seed");
  return o;
}

TEST(ScenarioSeed, TheOverrideReplacesTheFilesSeedAndNothingElse) {
  const std::string text = shipped("yunikorn-3355-outage.yaml");
  ASSERT_EQ(schema::load_scenario_text(text, "file")->seed, 3355u);
  const std::string seeded = scenario_with_seed(text, 42);
  EXPECT_EQ(schema::load_scenario_text(seeded, "seeded")->seed, 42u) << seeded;
  EXPECT_TRUE(without_seed(seeded) == without_seed(text)) << json::serialize(without_seed(seeded)) << "\n"
                                                          << json::serialize(without_seed(text));
}

TEST(ScenarioSeed, AScenarioWithoutASeedGetsOne) {
  const std::string text = R"(apiVersion: faultline/v1
kind: Scenario
metadata: {name: "007"}  # a quoted number stays a string
faults:
  - name: fail-binds
    match: {verbs: [create], resources: [pods/binding]}
    action: {type: respond, code: 500}
)";
  ASSERT_EQ(schema::load_scenario_text(text, "file")->seed, 0u);
  const std::string seeded = scenario_with_seed(text, 18446744073709551615u);
  const auto scenario = schema::load_scenario_text(seeded, "seeded");
  EXPECT_EQ(scenario->seed, 18446744073709551615u) << seeded;
  EXPECT_EQ(scenario->metadata.name, "007");
  EXPECT_TRUE(without_seed(seeded) == without_seed(text)) << json::serialize(without_seed(seeded)) << "\n"
                                                          << json::serialize(without_seed(text));
}

TEST(ScenarioSeed, FlowStyleAndQuotedSeedsAreReplacedInPlace) {
  const std::string flow = R"({apiVersion: faultline/v1, kind: Scenario, metadata: {name: flow}, faults: []})";
  const std::string seeded = scenario_with_seed(flow, 5);
  EXPECT_EQ(schema::load_scenario_text(seeded, "seeded")->seed, 5u) << seeded;
  EXPECT_TRUE(without_seed(seeded) == without_seed(flow)) << seeded;
  const std::string quoted =
      "apiVersion: faultline/v1\nkind: Scenario\nmetadata: {name: q}\nseed: \"12\"  # why\nfaults: []\n";
  EXPECT_EQ(scenario_with_seed(quoted, 99),
            "apiVersion: faultline/v1\nkind: Scenario\nmetadata: {name: q}\nseed: 99  # why\nfaults: []\n");
}

}  // namespace
}  // namespace faultline::harness
