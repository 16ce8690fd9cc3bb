// explore's minimizer against fake runners whose violations are a known function of the candidate
// scenario (as loaded by the harness's own scenario loader), and real report.json files.
#include "faultline/harness/explore_minimize.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <functional>
#include <string>
#include <vector>

#include "faultline/harness/schema/scenario.hpp"
#include "files.hpp"

namespace faultline::harness::explore {
namespace {

using namespace std::chrono_literals;

// Six rules; the runs violate pods-bound (and no-unexpected-deletes, not a target) iff rules b and
// e are both present and b's afterMatches is at least 40.
const char* const kSixRules = R"(# the plan's scenario
apiVersion: faultline/v1
kind: Scenario
metadata: {name: six-rules}
seed: 7
workload:
  nodes: {count: 4, capacity: {cpu: "32", pods: "110"}}
  phases:
    - name: burst
      pods: 100
faults:
  # a: a delay nobody notices
  - name: a
    match: {verbs: [get]}
    action: {type: delay, latency: 2s}
  # b: the outage that matters
  - name: b
    match: {}
    when: {afterMatches: 300, of: {verbs: [create], resources: [pods/binding]}, for: 10s, probability: 0.5}
    action: {type: outage, mode: reset}
  - name: c
    match: {verbs: [list]}
    when: {limit: 4}
    action: {type: respond, code: 500}
  - name: d
    match: {verbs: [patch]}
    action: {type: reset}
  # e: the relist after it
  - name: e
    match: {verbs: [watch], resources: [pods]}
    when:
      afterMatches: 300
      of: {verbs: [create], resources: [pods/binding]}
      for: 2m
      limit: 5
    action: {type: watch-gone}
  - name: f
    match: {verbs: [delete]}
    when: {every: 3}
    action: {type: respond, code: 503}
checks:
  invariants: [pods-bound, no-unexpected-deletes, bound-to-live-node]
)";

std::shared_ptr<const schema::Scenario> load(const std::string& text) {
  return schema::load_scenario_text(text, "candidate.yaml");
}

const faults::Rule* rule(const schema::Scenario& s, std::string_view name) {
  for (const auto& r : s.faults)
    if (r.name == name) return &r;
  return nullptr;
}

bool six_rules_violate(const schema::Scenario& s) {
  const auto* b = rule(s, "b");
  return b && rule(s, "e") && b->when.trigger && b->when.trigger->after_matches >= 40;
}

using Runner = std::function<RunOutcome(const schema::Scenario&, unsigned run)>;

Runner deterministic(std::function<bool(const schema::Scenario&)> violates) {
  return [violates](const schema::Scenario& s, unsigned) {
    return violates(s) ? RunOutcome{"fail", {"pods-bound", "no-unexpected-deletes"}} : RunOutcome{"pass", {}};
  };
}

struct Drive {
  std::vector<Candidate> proposed;
};

// Runs the minimizer to the end: every candidate must load with the harness's loader.
Drive drive(Minimizer& m, const Runner& runner, unsigned repeats = 3, std::size_t limit = SIZE_MAX) {
  Drive d;
  while (d.proposed.size() < limit) {
    auto c = m.next();
    if (!c) break;
    std::shared_ptr<const schema::Scenario> s;
    EXPECT_NO_THROW(s = load(c->scenario_yaml)) << c->id << " " << c->what << "\n" << c->scenario_yaml;
    if (!s) break;
    EXPECT_FALSE(s->faults.empty() && s->component_faults.empty()) << c->id;
    std::vector<RunOutcome> outcomes;
    for (unsigned run = 0; run < repeats; ++run) outcomes.push_back(runner(*s, run));
    m.record(*c, outcomes);
    d.proposed.push_back(*c);
  }
  return d;
}

TEST(ExploreMinimize, FindsTheMinimalRulesAndShrinksTheirParameters) {
  Minimizer m(kSixRules, {"pods-bound"});
  auto d = drive(m, deterministic(six_rules_violate));
  ASSERT_TRUE(m.done());
  EXPECT_EQ(m.next(), std::nullopt);
  EXPECT_FALSE(Minimizer(kSixRules, {"pods-bound"}).done());
  EXPECT_LE(d.proposed.size(), 30u);  // 15 to remove four rules, 15 to shrink five parameters
  EXPECT_EQ(m.elements_left(), (std::vector<std::string>{"b", "e"}));
  auto s = load(m.current_yaml());
  ASSERT_EQ(s->faults.size(), 2u);
  const auto& b = *rule(*s, "b");
  const auto& e = *rule(*s, "e");
  EXPECT_EQ(b.when.trigger->after_matches, 40u);  // the threshold, found by the binary search
  EXPECT_EQ(b.when.for_, faults::Duration(1s));   // floors: nothing depends on them
  EXPECT_EQ(b.when.probability, 1.0);
  EXPECT_EQ(e.when.trigger->after_matches, 1u);
  EXPECT_EQ(e.when.for_, faults::Duration(1s));
  EXPECT_EQ(e.when.limit, 1u);
  // ids are sequential, whats name the change
  for (std::size_t i = 0; i < d.proposed.size(); ++i) {
    char id[32];
    std::snprintf(id, sizeof id, "cand-%03zu", i + 1);
    EXPECT_EQ(d.proposed[i].id, id);
  }
  EXPECT_TRUE(std::any_of(d.proposed.begin(), d.proposed.end(),
                          [](const Candidate& c) { return c.what == "faults[0] b: when.afterMatches 300 -> 151"; }));
  EXPECT_TRUE(std::any_of(d.proposed.begin(), d.proposed.end(),
                          [](const Candidate& c) { return c.what.rfind("without faults ", 0) == 0; }));
  // the comments of the rules left stay, those of the rules removed go with them
  EXPECT_NE(m.current_yaml().find("# b: the outage that matters"), std::string::npos);
  EXPECT_NE(m.current_yaml().find("# e: the relist after it"), std::string::npos);
  EXPECT_EQ(m.current_yaml().find("# a: a delay"), std::string::npos);
}

TEST(ExploreMinimize, MinimizedYamlLoadsAndReproduces) {
  Minimizer m(kSixRules, {"pods-bound"});
  drive(m, deterministic(six_rules_violate));
  const std::string text = m.minimized_yaml("minimized from plan write-503\ninvariants violated: pods-bound\n3/3 runs");
  EXPECT_EQ(text.rfind("# minimized from plan write-503\n# invariants violated: pods-bound\n# 3/3 runs\n", 0), 0u)
      << text;
  auto s = load(text);
  EXPECT_EQ(s->metadata.name, "six-rules-min");
  EXPECT_EQ(s->checks.expect, (std::vector<std::string>{"pods-bound"}));
  // no-unexpected-deletes was violated too, but is no target: not checked, so the verdict is `reproduced`
  EXPECT_EQ(s->checks.invariants_to_check(), (std::vector<std::string>{"pods-bound", "bound-to-live-node"}));
  EXPECT_EQ(s->faults.size(), 2u);
  EXPECT_NE(text.find("# the plan's scenario"), std::string::npos);  // edited in place: comments stay
}

TEST(ExploreMinimize, MinimizedYamlAddsChecksWhenThereAreNone) {
  std::string text = kSixRules;
  text = text.substr(0, text.find("checks:"));
  Minimizer m(text, {"pods-bound"}, 1);
  drive(
      m,
      [](const schema::Scenario& s, unsigned) {
        return six_rules_violate(s) ? RunOutcome{"fail", {"pods-bound"}} : RunOutcome{"pass", {}};
      },
      1);
  auto s = load(m.minimized_yaml(""));
  EXPECT_EQ(s->checks.expect, (std::vector<std::string>{"pods-bound"}));
  EXPECT_EQ(s->checks.invariants, std::nullopt);
}

TEST(ExploreMinimize, FlakyCandidatesAreNeverKept) {
  // violates in runs 0 and 1 of every candidate, never in run 2 (which passes, or fails otherwise)
  for (const RunOutcome& third : {RunOutcome{"pass", {}}, RunOutcome{"fail", {"no-unexpected-deletes"}}}) {
    Minimizer m(kSixRules, {"pods-bound"});
    drive(m, [&](const schema::Scenario&, unsigned run) {
      return run < 2 ? RunOutcome{"fail", {"pods-bound"}} : third;
    });
    EXPECT_TRUE(m.done());
    EXPECT_EQ(m.kept(), 0u);
    EXPECT_EQ(m.elements_left(), (std::vector<std::string>{"a", "b", "c", "d", "e", "f"}));
    EXPECT_EQ(m.current_yaml(), kSixRules);
  }
}

// 20 rules, all needed with their values: ddmin tests their subsets, then shrinking each limit takes
// 10 candidates (the floor, then a binary search up to 500); it stops at max_candidates.
TEST(ExploreMinimize, StopsAtTheCandidateBound) {
  std::string text = "apiVersion: faultline/v1\nkind: Scenario\nmetadata: {name: many}\nfaults:\n";
  for (int i = 0; i < 19; ++i)
    text += "  - {name: r" + std::to_string(i) + ", when: {limit: 500}, action: {type: reset}}\n";
  text += "  - name: last\n    when: {limit: 500}\n    action: {type: reset}\n";
  Minimizer m(text, {"pods-bound"}, 1);
  auto d = drive(
      m,
      [](const schema::Scenario& s, unsigned) {
        const bool all =
            s.faults.size() == 20 &&
            std::all_of(s.faults.begin(), s.faults.end(), [](const faults::Rule& r) { return r.when.limit >= 500u; });
        return all ? RunOutcome{"fail", {"pods-bound"}} : RunOutcome{"pass", {}};
      },
      1);
  EXPECT_TRUE(m.done());
  EXPECT_EQ(d.proposed.size(), max_candidates);
  EXPECT_EQ(m.next(), std::nullopt);
  const auto minimized = load(m.minimized_yaml(""));
  EXPECT_EQ(minimized->faults.size(), 20u);
  EXPECT_EQ(minimized->faults.front().when.limit, 500u);
}

TEST(ExploreMinimize, ErrorRunsAndOtherInvariantsAreNotKept) {
  {
    Minimizer m(kSixRules, {"pods-bound"});
    drive(m, [](const schema::Scenario&, unsigned) { return RunOutcome{"error", {"pods-bound"}}; });
    EXPECT_EQ(m.kept(), 0u);
  }
  {
    Minimizer m(kSixRules, {"pods-bound"});
    drive(m, [](const schema::Scenario&, unsigned) { return RunOutcome{"fail", {"no-unexpected-deletes"}}; });
    EXPECT_EQ(m.kept(), 0u);
  }
}

TEST(ExploreMinimize, EveryTargetStaysViolatedInEveryRun) {
  // b and e violate pods-bound; bound-to-live-node needs c too. A candidate without c violates
  // pods-bound only, another (weaker) failure than the plan's: it is not kept, so the result keeps
  // c and expects both.
  Minimizer m(kSixRules, {"pods-bound", "bound-to-live-node"});
  drive(m, [](const schema::Scenario& s, unsigned) {
    if (!six_rules_violate(s)) return RunOutcome{"pass", {}};
    if (!rule(s, "c")) return RunOutcome{"fail", {"pods-bound"}};
    return RunOutcome{"fail", {"pods-bound", "bound-to-live-node"}};
  });
  EXPECT_EQ(m.expect(), (std::vector<std::string>{"pods-bound", "bound-to-live-node"}));
  EXPECT_EQ(m.elements_left(), (std::vector<std::string>{"b", "c", "e"}));
  // ... and a target missed in one run of three is missed: no candidate is kept.
  Minimizer flaky(kSixRules, {"pods-bound", "bound-to-live-node"});
  drive(flaky, [](const schema::Scenario& s, unsigned run) {
    if (!six_rules_violate(s)) return RunOutcome{"pass", {}};
    if (run == 2) return RunOutcome{"fail", {"pods-bound"}};
    return RunOutcome{"fail", {"pods-bound", "bound-to-live-node"}};
  });
  EXPECT_EQ(flaky.kept(), 0u);
}

TEST(ExploreMinimize, StateRoundTripProposesTheSameCandidates) {
  Minimizer whole(kSixRules, {"pods-bound"});
  const auto reference = drive(whole, deterministic(six_rules_violate)).proposed;
  ASSERT_GT(reference.size(), 20u);
  // stopped in ddmin, at its end, in the middle of a binary search; with a candidate waiting
  // (proposed, not recorded) or not
  for (std::size_t stop : {std::size_t{0}, std::size_t{11}, std::size_t{15}, std::size_t{20}}) {
    for (bool waiting : {false, true}) {
      Minimizer a(kSixRules, {"pods-bound"});
      drive(a, deterministic(six_rules_violate), 3, stop);
      if (waiting) {
        ASSERT_TRUE(a.next());
      }
      Minimizer b = Minimizer::from_state_json(a.state_json());
      EXPECT_EQ(b.state_json(), a.state_json());
      const auto rest = drive(b, deterministic(six_rules_violate)).proposed;
      ASSERT_EQ(stop + rest.size(), reference.size()) << "stop " << stop;
      for (std::size_t i = 0; i < rest.size(); ++i) {
        EXPECT_EQ(rest[i].id, reference[stop + i].id);
        EXPECT_EQ(rest[i].what, reference[stop + i].what);
        EXPECT_EQ(rest[i].scenario_yaml, reference[stop + i].scenario_yaml);
      }
      EXPECT_EQ(b.minimized_yaml("h"), whole.minimized_yaml("h"));
    }
  }
}

TEST(ExploreMinimize, SameInputSameCandidates) {
  Minimizer a(kSixRules, {"pods-bound"});
  Minimizer b(kSixRules, {"pods-bound"});
  auto da = drive(a, deterministic(six_rules_violate));
  auto db = drive(b, deterministic(six_rules_violate));
  ASSERT_EQ(da.proposed.size(), db.proposed.size());
  for (std::size_t i = 0; i < da.proposed.size(); ++i)
    EXPECT_EQ(da.proposed[i].scenario_yaml, db.proposed[i].scenario_yaml);
}

TEST(ExploreMinimize, RecordChecksTheCandidate) {
  Minimizer m(kSixRules, {"pods-bound"});
  auto c = m.next();
  ASSERT_TRUE(c);
  EXPECT_EQ(c->id, "cand-001");
  EXPECT_EQ(m.next()->id, "cand-001");  // the same until recorded
  const std::vector<RunOutcome> three(3, RunOutcome{"pass", {}});
  Candidate other = *c;
  other.id = "cand-002";
  EXPECT_THROW(m.record(other, three), std::logic_error);
  other = *c;
  other.scenario_yaml += "\n";
  EXPECT_THROW(m.record(other, three), std::logic_error);
  EXPECT_THROW(m.record(*c, std::vector<RunOutcome>(2, RunOutcome{"pass", {}})), std::logic_error);
  m.record(*c, three);
  EXPECT_THROW(m.record(*c, three), std::logic_error);  // twice
  EXPECT_EQ(m.next()->id, "cand-002");
}

// A component fault whose downFor matters, a pause that needs its resume (a candidate without the
// resume does not load and is skipped), rules that do not matter.
const char* const kComponents = R"(apiVersion: faultline/v1
kind: Scenario
metadata:
  name: components
faults:
  - name: slow
    action: {type: delay, latency: 500ms}
componentFaults:
  - name: pause-scheduler
    target: scheduler
    action: pause
    when: {at: 5s}
  - name: resume-scheduler
    target: scheduler
    action: resume
    when: {at: 8s}
  - name: kill-apiserver
    target: kube-apiserver
    action: kill
    downFor: 1m30s
    when: {at: 20s}
)";

