#include <gtest/gtest.h>

#include "../scenario_helpers.hpp"

namespace faultline::faults {
namespace {

using namespace faultline::faults::testing;
using namespace std::chrono_literals;

TEST(HangAction, WithoutDurationHangsUntilTheClientGivesUp) {
  Plan plan = decide_once(scenario_with_action("{type: hang}"), bind_request());
  ASSERT_TRUE(plan.fires());
  const auto* hang = std::get_if<actions::Hang>(&*plan.action);
  ASSERT_NE(hang, nullptr);
  EXPECT_EQ(hang->duration, std::nullopt);
}

TEST(HangAction, DurationIsCarriedInThePlan) {
  Plan plan = decide_once(scenario_with_action("{type: hang, duration: 30s}"), bind_request());
  ASSERT_TRUE(plan.fires());
  EXPECT_EQ(std::get<actions::Hang>(*plan.action).duration, Duration{30s});
}

}  // namespace
}  // namespace faultline::faults
