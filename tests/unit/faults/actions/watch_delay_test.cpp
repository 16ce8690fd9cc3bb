#include <gtest/gtest.h>

#include "../scenario_helpers.hpp"

namespace faultline::faults {
namespace {

using namespace faultline::faults::testing;
using namespace std::chrono_literals;

TEST(WatchDelayAction, DurationIsCarriedInThePlan) {
  Plan plan = decide_once(scenario_with_action("{type: watch-delay, duration: 3s}"), pod_watch());
  ASSERT_TRUE(plan.fires());
  EXPECT_EQ(std::get<actions::WatchDelay>(*plan.action).duration, Duration{3s});
}

TEST(WatchDelayAction, OnlyAppliesToWatchRequests) {
  Engine engine(scenario_with_action("{type: watch-delay, duration: 1s}"));
  engine.arm(t0());
  EXPECT_FALSE(engine.decide(make_request("GET", "/api/v1/pods"), t0()).fires());
  EXPECT_TRUE(engine.decide(make_request("GET", "/api/v1/watch/pods"), t0()).fires());
}

TEST(WatchDelayAction, DurationIsRequired) {
  EXPECT_EQ(load_errors([] { scenario_with_action("{type: watch-delay}"); }),
            std::vector<std::string>{"unit.yaml:6:24: faults[0].action.duration: required key is missing"});
}

TEST(WatchDelayAction, DurationMustBePositiveAndAtMostTenMinutes) {
  EXPECT_EQ(load_errors([] { scenario_with_action("{type: watch-delay, duration: 0s}"); }),
            std::vector<std::string>{"unit.yaml:6:54: faults[0].action.duration: must be greater than 0"});
  EXPECT_EQ(load_errors([] { scenario_with_action("{type: watch-delay, duration: 11m}"); }),
            std::vector<std::string>{"unit.yaml:6:54: faults[0].action.duration: must be at most 10m, got 11m"});
  EXPECT_EQ(load_errors([] { scenario_with_action("{type: watch-delay, duration: soon}"); }),
            std::vector<std::string>{R"(unit.yaml:6:54: faults[0].action.duration: invalid duration "soon" )"
                                     R"((write a number and a unit: 250ms, 10s, 2m, 1h))"});
  Plan plan = decide_once(scenario_with_action("{type: watch-delay, duration: 10m}"), pod_watch());
  EXPECT_EQ(std::get<actions::WatchDelay>(*plan.action).duration, Duration{10min});
}

TEST(WatchDelayAction, OnlyDurationIsAKey) {
  EXPECT_EQ(load_errors([] { scenario_with_action("{type: watch-delay, duration: 1s, window: 1s}"); }),
            std::vector<std::string>{"unit.yaml:6:58: faults[0].action.window: unknown key (allowed: duration, type)"});
}

}  // namespace
}  // namespace faultline::faults