TEST(ExploreMinimize, ComponentFaultsAndDurations) {
  Minimizer m(kComponents, {"pods-bound"});
  auto d = drive(m, deterministic([](const schema::Scenario& s) {
                   for (const auto& f : s.component_faults)
                     if (f.name == "kill-apiserver") return f.down_for >= faults::Duration(7s);
                   return false;
                 }));
  EXPECT_EQ(m.elements_left(), (std::vector<std::string>{"kill-apiserver"}));
  // the pause without its resume does not load: never proposed
  ASSERT_EQ(m.skipped().size(), 1u);
  EXPECT_EQ(m.skipped()[0], "without componentFaults resume-scheduler, kill-apiserver: the scenario loader refuses it");
  for (const auto& c : d.proposed)
    EXPECT_FALSE(c.scenario_yaml.find("pause-scheduler") != std::string::npos &&
                 c.scenario_yaml.find("resume-scheduler") == std::string::npos);
  auto s = load(m.current_yaml());
  EXPECT_TRUE(s->faults.empty());  // the emptied list went with its key
  ASSERT_EQ(s->component_faults.size(), 1u);
  EXPECT_EQ(s->component_faults[0].down_for, faults::Duration(7s));
  EXPECT_EQ(s->component_faults[0].at, faults::Duration(0s));
  EXPECT_EQ(m.current_yaml().find("faults:"), std::string::npos);
  EXPECT_NE(m.current_yaml().find("downFor: 7s"), std::string::npos);
  EXPECT_TRUE(std::any_of(d.proposed.begin(), d.proposed.end(), [](const Candidate& c) {
    return c.what == "componentFaults[0] kill-apiserver: downFor 1m30s -> 46s";
  }));
  auto text = m.minimized_yaml("x");
  EXPECT_EQ(load(text)->checks.expect, (std::vector<std::string>{"pods-bound"}));
}

