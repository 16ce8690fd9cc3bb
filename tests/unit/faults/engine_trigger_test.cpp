// afterMatches triggers: the window opens once N requests matching `of` have gone by.
#include <gtest/gtest.h>

#include "scenario_helpers.hpp"

namespace faultline::faults {
namespace {

using namespace faultline::faults::testing;
using namespace std::chrono_literals;

const char* outage_after_three_binds = R"(
- name: after-binds
  match: {}
  when: {afterMatches: 3, of: {verbs: [create], resources: [pods/binding]}, for: 10s}
  action: {type: reset})";

TEST(Trigger, OpensAfterNMatchingRequestsAndAppliesToEverythingTheRuleMatches) {
  Engine engine(scenario_with_faults(outage_after_three_binds));
  engine.arm(t0());
  Request nodes = make_request("GET", "/api/v1/nodes");
  EXPECT_FALSE(engine.decide(nodes, t0()).fires());  // does not count towards the trigger
  EXPECT_FALSE(engine.decide(bind_request("a"), t0() + 1s).fires());
  EXPECT_FALSE(engine.decide(bind_request("b"), t0() + 2s).fires());
  EXPECT_FALSE(engine.counters()[0].window_opened);
  EXPECT_FALSE(engine.decide(bind_request("c"), t0() + 3s).fires());  // the 3rd is seen, not faulted
  EXPECT_TRUE(engine.counters()[0].window_opened);
  EXPECT_TRUE(engine.decide(nodes, t0() + 3s).fires());
  EXPECT_TRUE(engine.decide(bind_request("d"), t0() + 12s).fires());
  EXPECT_FALSE(engine.decide(bind_request("e"), t0() + 13s).fires());  // for: 10s from the trigger
}

TEST(Trigger, OfDefaultsToTheRulesOwnMatch) {
  Engine engine(scenario_with_faults(
      "- {name: r, match: {resources: [pods/binding]}, when: {afterMatches: 2}, action: {type: reset}}"));
  engine.arm(t0());
  EXPECT_FALSE(engine.decide(make_request("GET", "/api/v1/nodes"), t0()).fires());
  EXPECT_FALSE(engine.decide(bind_request(), t0()).fires());
  EXPECT_FALSE(engine.decide(bind_request(), t0()).fires());
  EXPECT_TRUE(engine.decide(bind_request(), t0()).fires());
  EXPECT_TRUE(engine.decide(bind_request(), t0() + 1h).fires());  // no `for`: open for good
}

TEST(Trigger, CountingStartsAtAt) {
  Engine engine(scenario_with_faults("- {name: r, when: {at: 5s, afterMatches: 1}, action: {type: reset}}"));
  engine.arm(t0());
  EXPECT_FALSE(engine.decide(bind_request(), t0() + 1s).fires());  // before `at`: not counted
  EXPECT_FALSE(engine.decide(bind_request(), t0() + 6s).fires());  // the one that triggers
  EXPECT_TRUE(engine.decide(bind_request(), t0() + 7s).fires());
}

TEST(Trigger, RequestsBeforeArmAreNotCounted) {
  Engine engine(scenario_with_faults("- {name: r, when: {afterMatches: 1}, action: {type: reset}}"));
  EXPECT_FALSE(engine.decide(bind_request(), t0()).fires());
  engine.arm(t0());
  EXPECT_FALSE(engine.decide(bind_request(), t0()).fires());
  EXPECT_TRUE(engine.decide(bind_request(), t0()).fires());
}

TEST(Trigger, RequestsTakenByAnEarlierRuleStillCountTowardsTheTrigger) {
  Engine engine(scenario_with_faults(R"(
- {name: fail-binds, match: {resources: [pods/binding]}, action: {type: respond, code: 500}}
- {name: then-outage, when: {afterMatches: 2, of: {resources: [pods/binding]}, for: 5s}, action: {type: outage, mode: reset}})"));
  engine.arm(t0());
  EXPECT_EQ(engine.decide(bind_request(), t0()).rule, "fail-binds");
  EXPECT_EQ(engine.decide(bind_request(), t0()).rule, "fail-binds");
  // Trigger counting happens for every rule before any rule fires, so the outage is now open.
  EXPECT_TRUE(engine.counters()[1].window_opened);
  EXPECT_EQ(engine.decide(make_request("GET", "/api/v1/nodes"), t0() + 1s).rule, "then-outage");
}

}  // namespace
}  // namespace faultline::faults
