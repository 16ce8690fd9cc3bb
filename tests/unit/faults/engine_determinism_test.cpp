// Same scenario + seed + request order => same decisions; another seed => other decisions.
#include <gtest/gtest.h>

#include <thread>

#include "scenario_helpers.hpp"

namespace faultline::faults {
namespace {

using namespace faultline::faults::testing;
using namespace std::chrono_literals;

const char* random_rules = R"(
- {name: flaky-binds, match: {resources: [pods/binding]}, when: {probability: 0.3}, action: {type: respond, code: 500}}
- {name: slow-lists, match: {verbs: [list]}, when: {probability: 0.5}, action: {type: delay, latency: 10ms, jitter: 90ms}})";

// The decision for each of a fixed, mixed sequence of requests, as "rule:delay" strings.
std::vector<std::string> run(std::uint64_t seed) {
  Engine engine(scenario_with_faults(random_rules, seed));
  engine.arm(t0());
  std::vector<std::string> decisions;
  for (int i = 0; i < 600; ++i) {
    Request request = i % 3 == 0 ? make_request("GET", "/api/v1/pods") : bind_request("p" + std::to_string(i));
    Plan plan = engine.decide(request, t0() + std::chrono::milliseconds(i));
    decisions.push_back(plan.rule + ":" + std::to_string(plan.delay.count()));
  }
  return decisions;
}

TEST(Determinism, SameSeedSameDecisions) { EXPECT_EQ(run(3355), run(3355)); }

TEST(Determinism, DifferentSeedsDifferentDecisions) {
  auto a = run(3355), b = run(3356);
  std::size_t differing = 0;
  for (std::size_t i = 0; i < a.size(); ++i) differing += a[i] != b[i];
  EXPECT_GT(differing, a.size() / 4);
}

TEST(Determinism, ARulesSequenceDoesNotDependOnOtherRules) {
  // Adding a rule in front (that never fires for binds) leaves flaky-binds' decisions unchanged.
  auto decisions_for_binds = [](const std::string& faults) {
    Engine engine(scenario_with_faults(faults, 7));
    engine.arm(t0());
    std::vector<bool> fired;
    for (int i = 0; i < 300; ++i) fired.push_back(engine.decide(bind_request(), t0()).rule == "flaky-binds");
    return fired;
  };
  std::string flaky = "- {name: flaky-binds, when: {probability: 0.5}, action: {type: reset}}";
  std::string extra = "- {name: lists, match: {verbs: [list]}, when: {probability: 0.5}, action: {type: close}}\n";
  EXPECT_EQ(decisions_for_binds(flaky), decisions_for_binds(extra + flaky));
}

TEST(Determinism, RuleSeedDependsOnSeedAndName) {
  EXPECT_EQ(rule_seed(1, "a"), rule_seed(1, "a"));
  EXPECT_NE(rule_seed(1, "a"), rule_seed(2, "a"));
  EXPECT_NE(rule_seed(1, "a"), rule_seed(1, "b"));
}

TEST(ThreadSafety, ConcurrentDecisionsRespectTheLimitExactly) {
  Engine engine(scenario_with_faults("- {name: r, when: {limit: 500}, action: {type: reset}}"));
  engine.arm(t0());
  std::atomic<int> fired{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&] {
      for (int i = 0; i < 1000; ++i)
        if (engine.decide(bind_request(), t0()).fires()) ++fired;
    });
  for (auto& thread : threads) thread.join();
  EXPECT_EQ(fired.load(), 500);
  EXPECT_EQ(engine.counters()[0].matched, 4000u);
  EXPECT_EQ(engine.counters()[0].fired, 500u);
}

TEST(ThreadSafety, SwappingSnapshotsWhileDecidingIsSafe) {
  Engine engine(scenario_with_action("{type: reset}"));
  engine.arm(t0());
  auto other = scenario_with_faults("- {name: other, action: {type: close}}");
  std::thread decider([&] {
    for (int i = 0; i < 2000; ++i) engine.decide(bind_request(), t0());
  });
  for (int i = 0; i < 200; ++i) {
    engine.load(i % 2 ? other : scenario_with_action("{type: reset}"));
    engine.arm(t0());
  }
  decider.join();
  EXPECT_EQ(engine.counters().size(), 1u);
}

}  // namespace
}  // namespace faultline::faults