// A value written in milliseconds is searched in milliseconds, down to the 1s floor.
TEST(ExploreMinimize, MillisecondDurations) {
  const std::string text = R"(apiVersion: faultline/v1
kind: Scenario
metadata: {name: ms}
faults:
  - {name: slow, action: {type: delay, latency: 1500ms}}
  - {name: slower, action: {type: delay, latency: 700ms}}
)";
  Minimizer m(text, {"pods-bound"}, 1);
  auto d = drive(
      m,
      [](const schema::Scenario& s, unsigned) {
        const auto* slow = rule(s, "slow");
        const bool violates =
            slow && std::get<faults::actions::Delay>(slow->action).latency >= faults::Duration(1200ms);
        return violates ? RunOutcome{"fail", {"pods-bound"}} : RunOutcome{"pass", {}};
      },
      1);
  EXPECT_EQ(m.elements_left(), (std::vector<std::string>{"slow"}));
  EXPECT_EQ(std::get<faults::actions::Delay>(rule(*load(m.current_yaml()), "slow")->action).latency,
            faults::Duration(1200ms));
  EXPECT_NE(m.current_yaml().find("latency: 1200ms}"), std::string::npos) << m.current_yaml();
  EXPECT_EQ(d.proposed[1].what, "faults[0] slow: action.latency 1500ms -> 1000ms");  // the floor first
}

