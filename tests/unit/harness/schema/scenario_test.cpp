// Good scenario files load with every value as written (tests/data/scenarios/good/).
#include <gtest/gtest.h>

#include "faultline/harness/schema/scenario.hpp"
#include "scenario_helpers.hpp"

namespace faultline::harness::schema {
namespace {

using namespace faults;

using namespace std::chrono_literals;

std::shared_ptr<const Scenario> load_good(const char* file) {
  return load_scenario_file(std::string(FAULTLINE_TEST_DATA_DIR) + "/scenarios/good/" + file);
}

const Rule& rule_named(const Scenario& scenario, std::string_view name) {
  for (const auto& rule : scenario.faults)
    if (rule.name == name) return rule;
  throw std::runtime_error("no rule " + std::string(name));
}

TEST(GoodScenario, HeaderAndSeed) {
  auto s = load_good("full.yaml");
  EXPECT_EQ(s->metadata.name, "every-key");
  EXPECT_EQ(s->metadata.description, "a scenario that uses every key");
  EXPECT_EQ(s->seed, 3355u);
  EXPECT_NE(s->source.find("full.yaml"), std::string::npos);
}

TEST(GoodScenario, Workload) {
  auto s = load_good("full.yaml");
  ASSERT_TRUE(s->workload);
  const Workload& w = *s->workload;
  EXPECT_EQ(w.namespace_, "chaos");
  EXPECT_EQ(w.nodes.count, 500u);
  EXPECT_EQ(w.nodes.capacity,
            (std::map<std::string, std::string>{{"cpu", "32"}, {"memory", "256Gi"}, {"pods", "110"}}));
  ASSERT_EQ(w.phases.size(), 4u);
  const Phase& burst = w.phases[0];
  EXPECT_EQ(burst.name, "burst");
  EXPECT_EQ(burst.pods, 3000u);
  EXPECT_EQ(burst.rate, 2000.0);
  EXPECT_EQ(burst.concurrency, 16u);
  EXPECT_EQ(burst.start.kind, PhaseStart::Kind::after_previous);
  EXPECT_EQ(burst.pod_template.scheduler_name, "yunikorn");
  EXPECT_EQ(burst.pod_template.labels.at("queue"), "root.default");
  EXPECT_EQ(burst.pod_template.annotations.at("note"), "first");
  EXPECT_EQ(burst.pod_template.requests.at("cpu"), "10m");
  EXPECT_EQ(burst.pod_template.limits.at("memory"), "32Mi");
  EXPECT_EQ(burst.pod_template.node_selector.at("type"), "kwok");
  EXPECT_EQ(burst.pod_template.priority_class_name, "high");
  EXPECT_EQ(w.phases[1].start.kind, PhaseStart::Kind::offset);
  EXPECT_EQ(w.phases[1].start.offset, Duration{30s});
  EXPECT_EQ(w.phases[1].rate, std::nullopt);
  EXPECT_EQ(w.phases[1].concurrency, 8u);  // the default
  EXPECT_EQ(w.phases[2].start.kind, PhaseStart::Kind::settled);
  EXPECT_EQ(w.phases[2].pod_template.labels.at("applicationId"), "burst-2");
  EXPECT_EQ(w.phases[2].pod_template.scheduler_name, "");
}

TEST(GoodScenario, NodeFlapStep) {
  auto s = load_good("full.yaml");
  const Phase& flap = s->workload->phases.at(3);
  EXPECT_EQ(flap.name, "flap");
  EXPECT_EQ(flap.pods, 0u);
  EXPECT_EQ(flap.start.kind, PhaseStart::Kind::offset);
  EXPECT_EQ(flap.start.offset, Duration{10s});
  ASSERT_TRUE(flap.node_flap);
  EXPECT_EQ(flap.node_flap->nodes, 20u);
  EXPECT_EQ(flap.node_flap->down_for, Duration{5s});
  EXPECT_FALSE(s->workload->phases[0].node_flap);
}

TEST(GoodScenario, ComponentFaults) {
  auto s = load_good("full.yaml");
  ASSERT_EQ(s->component_faults.size(), 5u);
  const ComponentFault& kill = s->component_faults[0];
  EXPECT_EQ(kill.name, "apiserver-kill");
  EXPECT_EQ(kill.target, Component::kube_apiserver);
  EXPECT_EQ(kill.action, ComponentAction::kill);
  EXPECT_EQ(kill.down_for, Duration{10s});
  EXPECT_EQ(kill.at, Duration{5s});
  ASSERT_TRUE(kill.trigger);
  EXPECT_EQ(kill.trigger->after_matches, 300u);
  EXPECT_EQ(kill.trigger->of.resources, std::vector<std::string>{"pods/binding"});
  const ComponentFault& pause = s->component_faults[1];
  EXPECT_EQ(pause.target, Component::kwok);
  EXPECT_EQ(pause.action, ComponentAction::pause);
  EXPECT_EQ(pause.down_for, std::nullopt);  // until kwok-resume
  EXPECT_EQ(pause.at, Duration{1min});
  EXPECT_FALSE(pause.trigger);
  EXPECT_EQ(s->component_faults[2].action, ComponentAction::resume);
  EXPECT_EQ(s->component_faults[3].target, Component::scheduler);
  EXPECT_EQ(s->component_faults[3].at, Duration{0s});
  EXPECT_EQ(s->component_faults[3].down_for, Duration{3s});
  EXPECT_EQ(s->component_faults[4].target, Component::etcd);
  EXPECT_EQ(s->component_faults[4].action, ComponentAction::restart);
}

// Time zero is the arming of the proxy; a trigger then waits for its count of requests after `at`.
TEST(ComponentFaultTrigger, FiresAtItsTimeAndItsCount) {
  auto s = load_good("full.yaml");
  const ComponentFault& kill = s->component_faults[0];  // at 5s, afterMatches 300
  EXPECT_FALSE(component_fault_due(kill, Duration{4999ms}, 1000));
  EXPECT_FALSE(component_fault_due(kill, Duration{5s}, 299));
  EXPECT_TRUE(component_fault_due(kill, Duration{5s}, 300));
  const ComponentFault& pause = s->component_faults[1];  // at 1m, no trigger
  EXPECT_FALSE(component_fault_due(pause, Duration{59s}, 0));
  EXPECT_TRUE(component_fault_due(pause, Duration{1min}, 0));
}

TEST(GoodScenario, TriggeredOutageRule) {
  auto s = load_good("full.yaml");
  const Rule& rule = rule_named(*s, "outage-mid-bind");
  EXPECT_TRUE(rule.match.empty());
  ASSERT_TRUE(rule.when.trigger);
  EXPECT_EQ(rule.when.trigger->after_matches, 300u);
  EXPECT_EQ(rule.when.trigger->of.verbs, std::vector<std::string>{"create"});
  EXPECT_EQ(rule.when.trigger->of.resources, std::vector<std::string>{"pods/binding"});
  EXPECT_EQ(rule.when.for_, Duration{10s});
  EXPECT_EQ(std::get<actions::Outage>(rule.action).mode, actions::Outage::Mode::reset);
}

TEST(GoodScenario, EveryMatchAndWhenKey) {
  auto s = load_good("full.yaml");
  const Rule& rule = rule_named(*s, "throttle");
  EXPECT_EQ(rule.match.verbs, (std::vector<std::string>{"create", "patch"}));
  EXPECT_EQ(rule.match.resources, (std::vector<std::string>{"pods/binding", "pods/status", "deployments.apps"}));
  EXPECT_EQ(rule.match.namespaces, (std::vector<std::string>{"chaos", "team-*"}));
  EXPECT_EQ(rule.match.names, std::vector<std::string>{"burst-*"});
  EXPECT_EQ(rule.match.user_agents, std::vector<std::string>{"yunikorn*"});
  EXPECT_EQ(rule.match.paths, std::vector<std::string>{"/api/*"});
  ASSERT_EQ(rule.match.headers.size(), 1u);
  EXPECT_EQ(rule.match.headers[0].name, "X-Faultline");
  EXPECT_EQ(rule.match.headers[0].value, "on");
  EXPECT_EQ(rule.when.at, Duration{90s});
  EXPECT_EQ(rule.when.for_, Duration{2min});
  EXPECT_EQ(rule.when.probability, 0.25);
  EXPECT_EQ(rule.when.limit, 100u);
  EXPECT_EQ(rule.when.every, 2u);
  const auto& respond = std::get<actions::Respond>(rule.action);
  EXPECT_EQ(respond.code, 429);
  EXPECT_EQ(respond.reason, "TooManyRequests");
  EXPECT_EQ(respond.message, "slow down");
  EXPECT_EQ(respond.retry_after, Duration{2s});
}

TEST(GoodScenario, EveryActionType) {
  auto s = load_good("full.yaml");
  std::vector<std::string_view> types;
  for (const auto& rule : s->faults) types.push_back(action_type(rule.action));
  std::sort(types.begin(), types.end());
  std::vector<std::string_view> known(known_action_types().begin(), known_action_types().end());
  std::sort(known.begin(), known.end());
  EXPECT_EQ(types, known);
  EXPECT_EQ(std::get<actions::Delay>(rule_named(*s, "slow").action).jitter, Duration{50});
  EXPECT_EQ(std::get<actions::Hang>(rule_named(*s, "stuck").action).duration, Duration{1h});
  EXPECT_EQ(std::get<actions::DropResponse>(rule_named(*s, "lost").action).then, actions::DropResponse::Then::close);
  EXPECT_EQ(std::get<actions::WatchReset>(rule_named(*s, "cut").action).after_events, 100u);
  EXPECT_EQ(std::get<actions::WatchGone>(rule_named(*s, "expire").action).after_events, 5u);
  EXPECT_EQ(std::get<actions::WatchInject>(rule_named(*s, "ghost-delete").action).object_json,
            R"({"kind":"Pod","apiVersion":"v1","metadata":{"name":"ghost","namespace":"chaos"}})");
  EXPECT_EQ(std::get<actions::WatchDrop>(rule_named(*s, "forget").action).count, 2u);
}

TEST(GoodScenario, Checks) {
  auto s = load_good("full.yaml");
  EXPECT_EQ(s->checks.settle, Duration{2min});
  EXPECT_EQ(s->checks.invariants_to_check(),
            (std::vector<std::string>{"pods-bound", "queue-accounting", "no-orphan-allocations",
                                      "no-unexpected-deletes", "bound-to-live-node"}));
  EXPECT_EQ(s->checks.expect, (std::vector<std::string>{"pods-bound", "queue-accounting"}));
}

TEST(GoodScenario, MinimalScenarioGetsDefaults) {
  auto s = load_good("minimal.yaml");
  EXPECT_EQ(s->metadata.name, "minimal");
  EXPECT_EQ(s->seed, 0u);
  EXPECT_FALSE(s->workload);
  EXPECT_TRUE(s->faults.empty());
  EXPECT_EQ(s->checks.settle, Duration{120s});
  EXPECT_FALSE(s->checks.invariants);
  EXPECT_EQ(s->checks.invariants_to_check(),
            (std::vector<std::string>{"pods-bound", "no-unexpected-deletes", "bound-to-live-node"}));
  EXPECT_TRUE(s->checks.expect.empty());
}

std::shared_ptr<const Scenario> with_checks(const std::string& checks_yaml) {
  return load_scenario_text(
      "apiVersion: faultline/v1\nkind: Scenario\nmetadata: {name: unit}\nchecks: " + checks_yaml + "\n", "unit.yaml");
}

// The default set is the scheduler-agnostic invariants: a scenario that says nothing about its
// checks runs on kube-scheduler without a skipped check.
TEST(GoodScenario, LeavingInvariantsOutChecksTheSchedulerAgnosticDefaults) {
  auto names = with_checks("{settle: 30s}")->checks.invariants_to_check();
  EXPECT_EQ(names, default_invariant_names());
  EXPECT_FALSE(names.empty());
  for (const auto& name : names) {
    ASSERT_NE(find_invariant(name), nullptr) << name;
    EXPECT_FALSE(find_invariant(name)->needs_yunikorn) << name;
  }
}

TEST(GoodScenario, AnExplicitEmptyInvariantListChecksNothing) {
  auto s = with_checks("{invariants: []}");
  ASSERT_TRUE(s->checks.invariants);
  EXPECT_TRUE(s->checks.invariants->empty());
  EXPECT_TRUE(s->checks.invariants_to_check().empty());
}

TEST(BadScenario, ExpectingAViolationOfAnEmptyInvariantListIsAnError) {
  try {
    with_checks("{invariants: [], expect: [pods-bound]}");
    FAIL() << "loaded";
  } catch (const ScenarioError& e) {
    EXPECT_NE(std::string(e.what()).find("checks.expect[0]: \"pods-bound\" is not listed in checks.invariants"),
              std::string::npos)
        << e.what();
  }
}

// Without `invariants`, expect may name any default invariant (and only those).
TEST(GoodScenario, ExpectWithoutInvariantsIsCheckedAgainstTheDefaults) {
  EXPECT_EQ(with_checks("{expect: [pods-bound]}")->checks.expect, (std::vector<std::string>{"pods-bound"}));
  EXPECT_THROW(with_checks("{expect: [queue-accounting]}"), ScenarioError);
}

TEST(GoodScenario, TheDesignDocumentExampleLoads) {
  auto s = load_scenario_text(R"(apiVersion: faultline/v1
kind: Scenario
metadata: {name: yunikorn-3355-outage, description: apiserver outage while binds are in flight}
seed: 3355
workload:
  namespace: faultline
  nodes: {count: 500, capacity: {cpu: "32", memory: 256Gi, pods: "110"}}
  phases:
    - {name: burst, pods: 3000, rate: 2000, concurrency: 16,
       template: {schedulerName: yunikorn, labels: {applicationId: burst-1, queue: root.default},
                  requests: {cpu: 10m, memory: 16Mi}}}
    - {name: afterwards, start: settled, pods: 50, template: {labels: {applicationId: burst-2}}}
faults:
  - name: outage-mid-bind
    match: {}                                        # everything the scheduler sends
    when: {afterMatches: 300, of: {verbs: [create], resources: [pods/binding]}, for: 10s}
    action: {type: outage, mode: reset}               # reset live connections, refuse new ones
checks:
  settle: 120s
  invariants: [pods-bound, queue-accounting, no-orphan-allocations, no-unexpected-deletes]
  expect: [pods-bound, queue-accounting]              # a reproduction: these MUST be violated
)",
                              "design.yaml");
  EXPECT_EQ(s->faults.size(), 1u);
  EXPECT_EQ(s->workload->phases.size(), 2u);
}

// yunikorn-3355-exact: K binds held once and reset together (K in both places); the restart and
// the relist are triggered by the bind of the one pod created after the burst settled, never by a
// count of the burst's binds (which 429 retries inflate), and the restart by a component fault,
// which counts the bind once it was answered.
TEST(ShippedScenario, Yunikorn3355ExactHoldsKBindsOnceThenRelistsAfterTheBurst) {
  auto s = load_scenario_file(std::string(FAULTLINE_SOURCE_DIR) + "/harness/scenarios/yunikorn-3355-exact.yaml");
  ASSERT_EQ(s->faults.size(), 2u);
  const auto& hold = std::get<actions::Hold>(s->faults[0].action);
  EXPECT_EQ(hold.then, actions::Hold::Then::reset);
  ASSERT_TRUE(hold.count && s->faults[0].when.limit);
  EXPECT_EQ(*hold.count, *s->faults[0].when.limit);
  ASSERT_TRUE(s->workload && s->workload->phases.size() == 2u);
  const auto& relist = s->workload->phases[1];
  EXPECT_EQ(relist.start.kind, PhaseStart::Kind::settled);
  EXPECT_EQ(relist.pods, 1u);
  const auto bind_of = [](const std::string& pod) {
    return make_request("POST", "/api/v1/namespaces/faultline/pods/" + pod + "/binding");
  };
  ASSERT_EQ(s->component_faults.size(), 1u);
  const auto& restart = s->component_faults[0];
  EXPECT_EQ(restart.action, ComponentAction::restart);
  EXPECT_EQ(restart.target, Component::kube_apiserver);
  ASSERT_TRUE(restart.trigger && s->faults[1].when.trigger);
  for (const auto* trigger : {&*restart.trigger, &*s->faults[1].when.trigger}) {
    EXPECT_EQ(trigger->after_matches, 1u);
    EXPECT_TRUE(trigger->of.matches(bind_of(relist.name + "-00001")));
    EXPECT_FALSE(trigger->of.matches(bind_of(s->workload->phases[0].name + "-00301")));
  }
  EXPECT_EQ(action_type(s->faults[1].action), "watch-gone");
}

}  // namespace
}  // namespace faultline::harness::schema
