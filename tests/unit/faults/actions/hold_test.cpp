#include <gtest/gtest.h>

#include "../scenario_helpers.hpp"

namespace faultline::faults {
namespace {

using namespace faultline::faults::testing;
using namespace std::chrono_literals;

const actions::Hold& hold_of(const Plan& plan) { return std::get<actions::Hold>(*plan.action); }

TEST(HoldAction, CountAndDurationAreCarriedInThePlan) {
  Plan plan = decide_once(scenario_with_action("{type: hold, count: 3, duration: 20s}"), bind_request());
  ASSERT_TRUE(plan.fires());
  ASSERT_TRUE(std::holds_alternative<actions::Hold>(*plan.action));
  EXPECT_EQ(hold_of(plan).count, 3u);
  EXPECT_EQ(hold_of(plan).duration, Duration{20s});
  EXPECT_EQ(hold_of(plan).then, actions::Hold::Then::forward);  // the default: released upstream
  EXPECT_FALSE(plan.response);
}

TEST(HoldAction, EitherKeyAloneTakesTheBoundForTheOther) {
  Plan by_count = decide_once(scenario_with_action("{type: hold, count: 5}"), bind_request());
  EXPECT_EQ(hold_of(by_count).batch_size(), 5u);
  EXPECT_EQ(hold_of(by_count).wait(), Duration{10min});  // held at most the maximum
  Plan by_time = decide_once(scenario_with_action("{type: hold, duration: 2s}"), bind_request());
  EXPECT_EQ(hold_of(by_time).batch_size(), actions::Hold::kMaxCount);
  EXPECT_EQ(hold_of(by_time).wait(), Duration{2s});
}

TEST(HoldAction, ThenRespondRendersTheStatusForTheRequest) {
  Plan plan = decide_once(scenario_with_action("{type: hold, count: 2, then: respond, code: 500}"), bind_request());
  EXPECT_EQ(hold_of(plan).then, actions::Hold::Then::respond);
  ASSERT_TRUE(plan.response);
  EXPECT_EQ(plan.response->code, 500);
  EXPECT_NE(plan.response->body.find("\"kind\":\"Status\""), std::string::npos) << plan.response->body;
  // Without a code, a 503 as an apiserver that is down answers.
  Plan unavailable = decide_once(scenario_with_action("{type: hold, count: 2, then: respond}"), bind_request());
  ASSERT_TRUE(unavailable.response);
  EXPECT_EQ(unavailable.response->code, 503);
  Plan reset = decide_once(scenario_with_action("{type: hold, count: 2, then: reset}"), bind_request());
  EXPECT_EQ(hold_of(reset).then, actions::Hold::Then::reset);
  EXPECT_FALSE(reset.response);
}

TEST(HoldAction, NeedsCountOrDuration) {
  EXPECT_EQ(load_errors([] { scenario_with_action("{type: hold}"); }),
            std::vector<std::string>{"unit.yaml:6:24: faults[0].action: a hold needs count (release when that many "
                                     "are held), duration (release when the first has waited that long), or both"});
  EXPECT_EQ(load_errors([] { scenario_with_action("{type: hold, then: reset}"); }),
            std::vector<std::string>{"unit.yaml:6:24: faults[0].action: a hold needs count (release when that many "
                                     "are held), duration (release when the first has waited that long), or both"});
}

TEST(HoldAction, CountOfZeroAndTooLargeAreRefused) {
  EXPECT_EQ(load_errors([] { scenario_with_action("{type: hold, count: 0}"); }),
            std::vector<std::string>{"unit.yaml:6:44: faults[0].action.count: must be greater than 0, got 0"});
  EXPECT_EQ(
      load_errors([] { scenario_with_action("{type: hold, count: 1001}"); }),
      std::vector<std::string>{"unit.yaml:6:44: faults[0].action.count: must be at most 1000 requests, got 1001"});
  // The largest one allowed loads.
  Plan plan = decide_once(scenario_with_action("{type: hold, count: 1000}"), bind_request());
  EXPECT_EQ(hold_of(plan).batch_size(), 1000u);
}

TEST(HoldAction, DurationOfZeroAndTooLongAreRefused) {
  EXPECT_EQ(load_errors([] { scenario_with_action("{type: hold, duration: 0s}"); }),
            std::vector<std::string>{"unit.yaml:6:47: faults[0].action.duration: must be greater than 0"});
  EXPECT_EQ(load_errors([] { scenario_with_action("{type: hold, duration: 11m}"); }),
            std::vector<std::string>{"unit.yaml:6:47: faults[0].action.duration: must be at most 10m, got 11m"});
  Plan plan = decide_once(scenario_with_action("{type: hold, duration: 10m}"), bind_request());
  EXPECT_EQ(hold_of(plan).wait(), Duration{10min});
}

TEST(HoldAction, UnknownKeysAndValuesAreRefused) {
  EXPECT_EQ(load_errors([] { scenario_with_action("{type: hold, count: 2, limit: 3}"); }),
            std::vector<std::string>{
                "unit.yaml:6:47: faults[0].action.limit: unknown key (allowed: code, count, duration, message, then, "
                "type)"});
  EXPECT_EQ(load_errors([] { scenario_with_action("{type: hold, count: 2, then: drop}"); }),
            std::vector<std::string>{
                R"(unit.yaml:6:53: faults[0].action.then: must be one of forward, reset, respond, got "drop")"});
  // A code belongs to then: respond only; a code must be a final status with a body.
  EXPECT_EQ(load_errors([] { scenario_with_action("{type: hold, count: 2, code: 500}"); }),
            std::vector<std::string>{
                "unit.yaml:6:53: faults[0].action.code: only a hold with then: respond answers, so only it has code"});
  EXPECT_EQ(load_errors([] { scenario_with_action("{type: hold, count: 2, then: respond, code: 204}"); }),
            std::vector<std::string>{"unit.yaml:6:68: faults[0].action.code: must be an HTTP status code from 200 to "
                                     "599 with a body (not 204 or 304), got 204"});
}

TEST(HoldAction, FollowsItsRuleSchedule) {
  // Exactly K requests are held when the rule fires K times: the (K+1)th goes on untouched.
  Engine engine(scenario_with_faults("- {name: k, when: {limit: 2}, action: {type: hold, count: 2, then: reset}}"));
  engine.arm(t0());
  EXPECT_TRUE(engine.decide(bind_request("a"), t0()).fires());
  EXPECT_TRUE(engine.decide(bind_request("b"), t0()).fires());
  EXPECT_FALSE(engine.decide(bind_request("c"), t0()).fires());
  EXPECT_EQ(engine.counters()[0].fired, 2u);
}

}  // namespace
}  // namespace faultline::faults
