// when.repeat: the schedule starts over every period, driven by an injected ManualClock.
#include <gtest/gtest.h>

#include "scenario_helpers.hpp"

namespace faultline::faults {
namespace {

using namespace faultline::faults::testing;
using namespace std::chrono_literals;

// Asks about one bind every `step` for `total`, on a ManualClock; returns the offsets (in ms since
// arm) of the binds that got the fault.
std::vector<long> fired_ms(Engine& engine, ManualClock& clock, Clock::duration step, Clock::duration total) {
  const auto start = clock.now();
  std::vector<long> fired;
  while (clock.now() - start < total) {
    if (engine.decide(bind_request(), clock.now()).fires())
      fired.push_back(
          static_cast<long>(std::chrono::duration_cast<std::chrono::milliseconds>(clock.now() - start).count()));
    clock.advance(step);
  }
  return fired;
}

TEST(Repeat, TimedWindowOpensAtAtPlusKTimesRepeat) {
  ManualClock clock(t0());
  Engine engine(scenario_with_faults("- {name: r, when: {at: 2s, for: 1s, repeat: 5s}, action: {type: reset}}"));
  engine.arm(clock.now());
  // Windows [2s, 3s), [7s, 8s), [12s, 13s), [17s, 18s).
  EXPECT_EQ(fired_ms(engine, clock, 500ms, 20s),
            (std::vector<long>{2000, 2500, 7000, 7500, 12000, 12500, 17000, 17500}));
}

TEST(Repeat, LimitCountsPerWindow) {
  ManualClock clock(t0());
  Engine engine(scenario_with_faults("- {name: r, when: {for: 2s, repeat: 10s, limit: 1}, action: {type: reset}}"));
  engine.arm(clock.now());
  EXPECT_EQ(fired_ms(engine, clock, 1s, 30s), (std::vector<long>{0, 10000, 20000}));
  EXPECT_EQ(engine.counters()[0].fired, 3u);
  EXPECT_EQ(engine.counters()[0].matched, 6u);  // 2 binds in each of 3 windows
}

TEST(Repeat, EveryCountsPerWindow) {
  ManualClock clock(t0());
  Engine engine(scenario_with_faults("- {name: r, when: {for: 3s, repeat: 10s, every: 2}, action: {type: reset}}"));
  engine.arm(clock.now());
  // Three matches per window (0s, 1s, 2s); the second of each fires.
  EXPECT_EQ(fired_ms(engine, clock, 1s, 20s), (std::vector<long>{1000, 11000}));
}

TEST(Repeat, TriggerCountsAgainInEachPeriod) {
  ManualClock clock(t0());
  Engine engine(scenario_with_faults(
      "- {name: r, when: {afterMatches: 3, of: {resources: [pods/binding]}, for: 2s, repeat: 10s}, "
      "action: {type: reset}}"));
  engine.arm(clock.now());
  // Period 0: binds at 0, 1, 2 s count; the third opens the window (not itself faulted) for 2 s:
  // 3 s fires, 4 s is the end. Period 1 starts at 10 s and counts from zero again.
  EXPECT_EQ(fired_ms(engine, clock, 1s, 20s), (std::vector<long>{3000, 13000}));
}

TEST(Repeat, TriggeredWindowEndsWithItsPeriod) {
  ManualClock clock(t0());
  Engine engine(scenario_with_faults(
      "- {name: r, when: {afterMatches: 8, of: {resources: [pods/binding]}, for: 5s, repeat: 10s}, "
      "action: {type: reset}}"));
  engine.arm(clock.now());
  // The 8th bind (7 s) opens the window; `for` would close it at 12 s but the period ends at 10 s,
  // and period 1 counts 8 binds again (10..17 s).
  EXPECT_EQ(fired_ms(engine, clock, 1s, 20s), (std::vector<long>{8000, 9000, 18000, 19000}));
}

TEST(Repeat, OutageWithoutDurationLastsTheWindowEachTime) {
  ManualClock clock(t0());
  Engine engine(scenario_with_faults(
      "- {name: r, when: {for: 2s, repeat: 10s, limit: 1}, action: {type: outage, mode: refuse}}"));
  engine.arm(clock.now());
  std::vector<long> down_ms;
  for (int i = 0; i < 240; ++i) {  // every 100 ms for 24 s
    engine.decide(bind_request(), clock.now());
    if (engine.outage(clock.now())) down_ms.push_back(i * 100);
    clock.advance(100ms);
  }
  ASSERT_EQ(down_ms.size(), 60u);  // 3 outages of 2 s
  EXPECT_EQ(down_ms[0], 0);
  EXPECT_EQ(down_ms[19], 1900);
  EXPECT_EQ(down_ms[20], 10000);
  EXPECT_EQ(down_ms[40], 20000);
  EXPECT_EQ(down_ms[59], 21900);
}

TEST(Repeat, ATriggeredOutageEndsWithItsPeriod) {
  Engine engine(scenario_with_faults(
      "- {name: r, when: {afterMatches: 8, of: {resources: [pods/binding]}, for: 5s, repeat: 10s, limit: 1}, "
      "action: {type: outage, mode: reset}}"));
  engine.arm(t0());
  for (int i = 0; i < 8; ++i) engine.decide(bind_request(), t0() + std::chrono::seconds(i));  // the 8th (7 s) opens it
  EXPECT_TRUE(engine.decide(bind_request(), t0() + 8s).fires());
  EXPECT_TRUE(engine.outage(t0() + 9900ms).has_value());
  EXPECT_FALSE(engine.outage(t0() + 10s).has_value());  // `for` would last to 12 s; the period ends at 10 s
}

TEST(Repeat, PeriodsWithoutRequestsAreSkipped) {
  Engine engine(scenario_with_faults("- {name: r, when: {for: 1s, repeat: 5s, limit: 1}, action: {type: reset}}"));
  engine.arm(t0());
  EXPECT_TRUE(engine.decide(bind_request(), t0()).fires());
  EXPECT_FALSE(engine.decide(bind_request(), t0() + 1s).fires());           // window 0 closed
  EXPECT_TRUE(engine.decide(bind_request(), t0() + 35s + 500ms).fires());   // period 7, in its window
  EXPECT_FALSE(engine.decide(bind_request(), t0() + 35s + 600ms).fires());  // limit 1 in that window
  EXPECT_TRUE(engine.decide(bind_request(), t0() + 40s).fires());
}

TEST(Repeat, NothingBeforeAt) {
  Engine engine(scenario_with_faults("- {name: r, when: {at: 30s, for: 1s, repeat: 5s}, action: {type: reset}}"));
  engine.arm(t0());
  EXPECT_FALSE(engine.decide(bind_request(), t0()).fires());
  EXPECT_FALSE(engine.decide(bind_request(), t0() + 25s).fires());
  EXPECT_TRUE(engine.decide(bind_request(), t0() + 30s).fires());
  EXPECT_TRUE(engine.decide(bind_request(), t0() + 35s).fires());
}

}  // namespace
}  // namespace faultline::faults
