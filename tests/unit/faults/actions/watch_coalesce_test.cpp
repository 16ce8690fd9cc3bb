#include <gtest/gtest.h>

#include "../scenario_helpers.hpp"

namespace faultline::faults {
namespace {

using namespace faultline::faults::testing;
using namespace std::chrono_literals;

TEST(WatchCoalesceAction, WindowAndKeyAreCarriedInThePlan) {
  Plan plan = decide_once(scenario_with_action("{type: watch-coalesce, window: 2s, by: uid}"), pod_watch());
  ASSERT_TRUE(plan.fires());
  const auto& coalesce = std::get<actions::WatchCoalesce>(*plan.action);
  EXPECT_EQ(coalesce.window, Duration{2s});
  EXPECT_EQ(coalesce.by, actions::WatchCoalesce::Key::uid);
}

TEST(WatchCoalesceAction, ObjectsAreKeyedByNameByDefault) {
  Plan plan = decide_once(scenario_with_action("{type: watch-coalesce, window: 500ms}"), pod_watch());
  EXPECT_EQ(std::get<actions::WatchCoalesce>(*plan.action).by, actions::WatchCoalesce::Key::name);
}

TEST(WatchCoalesceAction, OnlyAppliesToWatchRequests) {
  Engine engine(scenario_with_action("{type: watch-coalesce, window: 1s}"));
  engine.arm(t0());
  EXPECT_FALSE(engine.decide(make_request("GET", "/api/v1/pods"), t0()).fires());
  EXPECT_TRUE(engine.decide(make_request("GET", "/api/v1/watch/pods"), t0()).fires());
}

TEST(WatchCoalesceAction, WindowIsRequiredPositiveAndAtMostTenMinutes) {
  EXPECT_EQ(load_errors([] { scenario_with_action("{type: watch-coalesce}"); }),
            std::vector<std::string>{"unit.yaml:6:24: faults[0].action.window: required key is missing"});
  EXPECT_EQ(load_errors([] { scenario_with_action("{type: watch-coalesce, window: 0ms}"); }),
            std::vector<std::string>{"unit.yaml:6:55: faults[0].action.window: must be greater than 0"});
  EXPECT_EQ(load_errors([] { scenario_with_action("{type: watch-coalesce, window: 2h}"); }),
            std::vector<std::string>{"unit.yaml:6:55: faults[0].action.window: must be at most 10m, got 2h"});
}

TEST(WatchCoalesceAction, ByIsNameOrUidAndUnknownKeysAreRefused) {
  EXPECT_EQ(load_errors([] { scenario_with_action("{type: watch-coalesce, window: 1s, by: kind}"); }),
            std::vector<std::string>{R"(unit.yaml:6:63: faults[0].action.by: must be one of name, uid, got "kind")"});
  EXPECT_EQ(
      load_errors([] { scenario_with_action("{type: watch-coalesce, window: 1s, duration: 1s}"); }),
      std::vector<std::string>{"unit.yaml:6:59: faults[0].action.duration: unknown key (allowed: by, type, window)"});
}

}  // namespace
}  // namespace faultline::faults
