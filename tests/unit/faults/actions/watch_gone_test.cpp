#include <gtest/gtest.h>

#include "../scenario_helpers.hpp"

namespace faultline::faults {
namespace {

using namespace faultline::faults::testing;

TEST(WatchGoneAction, RendersTheErrorEventKubeApiserverSendsForAnExpiredResourceVersion) {
  Plan plan = decide_once(scenario_with_action("{type: watch-gone, afterEvents: 3}"), pod_watch());
  ASSERT_TRUE(plan.fires());
  const auto& gone = std::get<actions::WatchGone>(*plan.action);
  EXPECT_EQ(gone.after_events, 3u);
  EXPECT_EQ(gone.render_event(),
            R"({"type":"ERROR","object":{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure",)"
            R"j("message":"too old resource version: 1 (2)","reason":"Expired","code":410}})j"
            "\n");
}

TEST(WatchGoneAction, MessageIsConfigurable) {
  Plan plan = decide_once(scenario_with_action(R"j({type: watch-gone, message: "too old resource version: 5 (900)"})j"),
                          pod_watch());
  ASSERT_TRUE(plan.fires());
  EXPECT_NE(std::get<actions::WatchGone>(*plan.action)
                .render_event()
                .find(R"j("message":"too old resource version: 5 (900)")j"),
            std::string::npos);
}

}  // namespace
}  // namespace faultline::faults
