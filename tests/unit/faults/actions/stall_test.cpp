#include <gtest/gtest.h>

#include "../scenario_helpers.hpp"

namespace faultline::faults {
namespace {

using namespace faultline::faults::testing;
using namespace std::chrono_literals;

TEST(StallAction, DurationIsCarriedInThePlan) {
  Plan plan = decide_once(scenario_with_action("{type: stall, duration: 20s}"), bind_request());
  ASSERT_TRUE(plan.fires());
  ASSERT_TRUE(std::holds_alternative<actions::Stall>(*plan.action));
  EXPECT_EQ(std::get<actions::Stall>(*plan.action).duration, Duration{20s});
  // The connection is stalled, not the request delayed: nothing for the delay path, no answer.
  EXPECT_EQ(plan.delay, Duration{0});
  EXPECT_FALSE(plan.response);
}

TEST(StallAction, DurationIsRequired) {
  EXPECT_EQ(load_errors([] { scenario_with_action("{type: stall}"); }),
            std::vector<std::string>{"unit.yaml:6:24: faults[0].action.duration: required key is missing"});
}

TEST(StallAction, DurationMustBePositiveAndBounded) {
  EXPECT_EQ(load_errors([] { scenario_with_action("{type: stall, duration: 0s}"); }),
            std::vector<std::string>{"unit.yaml:6:48: faults[0].action.duration: must be greater than 0"});
  EXPECT_EQ(load_errors([] { scenario_with_action("{type: stall, duration: 8761h}"); }),
            std::vector<std::string>{R"(unit.yaml:6:48: faults[0].action.duration: duration "8761h" is longer )"
                                     R"(than the maximum of 8760h (365 days))"});
  EXPECT_EQ(load_errors([] { scenario_with_action("{type: stall, duration: 20}"); }),
            std::vector<std::string>{R"(unit.yaml:6:48: faults[0].action.duration: invalid duration "20" )"
                                     R"((write a number and a unit: 250ms, 10s, 2m, 1h))"});
  // The longest one allowed loads.
  Plan plan = decide_once(scenario_with_action("{type: stall, duration: 8760h}"), bind_request());
  EXPECT_EQ(std::get<actions::Stall>(*plan.action).duration, Duration{8760h});
}

TEST(StallAction, OnlyDurationIsAKey) {
  EXPECT_EQ(
      load_errors([] { scenario_with_action("{type: stall, duration: 1s, latency: 1s}"); }),
      std::vector<std::string>{"unit.yaml:6:52: faults[0].action.latency: unknown key (allowed: duration, type)"});
}

TEST(StallAction, FollowsItsRuleSchedule) {
  // Like every action, a stall fires only as its rule allows: here on the first request only.
  Engine engine(scenario_with_faults("- {name: freeze, when: {limit: 1}, action: {type: stall, duration: 1s}}"));
  engine.arm(t0());
  EXPECT_TRUE(engine.decide(bind_request(), t0()).fires());
  EXPECT_FALSE(engine.decide(bind_request(), t0()).fires());
  EXPECT_EQ(engine.counters()[0].fired, 1u);
}

}  // namespace
}  // namespace faultline::faults