TEST(ExploreMinimize, FlowStyleListsAreWrittenOutAgain) {
  const std::string text = R"(apiVersion: faultline/v1
kind: Scenario
metadata: {name: flow}
faults: [{name: x, action: {type: reset}}, {name: y, when: {limit: 9}, action: {type: close}}]
)";
  Minimizer m(text, {"pods-bound"}, 1);
  drive(
      m,
      [](const schema::Scenario& s, unsigned) {
        return rule(s, "y") ? RunOutcome{"fail", {"pods-bound"}} : RunOutcome{"pass", {}};
      },
      1);
  EXPECT_EQ(m.elements_left(), (std::vector<std::string>{"y"}));
  auto s = load(m.minimized_yaml(""));
  ASSERT_EQ(s->faults.size(), 1u);
  EXPECT_EQ(s->faults[0].when.limit, 1u);
}

// A declared check the runs violated beyond the target is always checked: it is removed, with its
// comment, so that the minimized scenario ends `reproduced`.
TEST(ExploreMinimize, DeclaredChecksViolatedBeyondExpectAreRemoved) {
  const std::string text = faultline::testing::slurp(std::string(FAULTLINE_SOURCE_DIR) +
                                                     "/harness/scenarios/daemonset-stale-duplicates.yaml");
  ASSERT_EQ(load(text)->checks.declared.size(), 2u);
  Minimizer m(text, {"one-daemon-pod-per-node"}, 1);
  drive(
      m,
      [](const schema::Scenario& s, unsigned) {
        return rule(s, "stale-pod-relist") ? RunOutcome{"fail", {"one-daemon-pod-per-node", "every-node-has-its-pod"}}
                                           : RunOutcome{"pass", {}};
      },
      1);
  EXPECT_EQ(m.elements_left(), (std::vector<std::string>{"stale-pod-relist"}));
  const std::string out = m.minimized_yaml("");
  auto s = load(out);
  ASSERT_EQ(s->checks.declared.size(), 1u);
  EXPECT_EQ(s->checks.declared[0].name, "one-daemon-pod-per-node");
  EXPECT_EQ(s->checks.expect, (std::vector<std::string>{"one-daemon-pod-per-node"}));
  EXPECT_EQ(out.find("# Every node gets its daemon pod"), std::string::npos) << out;
  EXPECT_NE(out.find("# At no moment two daemon pods"), std::string::npos) << out;
}

