// Schedules (at, for, every, limit, probability) on explicit time points: no sleeping.
#include <gtest/gtest.h>

#include "scenario_helpers.hpp"

namespace faultline::faults {
namespace {

using namespace faultline::faults::testing;
using namespace std::chrono_literals;

// Which of `count` binds, one per second from t0(), got the fault.
std::vector<int> fired_seconds(Engine& engine, int count) {
  std::vector<int> fired;
  for (int i = 0; i < count; ++i)
    if (engine.decide(bind_request(), t0() + std::chrono::seconds(i)).fires()) fired.push_back(i);
  return fired;
}

TEST(Schedule, WindowFollowsAnInjectedManualClock) {
  ManualClock clock(t0());
  Engine engine(scenario_with_faults("- {name: r, when: {at: 250ms, for: 500ms}, action: {type: reset}}"));
  engine.arm(clock.now());
  std::vector<bool> fired;
  for (int step = 0; step < 8; ++step) {  // 0, 125ms, ..., 875ms
    fired.push_back(engine.decide(bind_request(), clock.now()).fires());
    clock.advance(125ms);
  }
  EXPECT_EQ(fired, (std::vector<bool>{false, false, true, true, true, true, false, false}));
}

TEST(Schedule, NothingFiresUntilArmed) {
  Engine engine(scenario_with_action("{type: reset}"));
  EXPECT_FALSE(engine.armed());
  EXPECT_FALSE(engine.decide(bind_request(), t0()).fires());
  engine.arm(t0());
  EXPECT_TRUE(engine.armed());
  EXPECT_TRUE(engine.decide(bind_request(), t0()).fires());
  engine.disarm();
  EXPECT_FALSE(engine.decide(bind_request(), t0()).fires());
}

TEST(Schedule, AtOpensTheWindowThatLongAfterArm) {
  Engine engine(scenario_with_faults("- {name: r, when: {at: 3s}, action: {type: reset}}"));
  engine.arm(t0());
  EXPECT_EQ(fired_seconds(engine, 6), (std::vector<int>{3, 4, 5}));
}

TEST(Schedule, ForClosesTheWindow) {
  Engine engine(scenario_with_faults("- {name: r, when: {at: 2s, for: 2s}, action: {type: reset}}"));
  engine.arm(t0());
  EXPECT_EQ(fired_seconds(engine, 6), (std::vector<int>{2, 3}));
}

TEST(Schedule, ArmIsTimeZero) {
  Engine engine(scenario_with_faults("- {name: r, when: {at: 2s, for: 1s}, action: {type: reset}}"));
  engine.arm(t0() + 10s);
  EXPECT_FALSE(engine.decide(bind_request(), t0() + 2s).fires());
  EXPECT_TRUE(engine.decide(bind_request(), t0() + 12s).fires());
}

TEST(Schedule, EveryFiresOnEveryNthMatch) {
  Engine engine(scenario_with_faults("- {name: r, when: {every: 3}, action: {type: reset}}"));
  engine.arm(t0());
  EXPECT_EQ(fired_seconds(engine, 10), (std::vector<int>{2, 5, 8}));
  EXPECT_EQ(engine.counters()[0].matched, 10u);
  EXPECT_EQ(engine.counters()[0].fired, 3u);
}

TEST(Schedule, LimitCapsTheFires) {
  Engine engine(scenario_with_faults("- {name: r, when: {limit: 2}, action: {type: reset}}"));
  engine.arm(t0());
  EXPECT_EQ(fired_seconds(engine, 5), (std::vector<int>{0, 1}));
  EXPECT_EQ(engine.counters()[0].fired, 2u);
}

TEST(Schedule, EveryAndLimitTogether) {
  Engine engine(scenario_with_faults("- {name: r, when: {every: 2, limit: 2}, action: {type: reset}}"));
  engine.arm(t0());
  EXPECT_EQ(fired_seconds(engine, 10), (std::vector<int>{1, 3}));
}

TEST(Schedule, ProbabilityZeroNeverFiresAndOneAlwaysFires) {
  Engine never(scenario_with_faults("- {name: r, when: {probability: 0}, action: {type: reset}}"));
  Engine always(scenario_with_faults("- {name: r, when: {probability: 1}, action: {type: reset}}"));
  never.arm(t0());
  always.arm(t0());
  EXPECT_TRUE(fired_seconds(never, 50).empty());
  EXPECT_EQ(fired_seconds(always, 50).size(), 50u);
  EXPECT_EQ(never.counters()[0].matched, 50u);
}

TEST(Schedule, ProbabilityFiresRoughlyThatShare) {
  Engine engine(scenario_with_faults("- {name: r, when: {probability: 0.25}, action: {type: reset}}"));
  engine.arm(t0());
  auto fired = fired_seconds(engine, 4000).size();
  EXPECT_GT(fired, 850u);  // 1000 expected; +-150 is > 8 standard deviations
  EXPECT_LT(fired, 1150u);
}

TEST(Schedule, FirstFiringRuleWinsAndLaterRulesDoNotSeeTheRequest) {
  Engine engine(scenario_with_faults(R"(
- {name: first, match: {resources: [pods/binding]}, when: {every: 2}, action: {type: reset}}
- {name: second, action: {type: close}})"));
  engine.arm(t0());
  EXPECT_EQ(engine.decide(bind_request(), t0()).rule, "second");
  EXPECT_EQ(engine.decide(bind_request(), t0()).rule, "first");
  EXPECT_EQ(engine.decide(make_request("GET", "/api/v1/nodes"), t0()).rule, "second");
  auto counters = engine.counters();
  EXPECT_EQ(counters[0].matched, 2u);
  EXPECT_EQ(counters[0].fired, 1u);
  EXPECT_EQ(counters[1].matched, 2u);
  EXPECT_EQ(counters[1].fired, 2u);
}

TEST(Schedule, ReArmingStartsCountersAndScheduleOver) {
  Engine engine(scenario_with_faults("- {name: r, when: {limit: 1}, action: {type: reset}}"));
  engine.arm(t0());
  EXPECT_TRUE(engine.decide(bind_request(), t0()).fires());
  EXPECT_FALSE(engine.decide(bind_request(), t0()).fires());
  engine.arm(t0() + 1s);
  EXPECT_EQ(engine.counters()[0].fired, 0u);
  EXPECT_TRUE(engine.decide(bind_request(), t0() + 1s).fires());
}

TEST(Schedule, LoadingASnapshotResetsStateAndDisarms) {
  Engine engine(scenario_with_action("{type: reset}"));
  auto old_snapshot = engine.scenario();
  engine.arm(t0());
  EXPECT_TRUE(engine.decide(bind_request(), t0()).fires());
  auto next = scenario_with_faults("- {name: other, action: {type: close}}");
  engine.load(next);
  EXPECT_FALSE(engine.armed());
  EXPECT_EQ(engine.scenario(), next);
  EXPECT_EQ(old_snapshot->faults[0].name, "only");  // the old snapshot is untouched
  engine.arm(t0());
  Plan plan = engine.decide(bind_request(), t0());
  EXPECT_EQ(plan.rule, "other");
  ASSERT_EQ(engine.counters().size(), 1u);
  EXPECT_EQ(engine.counters()[0].name, "other");
}

}  // namespace
}  // namespace faultline::faults

namespace faultline::faults {
namespace {

using namespace faultline::faults::testing;
using namespace std::chrono_literals;

std::string phase_at(const Engine& engine, Clock::time_point now, std::size_t rule = 0) {
  return std::string(rule_phase_name(engine.counters(now).at(rule).phase));
}

// Where a rule is in its schedule: what the harness waits out before it lets the cluster settle.
TEST(RulePhase, ATimedWindowIsScheduledThenOpenThenEnded) {
  Engine engine(scenario_with_faults("- {name: r, when: {at: 2s, for: 3s}, action: {type: reset}}"));
  EXPECT_EQ(phase_at(engine, t0()), "disarmed");
  engine.arm(t0());
  EXPECT_EQ(phase_at(engine, t0() + 1s), "scheduled");
  EXPECT_EQ(phase_at(engine, t0() + 2s), "open");
  EXPECT_EQ(phase_at(engine, t0() + 4999ms), "open");
  EXPECT_EQ(phase_at(engine, t0() + 5s), "ended");
}

TEST(RulePhase, ARuleEndsWhenItsLimitIsUsedUp) {
  Engine engine(scenario_with_faults("- {name: r, when: {limit: 2}, action: {type: reset}}"));
  engine.arm(t0());
  EXPECT_EQ(phase_at(engine, t0()), "open");
  EXPECT_TRUE(engine.decide(bind_request(), t0()).fires());
  EXPECT_EQ(phase_at(engine, t0()), "open");
  EXPECT_TRUE(engine.decide(bind_request(), t0()).fires());
  EXPECT_EQ(phase_at(engine, t0() + 1h), "ended");
}

TEST(RulePhase, ATriggeredRuleWaitsUntilItsTriggerThenLastsItsWindow) {
  Engine engine(scenario_with_faults(
      "- {name: r, when: {afterMatches: 2, of: {verbs: [create]}, for: 10s}, action: {type: reset}}"));
  engine.arm(t0());
  EXPECT_EQ(phase_at(engine, t0() + 1h), "waiting");
  engine.decide(bind_request(), t0() + 1s);
  engine.decide(bind_request(), t0() + 2s);  // the trigger: the window opens here
  EXPECT_EQ(phase_at(engine, t0() + 3s), "open");
  EXPECT_EQ(phase_at(engine, t0() + 12s), "ended");
}

TEST(RulePhase, ARepeatingRuleIsClosedBetweenItsWindows) {
  Engine engine(scenario_with_faults("- {name: r, when: {at: 1s, for: 2s, repeat: 10s}, action: {type: reset}}"));
  engine.arm(t0());
  EXPECT_EQ(phase_at(engine, t0()), "scheduled");
  EXPECT_EQ(phase_at(engine, t0() + 2s), "open");
  EXPECT_EQ(phase_at(engine, t0() + 5s), "closed");
  EXPECT_EQ(phase_at(engine, t0() + 11500ms), "open");  // the next period, entered by no request yet
  engine.decide(bind_request(), t0() + 11500ms);
  EXPECT_EQ(phase_at(engine, t0() + 11500ms), "open");
  EXPECT_EQ(phase_at(engine, t0() + 14s), "closed");
}

}  // namespace
}  // namespace faultline::faults

namespace faultline::faults {
namespace {

using namespace faultline::faults::testing;
using namespace std::chrono_literals;

TEST(RulePhase, APeriodNoRequestEnteredIsClosedAfterItsWindow) {
  Engine engine(scenario_with_faults("- {name: r, when: {at: 1s, for: 2s, repeat: 10s}, action: {type: reset}}"));
  engine.arm(t0());
  EXPECT_EQ(rule_phase_name(engine.counters(t0() + 14s).at(0).phase), "closed");
  EXPECT_EQ(rule_phase_name(engine.counters(t0() + 22s).at(0).phase), "open");
}

}  // namespace
}  // namespace faultline::faults
