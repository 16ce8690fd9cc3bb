// The scenario keys of a long soak: when.repeat, a churn step, checks.quietAfter and checks.resources.
#include <gtest/gtest.h>

#include "faultline/harness/schema/scenario.hpp"
#include "scenario_helpers.hpp"

namespace faultline::harness::schema {
namespace {

using namespace faults;

using namespace std::chrono_literals;

std::shared_ptr<const Scenario> load(const std::string& body) {
  return load_scenario_text("apiVersion: faultline/v1\nkind: Scenario\nmetadata: {name: unit}\n" + body, "unit.yaml");
}

TEST(SoakScenario, RepeatIsParsed) {
  auto s = load(
      "faults:\n- {name: r, when: {at: 1m, for: 10s, repeat: 5m, limit: 1}, action: {type: outage, mode: reset}}\n");
  ASSERT_TRUE(s->faults[0].when.repeat.has_value());
  EXPECT_EQ(*s->faults[0].when.repeat, 5min);
  EXPECT_EQ(*s->faults[0].when.for_, 10s);
}

TEST(SoakScenario, AChurnStepCreatesRateTimesForPods) {
  auto s = load(R"(workload:
  nodes: {count: 3}
  phases:
    - {name: churn, churn: {rate: 5/s, lifetime: 30s, for: 2h}, concurrency: 2, template: {labels: {a: b}}}
    - {name: slow, churn: {rate: 0.5, lifetime: 1m, for: 15s}}
)");
  const Phase& churn = s->workload->phases[0];
  ASSERT_TRUE(churn.churn.has_value());
  EXPECT_DOUBLE_EQ(churn.churn->rate, 5.0);
  EXPECT_EQ(churn.churn->lifetime, 30s);
  EXPECT_EQ(churn.churn->for_, 2h);
  EXPECT_EQ(churn.pods, 36000u);
  EXPECT_DOUBLE_EQ(*churn.rate, 5.0);
  EXPECT_EQ(churn.concurrency, 2u);
  EXPECT_EQ(churn.pod_template.labels.at("a"), "b");
  EXPECT_EQ(s->workload->phases[1].pods, 8u);  // 7.5 rounded up
}

TEST(SoakScenario, ChecksKeys) {
  auto s = load("checks: {quietAfter: 30s, resources: {every: 5s, rssKiBPerMinute: 256, fdsPerMinute: 0.25}}\n");
  EXPECT_EQ(*s->checks.quiet_after, 30s);
  ASSERT_TRUE(s->checks.resources.has_value());
  EXPECT_EQ(s->checks.resources->every, 5s);
  EXPECT_DOUBLE_EQ(s->checks.resources->rss_kib_per_minute, 256);
  EXPECT_DOUBLE_EQ(s->checks.resources->fds_per_minute, 0.25);
  auto defaults = load("checks: {resources: {}}\n");
  EXPECT_EQ(defaults->checks.resources->every, 10s);
  EXPECT_DOUBLE_EQ(defaults->checks.resources->rss_kib_per_minute, 1024);
  EXPECT_DOUBLE_EQ(defaults->checks.resources->fds_per_minute, 1);
  EXPECT_FALSE(defaults->checks.quiet_after.has_value());
}

TEST(SoakScenario, ShippedChurnSoakLoads) {
  auto s = load_scenario_file(std::string(FAULTLINE_SOURCE_DIR) + "/harness/scenarios/churn-soak.yaml");
  ASSERT_TRUE(s->workload.has_value());
  ASSERT_TRUE(s->workload->phases[0].churn.has_value());
  EXPECT_EQ(s->workload->phases[0].pods, 36000u);
  for (const auto& rule : s->faults) EXPECT_TRUE(rule.when.repeat.has_value()) << rule.name;
}

}  // namespace
}  // namespace faultline::harness::schema