// All declared checks go, and their key with them; the text is still edited in place.
TEST(ExploreMinimize, EveryDeclaredCheckRemoved) {
  std::string text = faultline::testing::slurp(std::string(FAULTLINE_SOURCE_DIR) +
                                               "/harness/scenarios/daemonset-stale-duplicates.yaml");
  const auto at = text.find("  invariants: []\n");
  ASSERT_NE(at, std::string::npos);
  text.replace(at, 17, "  invariants: [pods-bound]\n");
  Minimizer m(text, {"pods-bound"}, 1);
  drive(
      m,
      [](const schema::Scenario& s, unsigned) {
        return rule(s, "stale-pod-relist")
                   ? RunOutcome{"fail", {"pods-bound", "one-daemon-pod-per-node", "every-node-has-its-pod"}}
                   : RunOutcome{"pass", {}};
      },
      1);
  const std::string out = m.minimized_yaml("");
  auto s = load(out);
  EXPECT_TRUE(s->checks.declared.empty());
  EXPECT_EQ(s->checks.expect, (std::vector<std::string>{"pods-bound"}));
  EXPECT_EQ(out.find("declared:"), std::string::npos) << out;
  EXPECT_EQ(out.find("# At no moment two daemon pods"), std::string::npos) << out;
  EXPECT_NE(out.find(text.substr(0, text.find('\n'))), std::string::npos) << out;  // the file's first comment
}

