#include <gtest/gtest.h>

#include "../scenario_helpers.hpp"

namespace faultline::faults {
namespace {

using namespace faultline::faults::testing;
using namespace std::chrono_literals;

TEST(OutageAction, TakesEverythingDownForItsDuration) {
  Engine engine(scenario_with_faults(R"(
- name: down
  match: {resources: [pods/binding]}
  when: {limit: 1}
  action: {type: outage, mode: refuse, duration: 10s})"));
  engine.arm(t0());
  Plan first = engine.decide(bind_request(), t0());
  ASSERT_TRUE(first.fires());
  EXPECT_EQ(std::get<actions::Outage>(*first.action).mode, actions::Outage::Mode::refuse);
  EXPECT_EQ(std::get<actions::Outage>(*first.action).duration, Duration{10s});

  // Any request, matching the rule or not, meets the outage until it ends.
  Plan during = engine.decide(make_request("GET", "/api/v1/nodes"), t0() + 4s);
  ASSERT_TRUE(during.fires());
  EXPECT_EQ(during.rule, "down");
  EXPECT_EQ(std::get<actions::Outage>(*during.action).duration, Duration{6s});  // what is left
  ASSERT_TRUE(engine.outage(t0() + 9s));
  EXPECT_EQ(engine.outage(t0() + 9s)->mode, actions::Outage::Mode::refuse);

  EXPECT_FALSE(engine.outage(t0() + 10s));
  EXPECT_FALSE(engine.decide(make_request("GET", "/api/v1/nodes"), t0() + 10s).fires());
  EXPECT_EQ(engine.counters()[0].fired, 1u);  // requests during the outage are not new fires
}

TEST(OutageAction, WithoutDurationLastsUntilTheEndOfTheWindow) {
  Engine engine(scenario_with_faults(R"(
- name: down
  when: {at: 5s, for: 20s}
  action: {type: outage, mode: blackhole})"));
  engine.arm(t0());
  EXPECT_FALSE(engine.decide(bind_request(), t0() + 4s).fires());
  ASSERT_TRUE(engine.decide(bind_request(), t0() + 7s).fires());
  ASSERT_TRUE(engine.outage(t0() + 24s));
  EXPECT_EQ(engine.outage(t0() + 24s)->until, t0() + 25s);
  EXPECT_FALSE(engine.outage(t0() + 25s));
}

TEST(OutageAction, AdminOutageWorksWithoutAScenarioAndDisarmEndsIt) {
  Engine engine;
  engine.start_outage(actions::Outage::Mode::reset, 3s, t0());
  Plan plan = engine.decide(bind_request(), t0() + 1s);
  ASSERT_TRUE(plan.fires());
  EXPECT_EQ(plan.rule, "admin");
  engine.disarm();
  EXPECT_FALSE(engine.outage(t0() + 1s));
}

TEST(OutageAction, NeedsADurationFromSomewhere) {
  EXPECT_EQ(load_errors([] { scenario_with_action("{type: outage, mode: reset}"); }),
            std::vector<std::string>{
                "unit.yaml:6:24: faults[0].action: outage needs a duration (action.duration or when.for)"});
}

TEST(OutageAction, ModeIsRequired) {
  EXPECT_EQ(load_errors([] { scenario_with_action("{type: outage, duration: 1s}"); }),
            std::vector<std::string>{"unit.yaml:6:24: faults[0].action.mode: required key is missing"});
}

}  // namespace
}  // namespace faultline::faults
