#include <gtest/gtest.h>

#include "../scenario_helpers.hpp"

namespace faultline::faults {
namespace {

using namespace faultline::faults::testing;

TEST(CloseAction, PlanIsACloseWithNothingToWrite) {
  Plan plan = decide_once(scenario_with_action("{type: close}"), bind_request());
  ASSERT_TRUE(plan.fires());
  EXPECT_TRUE(std::holds_alternative<actions::Close>(*plan.action));
  EXPECT_FALSE(plan.response);
  EXPECT_EQ(plan.delay, Duration{0});
}

}  // namespace
}  // namespace faultline::faults
