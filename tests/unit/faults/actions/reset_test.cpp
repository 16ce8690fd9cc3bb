#include <gtest/gtest.h>

#include "../scenario_helpers.hpp"

namespace faultline::faults {
namespace {

using namespace faultline::faults::testing;

TEST(ResetAction, PlanIsAResetWithNothingToWrite) {
  Plan plan = decide_once(scenario_with_action("{type: reset}"), bind_request());
  ASSERT_TRUE(plan.fires());
  EXPECT_TRUE(std::holds_alternative<actions::Reset>(*plan.action));
  EXPECT_EQ(plan.rule, "only");
  EXPECT_EQ(plan.rule_index, 0);
  EXPECT_FALSE(plan.response);
  EXPECT_EQ(action_type(*plan.action), "reset");
}

TEST(ResetAction, HasNoAttributes) {
  EXPECT_EQ(load_errors([] { scenario_with_action("{type: reset, code: 500}"); }),
            std::vector<std::string>{"unit.yaml:6:38: faults[0].action.code: unknown key (allowed: type)"});
}

}  // namespace
}  // namespace faultline::faults