// The shipped YUNIKORN-3355 scenario: both rules are needed; its own `expect` is replaced in place.
TEST(ExploreMinimize, ShippedScenarioKeepsItsCommentsAndGetsItsExpect) {
  const std::string text =
      faultline::testing::slurp(std::string(FAULTLINE_SOURCE_DIR) + "/harness/scenarios/yunikorn-3355-outage.yaml");
  Minimizer m(text, {"queue-accounting", "pods-bound"}, 2);
  auto d = drive(
      m,
      [](const schema::Scenario& s, unsigned) {
        const auto* outage = rule(s, "outage-mid-bind");
        const auto* relist = rule(s, "relist-after-outage");
        const bool violates =
            outage && relist && outage->when.trigger->after_matches >= 100 && outage->when.for_ >= faults::Duration(5s);
        return violates ? RunOutcome{"reproduced", {"pods-bound", "queue-accounting"}} : RunOutcome{"fail", {}};
      },
      2);
  EXPECT_EQ(m.elements_left(), (std::vector<std::string>{"outage-mid-bind", "relist-after-outage"}));
  EXPECT_EQ(d.proposed.front().what, "without faults relist-after-outage");
  EXPECT_LE(d.proposed.size(), 17u);
  const std::string out = m.minimized_yaml("from yunikorn-3355-outage");
  auto s = load(out);
  EXPECT_EQ(s->metadata.name, "yunikorn-3355-outage-min");
  EXPECT_EQ(s->checks.expect, (std::vector<std::string>{"queue-accounting", "pods-bound"}));
  EXPECT_EQ(rule(*s, "outage-mid-bind")->when.trigger->after_matches, 100u);
  EXPECT_EQ(rule(*s, "outage-mid-bind")->when.for_, faults::Duration(5s));
  EXPECT_EQ(rule(*s, "relist-after-outage")->when.trigger->after_matches, 1u);
  EXPECT_EQ(rule(*s, "relist-after-outage")->when.for_, faults::Duration(1s));
  EXPECT_NE(out.find("#  1. The core allocates pod P on node N."), std::string::npos);
  EXPECT_NE(out.find("  expect: [queue-accounting, pods-bound]\n"), std::string::npos) << out;
  EXPECT_NE(out.find("when: {afterMatches: 100, of: {verbs: [create], resources: [pods/binding]}, for: 5s, limit: 1}"),
            std::string::npos)
      << out;
}

