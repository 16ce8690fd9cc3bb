// Same scenario + seed + request order => same decisions; another seed => other decisions.
#include <gtest/gtest.h>

#include <atomic>
#include <map>
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

// Two snapshots that share rule names but not their positions or parameters: in A, `binds` is
// rule 0 and answers 500 "snapshot-a"; in B it is rule 1 and answers 503 "snapshot-b". Each has a
// rule for lists that the other lacks. A decision that mixes the two (a name from one snapshot with
// the index, action or rendered answer of the other) is what a torn read of a swap produces.
const char* snapshot_a = R"(
- {name: binds, match: {resources: [pods/binding]}, action: {type: respond, code: 500, message: snapshot-a}}
- {name: a-lists, match: {verbs: [list]}, action: {type: close}})";
const char* snapshot_b = R"(
- {name: b-lists, match: {verbs: [list]}, action: {type: reset}}
- {name: binds, match: {resources: [pods/binding]}, action: {type: respond, code: 503, message: snapshot-b}})";

// Which snapshot a decision for a bind (or, if not `bind`, a pod list) came from: 'a', 'b', '-' for
// none (disarmed between load and arm), '?' for a decision no single snapshot makes.
char snapshot_of(const Plan& plan, bool bind) {
  if (!plan.fires()) return plan.rule.empty() && plan.rule_index == -1 ? '-' : '?';
  const auto* respond = plan.response ? &*plan.response : nullptr;
  auto says = [&](int code, std::string_view text) {
    return respond && respond->code == code && respond->body.find(text) != std::string::npos &&
           std::holds_alternative<actions::Respond>(*plan.action);
  };
  if (bind && plan.rule == "binds" && plan.rule_index == 0 && says(500, "snapshot-a")) return 'a';
  if (bind && plan.rule == "binds" && plan.rule_index == 1 && says(503, "snapshot-b")) return 'b';
  if (bind) return '?';
  if (plan.rule == "a-lists" && plan.rule_index == 1 && !respond &&
      std::holds_alternative<actions::Close>(*plan.action))
    return 'a';
  if (plan.rule == "b-lists" && plan.rule_index == 0 && !respond &&
      std::holds_alternative<actions::Reset>(*plan.action))
    return 'b';
  return '?';
}

TEST(ThreadSafety, EveryDecisionComesFromOneWholeSnapshotWhileSnapshotsAreSwapped) {
  auto a = scenario_with_faults(snapshot_a);
  auto b = scenario_with_faults(snapshot_b);
  Engine engine(a);
  engine.arm(t0());
  std::atomic<bool> done{false};
  std::map<char, std::uint64_t> seen;
  std::vector<std::string> incoherent;
  std::thread decider([&] {
    // Until both snapshots have decided many times (the swapper keeps swapping until then), so a
    // torn read has many swaps to show up in; bounded so a broken engine ends the test, not hangs it.
    for (std::uint64_t i = 0; i < 5'000'000 && (seen['a'] < 10'000 || seen['b'] < 10'000); ++i) {
      bool bind = i % 2 == 0;
      Request request = bind ? bind_request("p" + std::to_string(i % 7)) : make_request("GET", "/api/v1/pods");
      Plan plan = engine.decide(request, t0());
      char from = snapshot_of(plan, bind);
      ++seen[from];
      if (from == '?' && incoherent.size() < 5)
        incoherent.push_back(
            plan.rule + " #" + std::to_string(plan.rule_index) +
            (plan.response ? " " + std::to_string(plan.response->code) + " " + plan.response->body : ""));
    }
    done = true;
  });
  for (int i = 0; !done; ++i) {
    engine.load(i % 2 ? a : b);
    engine.arm(t0());
  }
  decider.join();
  EXPECT_EQ(seen['?'], 0u) << ::testing::PrintToString(incoherent);
  EXPECT_GE(seen['a'], 10'000u);
  EXPECT_GE(seen['b'], 10'000u);
  // The counters belong to the snapshot in force, rule for rule.
  auto counters = engine.counters();
  auto current = engine.scenario();
  ASSERT_EQ(counters.size(), current->faults.size());
  for (std::size_t i = 0; i < counters.size(); ++i) EXPECT_EQ(counters[i].name, current->faults[i].name);
}

}  // namespace
}  // namespace faultline::faults
