#include <gtest/gtest.h>

#include "../scenario_helpers.hpp"

namespace faultline::faults {
namespace {

using namespace faultline::faults::testing;

TEST(DropResponseAction, DefaultsToResettingTheClient) {
  Plan plan = decide_once(scenario_with_action("{type: drop-response}"), bind_request());
  ASSERT_TRUE(plan.fires());
  EXPECT_EQ(std::get<actions::DropResponse>(*plan.action).then, actions::DropResponse::Then::reset);
  EXPECT_EQ(action_type(*plan.action), "drop-response");
}

TEST(DropResponseAction, ThenChoosesWhatTheClientSees) {
  Plan plan = decide_once(scenario_with_action("{type: drop-response, then: hang}"), bind_request());
  ASSERT_TRUE(plan.fires());
  EXPECT_EQ(std::get<actions::DropResponse>(*plan.action).then, actions::DropResponse::Then::hang);
  EXPECT_EQ(actions::to_string(actions::DropResponse::Then::close), "close");
}

TEST(DropResponseAction, RejectsUnknownThen) {
  EXPECT_EQ(load_errors([] { scenario_with_action("{type: drop-response, then: explode}"); }),
            std::vector<std::string>{
                "unit.yaml:6:52: faults[0].action.then: must be one of reset, close, hang, got \"explode\""});
}

}  // namespace
}  // namespace faultline::faults
