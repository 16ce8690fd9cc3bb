#include <gtest/gtest.h>

#include "../scenario_helpers.hpp"

namespace faultline::faults {
namespace {

using namespace faultline::faults::testing;
using namespace std::chrono_literals;

TEST(DelayAction, WithoutJitterThePlanHoldsExactlyTheLatency) {
  Plan plan = decide_once(scenario_with_action("{type: delay, latency: 250ms}"), bind_request());
  ASSERT_TRUE(plan.fires());
  ASSERT_TRUE(std::holds_alternative<actions::Delay>(*plan.action));
  EXPECT_EQ(plan.delay, 250ms);
}

TEST(DelayAction, JitterStaysWithinLatencyPlusJitterAndVaries) {
  Engine engine(scenario_with_action("{type: delay, latency: 100ms, jitter: 50ms}"));
  engine.arm(t0());
  std::set<Duration::rep> seen;
  for (int i = 0; i < 200; ++i) {
    Plan plan = engine.decide(bind_request(), t0());
    EXPECT_GE(plan.delay, 100ms);
    EXPECT_LE(plan.delay, 150ms);
    seen.insert(plan.delay.count());
  }
  EXPECT_GT(seen.size(), 10u);  // the jitter is really drawn, not a constant
}

TEST(DelayAction, ResolveMapsRandomValuesOntoTheJitterRange) {
  actions::Delay delay;
  delay.latency = 10ms;
  delay.jitter = 5ms;
  EXPECT_EQ(delay.resolve(0), 10ms);
  EXPECT_EQ(delay.resolve(5), 15ms);
  EXPECT_EQ(delay.resolve(6), 10ms);
}

TEST(DelayAction, LatencyIsRequiredAndPositive) {
  EXPECT_EQ(load_errors([] { scenario_with_action("{type: delay, jitter: 1s}"); }),
            std::vector<std::string>{"unit.yaml:6:24: faults[0].action.latency: required key is missing"});
  EXPECT_EQ(load_errors([] { scenario_with_action("{type: delay, latency: 0s}"); }),
            std::vector<std::string>{"unit.yaml:6:47: faults[0].action.latency: must be greater than 0"});
}

}  // namespace
}  // namespace faultline::faults
