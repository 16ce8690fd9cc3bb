#include <gtest/gtest.h>

#include "../scenario_helpers.hpp"

namespace faultline::faults {
namespace {

using namespace faultline::faults::testing;

const char* live_pod =
    R"({"kind":"Pod","apiVersion":"v1","metadata":{"name":"web-0","namespace":"default",)"
    R"("deletionTimestamp":"2026-01-01T00:00:00Z","deletionGracePeriodSeconds":30,"labels":{"app":"web"}}})";

TEST(WatchInjectAction, WithoutTemplateReplaysTheLastObjectAsDeletedWithoutDeletionTimestamp) {
  Plan plan = decide_once(scenario_with_action("{type: watch-inject, event: DELETED, afterEvents: 2}"), pod_watch());
  ASSERT_TRUE(plan.fires());
  const auto& inject = std::get<actions::WatchInject>(*plan.action);
  EXPECT_EQ(inject.after_events, 2u);
  EXPECT_EQ(inject.render_event(live_pod),
            R"({"type":"DELETED","object":{"kind":"Pod","apiVersion":"v1","metadata":{"name":"web-0",)"
            R"("namespace":"default","labels":{"app":"web"}}}})"
            "\n");
}

TEST(WatchInjectAction, TemplateIsSentAsJsonWithYamlTypesKept) {
  Plan plan = decide_once(
      scenario_with_action(R"({type: watch-inject, event: MODIFIED, object: {kind: Pod, apiVersion: v1,)"
                           R"( metadata: {name: ghost, generation: 2, labels: {v: "3"}}, spec: {hostNetwork: true}}})"),
      pod_watch());
  ASSERT_TRUE(plan.fires());
  EXPECT_EQ(std::get<actions::WatchInject>(*plan.action).render_event(""),
            R"({"type":"MODIFIED","object":{"kind":"Pod","apiVersion":"v1","metadata":{"name":"ghost",)"
            R"("generation":2,"labels":{"v":"3"}},"spec":{"hostNetwork":true}}})"
            "\n");
}

TEST(WatchInjectAction, NothingToInjectWithoutTemplateOrObject) {
  actions::WatchInject inject;
  EXPECT_EQ(inject.render_event(""), std::nullopt);
  EXPECT_EQ(inject.render_event("[1,2]"), std::nullopt);
}

TEST(WatchInjectAction, DefaultsToDeletedAfterOneEvent) {
  Plan plan = decide_once(scenario_with_action("{type: watch-inject}"), pod_watch());
  ASSERT_TRUE(plan.fires());
  EXPECT_EQ(std::get<actions::WatchInject>(*plan.action).event, "DELETED");
  EXPECT_EQ(std::get<actions::WatchInject>(*plan.action).after_events, 1u);
}

TEST(WatchInjectAction, RejectsUnknownEventTypes) {
  EXPECT_EQ(load_errors([] { scenario_with_action("{type: watch-inject, event: REMOVED}"); }),
            std::vector<std::string>{
                "unit.yaml:6:52: faults[0].action.event: must be one of ADDED, MODIFIED, DELETED, got \"REMOVED\""});
}

}  // namespace
}  // namespace faultline::faults
