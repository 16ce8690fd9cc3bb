#include <gtest/gtest.h>

#include "../scenario_helpers.hpp"

namespace faultline::faults {
namespace {

using namespace faultline::faults::testing;

const actions::GoAway& goaway_of(const Plan& plan) { return std::get<actions::GoAway>(*plan.action); }

TEST(GoawayAction, DefaultsToAGracefulNoErrorGoaway) {
  Plan plan = decide_once(scenario_with_action("{type: goaway}"), bind_request());
  ASSERT_TRUE(plan.fires());
  ASSERT_TRUE(std::holds_alternative<actions::GoAway>(*plan.action));
  EXPECT_EQ(goaway_of(plan).mode, actions::GoAway::Mode::graceful);
  EXPECT_EQ(goaway_of(plan).error_code, 0u);
  // Nothing else to carry out: no answer of faultline's own, no wait.
  EXPECT_FALSE(plan.response);
  EXPECT_EQ(plan.delay, Duration{0});
}

TEST(GoawayAction, AbruptWithAnErrorCodeIsCarriedInThePlan) {
  Plan plan =
      decide_once(scenario_with_action("{type: goaway, mode: abrupt, errorCode: ENHANCE_YOUR_CALM}"), bind_request());
  ASSERT_TRUE(plan.fires());
  EXPECT_EQ(goaway_of(plan).mode, actions::GoAway::Mode::abrupt);
  EXPECT_EQ(goaway_of(plan).error_code, 0xbu);
}

TEST(GoawayAction, EveryRfc9113ErrorNameParsesToItsCode) {
  const char* names[] = {"NO_ERROR",
                         "PROTOCOL_ERROR",
                         "INTERNAL_ERROR",
                         "FLOW_CONTROL_ERROR",
                         "SETTINGS_TIMEOUT",
                         "STREAM_CLOSED",
                         "FRAME_SIZE_ERROR",
                         "REFUSED_STREAM",
                         "CANCEL",
                         "COMPRESSION_ERROR",
                         "CONNECT_ERROR",
                         "ENHANCE_YOUR_CALM",
                         "INADEQUATE_SECURITY",
                         "HTTP_1_1_REQUIRED"};
  for (std::uint32_t code = 0; code < std::size(names); ++code) {
    SCOPED_TRACE(names[code]);
    Plan plan = decide_once(scenario_with_action(std::string("{type: goaway, errorCode: ") + names[code] + "}"),
                            bind_request());
    ASSERT_TRUE(plan.fires());
    EXPECT_EQ(goaway_of(plan).error_code, code);
    EXPECT_EQ(actions::h2_error_name(code), names[code]);
  }
}

TEST(GoawayAction, CodesPastTheRfc9113OnesAreNamedUnknown) {
  EXPECT_EQ(actions::h2_error_name(0xe), "UNKNOWN");
  EXPECT_EQ(actions::h2_error_name(0xffffffff), "UNKNOWN");
}

TEST(GoawayAction, RefusesUnknownModesErrorNamesAndKeysWithFileLineAndColumn) {
  EXPECT_EQ(load_errors([] { scenario_with_action("{type: goaway, mode: polite}"); }),
            std::vector<std::string>{
                R"(unit.yaml:6:45: faults[0].action.mode: must be one of graceful, abrupt, got "polite")"});
  // Error names only, as RFC 9113 spells them: not numbers, not another case.
  for (std::string code : {"0", "0xb", "no_error", "NO_ERRORS"}) {
    SCOPED_TRACE(code);
    auto errors = load_errors([&] { scenario_with_action("{type: goaway, errorCode: " + code + "}"); });
    ASSERT_EQ(errors.size(), 1u);
    EXPECT_EQ(errors[0],
              "unit.yaml:6:50: faults[0].action.errorCode: must be one of NO_ERROR, PROTOCOL_ERROR, "
              "INTERNAL_ERROR, FLOW_CONTROL_ERROR, SETTINGS_TIMEOUT, STREAM_CLOSED, FRAME_SIZE_ERROR, "
              "REFUSED_STREAM, CANCEL, COMPRESSION_ERROR, CONNECT_ERROR, ENHANCE_YOUR_CALM, "
              "INADEQUATE_SECURITY, HTTP_1_1_REQUIRED, got \"" +
                  code + "\"");
  }
  EXPECT_EQ(load_errors([] { scenario_with_action("{type: goaway, duration: 1s}"); }),
            std::vector<std::string>{
                "unit.yaml:6:39: faults[0].action.duration: unknown key (allowed: errorCode, mode, type)"});
}

TEST(GoawayAction, FiresOnWatchesAndOtherRequestsAlike) {
  // A connection-level action: it is not a watch action, a watch request is one request among others.
  EXPECT_FALSE(is_watch_action(actions::GoAway{}));
  EXPECT_TRUE(decide_once(scenario_with_action("{type: goaway}"), pod_watch()).fires());
}

}  // namespace
}  // namespace faultline::faults
