#include <gtest/gtest.h>

#include "../scenario_helpers.hpp"

namespace faultline::faults {
namespace {

using namespace faultline::faults::testing;
using namespace std::chrono_literals;

Request pod_list(const std::string& query = "limit=500&resourceVersion=0") {
  return make_request("GET", "/api/v1/pods?" + query);
}

Request pod_create() { return make_request("POST", "/api/v1/namespaces/default/pods"); }

TEST(StaleReadAction, AFixedResourceVersionRewritesTheListToAnExactRead) {
  Plan plan =
      decide_once(scenario_with_action("{type: stale-read, resourceVersion: '123'}"),
                  pod_list("limit=500&resourceVersion=0&resourceVersionMatch=NotOlderThan&labelSelector=a%3Db"));
  ASSERT_TRUE(plan.fires());
  ASSERT_TRUE(std::holds_alternative<actions::StaleRead>(*plan.action));
  EXPECT_EQ(plan.stale_resource_version, "123");
  EXPECT_EQ(plan.stale_target,
            "/api/v1/pods?limit=500&labelSelector=a%3Db&resourceVersion=123&resourceVersionMatch=Exact");
  EXPECT_TRUE(plan.record_resource_version.empty());
}

TEST(StaleReadAction, ANumberInYamlIsTheSameResourceVersion) {
  Plan plan = decide_once(scenario_with_action("{type: stale-read, resourceVersion: 98765}"),
                          make_request("GET", "/apis/apps/v1/namespaces/x/daemonsets"));
  ASSERT_TRUE(plan.fires());
  EXPECT_EQ(plan.stale_target,
            "/apis/apps/v1/namespaces/x/daemonsets?resourceVersion=98765&resourceVersionMatch=Exact");
}

TEST(StaleReadAction, OnlyListsAreActedOnAndNotTheirContinuationPages) {
  auto scenario = scenario_with_action("{type: stale-read, resourceVersion: '5'}");
  EXPECT_FALSE(decide_once(scenario, make_request("GET", "/api/v1/namespaces/default/pods/p")).fires());
  EXPECT_FALSE(decide_once(scenario, pod_watch()).fires());
  EXPECT_FALSE(
      decide_once(
          scenario,
          make_request("GET", "/api/v1/pods?watch=true&sendInitialEvents=true&resourceVersionMatch=NotOlderThan"))
          .fires());
  EXPECT_FALSE(decide_once(scenario, pod_create()).fires());
  EXPECT_FALSE(decide_once(scenario, pod_list("limit=500&continue=abc")).fires());
  EXPECT_TRUE(decide_once(scenario, pod_list("limit=500&continue=")).fires());
}

TEST(StaleReadAction, TheResourceVersionIsAskedForWhenTheWindowOpensAndKeptForIt) {
  Engine engine(scenario_with_action("{type: stale-read}"));
  engine.arm(t0());
  // The first request after arming asks for it and is left alone by the rule.
  Plan first = engine.decide(pod_list(), t0());
  EXPECT_FALSE(first.fires());
  EXPECT_EQ(first.record_resource_version, std::vector<int>{0});
  // Until it is recorded, the rule fires without one: the request goes as it is.
  Plan unrecorded = engine.decide(pod_list(), t0() + 1ms);
  ASSERT_TRUE(unrecorded.fires());
  EXPECT_TRUE(unrecorded.stale_target.empty());
  EXPECT_TRUE(unrecorded.record_resource_version.empty());
  engine.record_resource_version(0, "4711");
  engine.record_resource_version(0, "9999");  // the window has one
  EXPECT_EQ(engine.recorded_resource_version(0), "4711");
  Plan stale = engine.decide(pod_list("resourceVersion=5000"), t0() + 2ms);
  ASSERT_TRUE(stale.fires());
  EXPECT_EQ(stale.stale_resource_version, "4711");
  EXPECT_EQ(stale.stale_target, "/api/v1/pods?resourceVersion=4711&resourceVersionMatch=Exact");
  // Arming again starts over: asked for again, the old one forgotten.
  engine.arm(t0() + 1s);
  EXPECT_EQ(engine.recorded_resource_version(0), "");
  EXPECT_EQ(engine.decide(pod_list(), t0() + 1s).record_resource_version, std::vector<int>{0});
}

TEST(StaleReadAction, ATriggerRecordsBeforeTheRequestThatCompletesIt) {
  Engine engine(scenario_with_faults(R"(- name: back
  match: {verbs: [list], resources: [pods]}
  when: {afterMatches: 2, of: {verbs: [create], resources: [pods]}}
  action: {type: stale-read})"));
  engine.arm(t0());
  EXPECT_TRUE(engine.decide(pod_create(), t0()).record_resource_version.empty());
  EXPECT_FALSE(engine.decide(pod_list(), t0()).fires());
  Plan second = engine.decide(pod_create(), t0() + 1ms);
  EXPECT_FALSE(second.fires());
  EXPECT_EQ(second.record_resource_version, std::vector<int>{0});
  engine.record_resource_version(0, "300");
  EXPECT_TRUE(engine.decide(pod_create(), t0() + 2ms).record_resource_version.empty());
  Plan stale = engine.decide(pod_list(), t0() + 3ms);
  ASSERT_TRUE(stale.fires());
  EXPECT_EQ(stale.stale_resource_version, "300");
}

TEST(StaleReadAction, ARecordForAnotherRuleOrBeforeItWasAskedIsIgnored) {
  Engine engine(scenario_with_faults(
      R"(- {name: fixed, match: {resources: [nodes]}, action: {type: stale-read, resourceVersion: '7'}}
- {name: later, when: {at: 10s}, action: {type: stale-read}})"));
  engine.arm(t0());
  engine.record_resource_version(0, "100");  // a fixed resourceVersion is never replaced
  engine.record_resource_version(1, "100");  // its window has not opened
  engine.record_resource_version(5, "100");  // no such rule
  EXPECT_EQ(engine.recorded_resource_version(0), "");
  EXPECT_EQ(engine.recorded_resource_version(1), "");
  EXPECT_TRUE(engine.decide(pod_list(), t0() + 9s).record_resource_version.empty());
  EXPECT_EQ(engine.decide(pod_list(), t0() + 10s).record_resource_version, std::vector<int>{1});
  engine.record_resource_version(1, "not-a-version");
  EXPECT_EQ(engine.recorded_resource_version(1), "");
  engine.record_resource_version(1, "200");
  EXPECT_EQ(engine.recorded_resource_version(1), "200");
}

TEST(StaleReadAction, ResourceVersionsAreTheApiserversDecimalStrings) {
  using actions::is_resource_version;
  EXPECT_TRUE(is_resource_version("1"));
  EXPECT_TRUE(is_resource_version("18446744073709551615"));
  EXPECT_FALSE(is_resource_version("18446744073709551616"));
  EXPECT_FALSE(is_resource_version("99999999999999999999"));
  EXPECT_FALSE(is_resource_version("0"));
  EXPECT_FALSE(is_resource_version("007"));
  EXPECT_FALSE(is_resource_version(""));
  EXPECT_FALSE(is_resource_version("12a"));
  EXPECT_FALSE(is_resource_version("-1"));
}

TEST(StaleReadAction, QueryParametersAreReadAsTheApiserverReadsThem) {
  using actions::query_parameter;
  EXPECT_EQ(query_parameter("/api/v1/pods?resourceVersion=12&limit=1", "resourceVersion"), "12");
  EXPECT_EQ(query_parameter("/api/v1/pods?continue=a%2Bb+c", "continue"), "a+b c");
  EXPECT_EQ(query_parameter("/api/v1/pods?resourceVersion", "resourceVersion"), "");
  EXPECT_EQ(query_parameter("/api/v1/pods?x=1", "resourceVersion"), std::nullopt);
  EXPECT_EQ(query_parameter("/api/v1/pods", "resourceVersion"), std::nullopt);
  EXPECT_EQ(actions::rewrite_to_exact("/api/v1/pods?&&resourceVersionMatch=Exact&%72esourceVersion=3", "9"),
            "/api/v1/pods?resourceVersion=9&resourceVersionMatch=Exact");
}

TEST(StaleReadAction, ABadResourceVersionIsRefusedWhereItIsWritten) {
  EXPECT_EQ(load_errors([] { scenario_with_action("{type: stale-read, resourceVersion: abc}"); }),
            std::vector<std::string>{
                "unit.yaml:6:60: faults[0].action.resourceVersion: must be a resourceVersion as kube-apiserver writes "
                "one (1 to 18446744073709551615, decimal, no leading zero), got \"abc\""});
  EXPECT_EQ(load_errors([] { scenario_with_action("{type: stale-read, resourceVersion: '0'}"); }),
            std::vector<std::string>{
                "unit.yaml:6:60: faults[0].action.resourceVersion: must be a resourceVersion as kube-apiserver writes "
                "one (1 to 18446744073709551615, decimal, no leading zero), got \"0\""});
  EXPECT_EQ(load_errors([] { scenario_with_action("{type: stale-read, resourceVersion: 18446744073709551616}"); }),
            std::vector<std::string>{
                "unit.yaml:6:60: faults[0].action.resourceVersion: must be a resourceVersion as kube-apiserver writes "
                "one (1 to 18446744073709551615, decimal, no leading zero), got \"18446744073709551616\""});
  EXPECT_EQ(
      load_errors([] { scenario_with_action("{type: stale-read, resourceVersion: [1]}"); }),
      std::vector<std::string>{"unit.yaml:6:60: faults[0].action.resourceVersion: expected a string, got a list"});
  EXPECT_EQ(
      load_errors([] { scenario_with_action("{type: stale-read, at: 1}"); }),
      std::vector<std::string>{"unit.yaml:6:43: faults[0].action.at: unknown key (allowed: resourceVersion, type)"});
}

TEST(StaleReadAction, RejectedWhenVerbsExcludeList) {
  EXPECT_EQ(load_errors(
                [] { scenario_with_faults("- {name: s, match: {verbs: [get, watch]}, action: {type: stale-read}}"); }),
            std::vector<std::string>{"unit.yaml:6:28: faults[0].match.verbs: stale-read acts on LIST requests, but "
                                     "verbs does not include list"});
  EXPECT_EQ(
      load_errors([] { scenario_with_faults("- {name: s, match: {verbs: [list, get]}, action: {type: stale-read}}"); }),
      std::vector<std::string>{"<loaded without errors>"});
}

}  // namespace
}  // namespace faultline::faults