TEST(ExploreMinimize, BadInputThrows) {
  auto message = [](auto&& f) {
    try {
      f();
    } catch (const std::invalid_argument& e) {
      return std::string(e.what());
    }
    return std::string("no exception");
  };
  const std::string no_faults = "apiVersion: faultline/v1\nkind: Scenario\nmetadata: {name: none}\n";
  EXPECT_NE(message([&] { Minimizer(no_faults, {"pods-bound"}); }).find("no fault rule and no component fault"),
            std::string::npos);
  EXPECT_NE(message([&] { Minimizer(kSixRules, {"queue-accounting"}); }).find("\"queue-accounting\" is not checked"),
            std::string::npos);
  EXPECT_NE(message([&] { Minimizer(kSixRules, {"pods-bund"}); }).find("\"pods-bund\""), std::string::npos);
  EXPECT_NE(message([&] { Minimizer(kSixRules, {}); }).find("no target invariant"), std::string::npos);
  EXPECT_NE(message([&] { Minimizer(kSixRules, {"pods-bound"}, 0); }).find("repeats"), std::string::npos);
  EXPECT_NE(message([&] { Minimizer("kind: [", {"pods-bound"}); }).find("does not load"), std::string::npos);

  Minimizer m(kSixRules, {"pods-bound"});
  drive(m, deterministic(six_rules_violate), 3, 5);
  const std::string state = m.state_json();
  EXPECT_NE(message([&] { Minimizer::from_state_json("{"); }).find("not JSON"), std::string::npos);
  EXPECT_NE(message([&] { Minimizer::from_state_json("[]"); }).find("not a JSON object"), std::string::npos);
  auto without = [&](const std::string& key, const std::string& replacement) {
    std::string s = state;
    const auto at = s.find("\"" + key + "\":");
    EXPECT_NE(at, std::string::npos) << key;
    s.replace(at, key.size() + 3, replacement);
    return s;
  };
  for (const char* key : {"position", "granularity", "tested", "nextId", "scenario", "phase", "pending"}) {
    EXPECT_NE(message([&] {
                Minimizer::from_state_json(without(key, "\"renamed\":"));
              }).find(std::string("\"") + key + "\": missing"),
              std::string::npos)
        << key;
  }
  EXPECT_NE(message([&] {
              Minimizer::from_state_json(without("nextId", "\"nextId\":\"7\",\"x\":"));
            }).find("\"nextId\": not a whole number"),
            std::string::npos);
  EXPECT_NE(
      message([&] { Minimizer::from_state_json(without("phase", "\"phase\":\"later\",\"x\":")); }).find("\"phase\""),
      std::string::npos);
  EXPECT_NE(message([&] {
              Minimizer::from_state_json(without("left", "\"left\":[99],\"x\":"));
            }).find("\"left\": index 99 out of range"),
            std::string::npos);
}

TEST(ExploreMinimize, OutcomeOfRealReports) {
  const std::string dir = std::string(FAULTLINE_TEST_DATA_DIR) + "/harness/explore/";
  auto reproduced = outcome_of_report(faultline::testing::slurp(dir + "min-report-reproduced.json"));
  EXPECT_EQ(reproduced.verdict, "reproduced");
  EXPECT_EQ(reproduced.violated, (std::vector<std::string>{"one-daemon-pod-per-node"}));
  auto failed = outcome_of_report(faultline::testing::slurp(dir + "min-report-fail.json"));
  EXPECT_EQ(failed.verdict, "fail");
  EXPECT_TRUE(failed.violated.empty());  // the expected violation did not happen
  EXPECT_THROW(outcome_of_report("{"), std::invalid_argument);
  EXPECT_THROW(outcome_of_report(R"({"checks": []})"), std::invalid_argument);
  EXPECT_THROW(outcome_of_report(R"({"verdict": "maybe", "checks": []})"), std::invalid_argument);
  EXPECT_THROW(outcome_of_report(R"({"verdict": "pass", "checks": [{"name": 1}]})"), std::invalid_argument);
}

}  // namespace
}  // namespace faultline::harness::explore
