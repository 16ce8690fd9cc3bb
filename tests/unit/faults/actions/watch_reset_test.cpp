#include <gtest/gtest.h>

#include "../scenario_helpers.hpp"

namespace faultline::faults {
namespace {

using namespace faultline::faults::testing;
using namespace std::chrono_literals;

TEST(WatchResetAction, PlanCarriesEventCountTimeAndMode) {
  Plan plan =
      decide_once(scenario_with_action("{type: watch-reset, afterEvents: 5, after: 2s, mode: close}"), pod_watch());
  ASSERT_TRUE(plan.fires());
  const auto& reset = std::get<actions::WatchReset>(*plan.action);
  EXPECT_EQ(reset.after_events, 5u);
  EXPECT_EQ(reset.after, Duration{2s});
  EXPECT_EQ(reset.mode, actions::WatchReset::Mode::close);
}

TEST(WatchResetAction, OnlyAppliesToWatchRequests) {
  Engine engine(scenario_with_action("{type: watch-reset, afterEvents: 1}"));
  engine.arm(t0());
  EXPECT_FALSE(engine.decide(bind_request(), t0()).fires());
  EXPECT_FALSE(engine.decide(make_request("GET", "/api/v1/pods"), t0()).fires());
  EXPECT_TRUE(engine.decide(make_request("GET", "/api/v1/watch/pods"), t0()).fires());
  EXPECT_EQ(engine.counters()[0].matched, 1u);  // non-watch requests are not counted as matches
}

TEST(WatchResetAction, NeedsAfterEventsOrAfter) {
  EXPECT_EQ(load_errors([] { scenario_with_action("{type: watch-reset}"); }),
            std::vector<std::string>{"unit.yaml:6:24: faults[0].action: watch-reset needs afterEvents or after"});
}

TEST(WatchResetAction, RejectedWhenVerbsExcludeWatch) {
  EXPECT_EQ(load_errors([] {
              scenario_with_faults("- {name: w, match: {verbs: [list]}, action: {type: watch-reset, after: 1s}}");
            }),
            std::vector<std::string>{"unit.yaml:6:28: faults[0].match.verbs: watch-reset acts on watch streams, but "
                                     "verbs does not include watch"});
}

}  // namespace
}  // namespace faultline::faults
