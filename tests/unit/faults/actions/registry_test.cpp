// The action registry is generated from the Action variant: these tests hold for every action,
// including ones added later, without listing them.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <map>

#include "../scenario_helpers.hpp"

namespace faultline::faults {
namespace {

using namespace faultline::faults::testing;
using ::testing::HasSubstr;

// The attributes an action cannot do without. An action missing here must load from a bare
// `{type: <name>}`; if it has required attributes, add its smallest valid set.
const std::map<std::string_view, std::string> required_attributes{
    {"respond", ", code: 503"},          {"delay", ", latency: 1s"},         {"outage", ", mode: reset, duration: 1s"},
    {"watch-reset", ", afterEvents: 1"}, {"stall", ", duration: 1s"},        {"hold", ", count: 1"},
    {"watch-delay", ", duration: 1s"},   {"watch-coalesce", ", window: 1s"},
};

std::string minimal_action(std::string_view type) {
  auto extra = required_attributes.find(type);
  return "{type: " + std::string(type) + (extra == required_attributes.end() ? "" : extra->second) + "}";
}

TEST(ActionRegistry, EveryKnownTypeParsesFromAMinimalActionAndKeepsItsName) {
  for (auto type : known_action_types()) {
    SCOPED_TRACE(std::string(type));
    std::shared_ptr<const Scenario> scenario;
    ASSERT_NO_THROW(scenario = scenario_with_action(minimal_action(type)))
        << load_errors([&] { scenario_with_action(minimal_action(type)); })[0];
    ASSERT_EQ(scenario->faults.size(), 1u);
    EXPECT_EQ(action_type(scenario->faults[0].action), type);
  }
}

TEST(ActionRegistry, WatchActionsApplyOnlyToWatchStreams) {
  for (auto type : known_action_types()) {
    SCOPED_TRACE(std::string(type));
    bool on_watch = type.starts_with("watch-");  // the naming rule docs/development.md gives
    auto action = scenario_with_action(minimal_action(type))->faults[0].action;
    EXPECT_EQ(is_watch_action(action), on_watch);
    // A watch action does not fire on a request that is not a watch; stale-read only on a LIST
    // (StaleReadAction.OnlyListsAreActedOnAndNotTheirContinuationPages); every other action does.
    const bool lists_only = type == "stale-read";
    EXPECT_EQ(decide_once(scenario_with_action(minimal_action(type)), bind_request()).fires(),
              !on_watch && !lists_only);
    EXPECT_EQ(decide_once(scenario_with_action(minimal_action(type)), pod_watch()).fires(), !lists_only);
    // ... and a rule that can never see a watch (stale-read: a LIST) is refused at load.
    auto errors = load_errors([&] {
      scenario_with_faults("- {name: only, match: {verbs: [create]}, action: " + minimal_action(type) + "}");
    });
    if (on_watch)
      EXPECT_THAT(errors[0], HasSubstr(std::string(type) + " acts on watch streams, but verbs does not include watch"));
    else if (lists_only)
      EXPECT_THAT(errors[0], HasSubstr("stale-read acts on LIST requests, but verbs does not include list"));
    else EXPECT_EQ(errors[0], "<loaded without errors>");
  }
}

TEST(ActionRegistry, UnknownTypesAreRefusedWithFileLineAndTheKnownNames) {
  for (std::string type : {"explode", "Reset", "watch", "reset ", ""}) {
    SCOPED_TRACE(type);
    auto errors = load_errors([&] { scenario_with_action("{type: \"" + type + "\"}"); });
    ASSERT_EQ(errors.size(), 1u);
    EXPECT_THAT(errors[0], HasSubstr("unit.yaml:6:"));
    EXPECT_THAT(errors[0], HasSubstr("faults[0].action.type: unknown action type \"" + type + "\" (known: "));
    for (auto known : known_action_types()) EXPECT_THAT(errors[0], HasSubstr(std::string(known)));
  }
}

TEST(ActionRegistry, AttributesOfAnotherActionAreUnknownKeys) {
  // Each action's parse reads only its own keys: `latency` belongs to delay, not to hang.
  EXPECT_EQ(
      load_errors([] { scenario_with_action("{type: hang, latency: 1s}"); }),
      std::vector<std::string>{"unit.yaml:6:37: faults[0].action.latency: unknown key (allowed: duration, type)"});
}

}  // namespace
}  // namespace faultline::faults
