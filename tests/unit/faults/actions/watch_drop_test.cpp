#include <gtest/gtest.h>

#include "../scenario_helpers.hpp"

namespace faultline::faults {
namespace {

using namespace faultline::faults::testing;

TEST(WatchDropAction, DropsOnlyTheListedEventTypes) {
  Plan plan = decide_once(scenario_with_action("{type: watch-drop, events: [DELETED], afterEvents: 10, count: 2}"),
                          pod_watch());
  ASSERT_TRUE(plan.fires());
  const auto& drop = std::get<actions::WatchDrop>(*plan.action);
  EXPECT_TRUE(drop.drops("DELETED"));
  EXPECT_FALSE(drop.drops("MODIFIED"));
  EXPECT_FALSE(drop.drops("BOOKMARK"));
  EXPECT_EQ(drop.after_events, 10u);
  EXPECT_EQ(drop.count, 2u);
}

TEST(WatchDropAction, DefaultsToEveryObjectEventButNotBookmarks) {
  Plan plan = decide_once(scenario_with_action("{type: watch-drop}"), pod_watch());
  ASSERT_TRUE(plan.fires());
  const auto& drop = std::get<actions::WatchDrop>(*plan.action);
  EXPECT_TRUE(drop.drops("ADDED"));
  EXPECT_TRUE(drop.drops("MODIFIED"));
  EXPECT_TRUE(drop.drops("DELETED"));
  EXPECT_FALSE(drop.drops("BOOKMARK"));
  EXPECT_EQ(drop.count, std::nullopt);
}

TEST(WatchDropAction, RejectsUnknownEventTypes) {
  EXPECT_EQ(load_errors([] { scenario_with_action("{type: watch-drop, events: [DELETED, GONE]}"); }),
            std::vector<std::string>{"unit.yaml:6:61: faults[0].action.events[1]: must be one of ADDED, MODIFIED, "
                                     "DELETED, BOOKMARK, got \"GONE\""});
}

}  // namespace
}  // namespace faultline::faults
