// System files (docs/systems.md): the shipped ones load with the values the stack relied on before
// they existed, placeholders fill, and bad files give exactly these errors.
#include "faultline/harness/schema/system.hpp"

#include <gtest/gtest.h>
#include <boost/json.hpp>

#include "faultline/faults/scenario.hpp"

namespace faultline::harness::schema {
namespace {

namespace fs = std::filesystem;

fs::path shipped() { return fs::path(FAULTLINE_SOURCE_DIR) / "harness" / "systems"; }

std::vector<std::string> errors_of(const std::string& text) {
  try {
    load_system_text(text, "s.yaml", "/sys");
  } catch (const faults::ScenarioError& e) {
    return e.errors();
  }
  return {};
}

const std::string kMinimal =
    "apiVersion: faultline/v1\n"
    "kind: System\n"
    "metadata: {name: labeller}\n"
    "identity: {user: faultline:labeller}\n"
    "command: [bash, -c, 'kubectl --kubeconfig {kubeconfig} get pods']\n"
    "ready: {command: [\"true\"]}\n";

TEST(SystemFile, ShippedYunikornKeepsTheStacksValues) {
  System s = load_system_file(resolve_system("yunikorn", shipped()));
  EXPECT_EQ(s.name, "yunikorn");
  EXPECT_EQ(s.build.component, "yunikorn-scheduler");
  EXPECT_EQ(s.identity.user, "faultline:yunikorn");
  EXPECT_EQ(s.identity.cluster_roles,
            (std::vector<std::string>{"faultline:yunikorn", "system:kube-scheduler", "system:volume-scheduler"}));
  EXPECT_EQ(s.exclusive_port, 9080);
  EXPECT_EQ(s.scheduler_name, "yunikorn");
  EXPECT_EQ(s.yunikorn_rest, "http://127.0.0.1:9080");
  EXPECT_EQ(s.env.at("NAMESPACE"), "yunikorn");
  ASSERT_EQ(s.manifests.size(), 1u);
  EXPECT_TRUE(fs::is_regular_file(s.manifests[0])) << s.manifests[0];
  ASSERT_EQ(s.config_maps.size(), 1u);
  EXPECT_TRUE(fs::is_regular_file(s.config_maps[0].files.at("queues.yaml")));
}

TEST(SystemFile, ShippedKubeSchedulerAndControllerManagerLoad) {
  System ks = load_system_file(resolve_system("kube-scheduler", shipped()));
  EXPECT_EQ(ks.identity.user, "system:kube-scheduler");
  EXPECT_EQ(ks.scheduler_name, "default-scheduler");
  EXPECT_TRUE(ks.yunikorn_rest.empty());
  EXPECT_EQ(ks.ready.https, "https://127.0.0.1:{port}/readyz");
  System kcm = load_system_file(resolve_system("kube-controller-manager", shipped()));
  EXPECT_EQ(kcm.identity.user, "system:kube-controller-manager");
  EXPECT_EQ(kcm.build.component, "kube-controller-manager");
  EXPECT_TRUE(kcm.scheduler_name.empty());
  EXPECT_NE(std::find(kcm.command.begin(), kcm.command.end(), "--leader-elect=false"), kcm.command.end());
  EXPECT_NE(std::find(kcm.command.begin(), kcm.command.end(), "--use-service-account-credentials=false"),
            kcm.command.end());
  EXPECT_EQ(kcm.ready.https, "https://127.0.0.1:{port}/healthz");
}

// Airflow is hooks only (scripts/airflow), beside kube-scheduler, added to the airflow-* scenarios,
// its variant in FAULTLINE_AIRFLOW_VARIANT as scripts/airflow reads it.
TEST(SystemFile, ShippedAirflowIsHooksBesideKubeScheduler) {
  System s = load_system_file(resolve_system("airflow", shipped()));
  EXPECT_TRUE(s.command.empty());
  EXPECT_EQ(s.needs, (std::vector<std::string>{"kube-scheduler"}));
  EXPECT_EQ(s.scenarios, (std::vector<std::string>{"airflow-*"}));
  ASSERT_TRUE(s.variant.has_value());
  EXPECT_EQ(s.variant->env, "FAULTLINE_AIRFLOW_VARIANT");
  EXPECT_EQ(s.variant->default_value, "affected");
  EXPECT_EQ(s.variant->values, (std::vector<std::string>{"affected", "fixed"}));
  EXPECT_EQ(s.hooks.start_when, "armed");
  EXPECT_EQ(s.hooks.timeout, std::chrono::seconds(1800));
  System f = fill_placeholders(s, {{"run_dir", "/run"}, {"system_dir", shipped().string()}});
  const std::string airflow = (shipped() / ".." / ".." / "scripts" / "airflow").string();
  EXPECT_EQ(f.hooks.up, (std::vector<std::string>{airflow, "up", "--run-dir", "/run"}));
  EXPECT_EQ(f.hooks.start, (std::vector<std::string>{airflow, "start", "--run-dir", "/run"}));
  ASSERT_EQ(f.hooks.after.size(), 1u);
  EXPECT_EQ(f.hooks.after[0].command, (std::vector<std::string>{airflow, "states", "--run-dir", "/run"}));
  EXPECT_EQ(f.hooks.after[0].output, "airflow-states-after.txt");
  EXPECT_EQ(f.hooks.collect.at("airflow-states-before.txt"), "/run/airflow/states-before.txt");
  EXPECT_EQ(f.hooks.down, (std::vector<std::string>{airflow, "down", "--run-dir", "/run"}));
  EXPECT_TRUE(fs::is_regular_file(airflow));
  // explore pauses scheduler 1 (airflow-scheduler), below and beyond its 15 s heartbeat threshold.
  ASSERT_EQ(s.explore_components.size(), 1u);
  EXPECT_EQ(s.explore_components[0], (ExploreComponent{Component::airflow_scheduler,
                                                       {"airflow-scheduler-1 *"},
                                                       {ComponentAction::pause},
                                                       {std::chrono::seconds(10), std::chrono::seconds(40)}}));
}

// explore.components: defaults (the actions the target takes, 10s), and the JSON; the systems that
// declare none keep explore's default components.
TEST(SystemFile, ExploreComponentsDefaultsAndJson) {
  System s = load_system_text(kMinimal +
                                  "explore:\n  components:\n    - {target: scheduler, userAgents: ['op/*']}\n"
                                  "    - {target: airflow-scheduler, userAgents: ['a *', 'b *'], downFor: [1m30s]}\n",
                              "s.yaml", "/sys");
  ASSERT_EQ(s.explore_components.size(), 2u);
  EXPECT_EQ(s.explore_components[0], (ExploreComponent{Component::scheduler,
                                                       {"op/*"},
                                                       {ComponentAction::kill, ComponentAction::pause},
                                                       {std::chrono::seconds(10)}}));
  EXPECT_EQ(s.explore_components[1].actions, std::vector<ComponentAction>{ComponentAction::pause});
  EXPECT_EQ(
      boost::json::serialize(system_json(s).as_object().at("explore")),
      R"({"components":[{"target":"scheduler","userAgents":["op/*"],"actions":["kill","pause"],"downFor":["10s"]},)"
      R"({"target":"airflow-scheduler","userAgents":["a *","b *"],"actions":["pause"],"downFor":["1m30s"]}]})");
  for (const char* name : {"yunikorn", "kube-scheduler", "kube-controller-manager"})
    EXPECT_TRUE(load_system_file(resolve_system(name, shipped())).explore_components.empty()) << name;
}

TEST(SystemFile, HooksAndVariantGoToTheJson) {
  System s = load_system_text(kMinimal +
                                  "hooks: {up: [u, '{run_dir}'], before: [{command: [b], output: b.txt}], "
                                  "start: {command: [s], when: up}, collect: {c.txt: rel/c.txt}}\n"
                                  "variant: {env: V, default: x, values: [x, y]}\nneeds: [kube-scheduler]\n",
                              "s.yaml", "/sys");
  auto j = system_json(fill_placeholders(s, {{"run_dir", "/r"}})).as_object();
  EXPECT_EQ(boost::json::serialize(j.at("hooks")),
            R"({"up":["u","/r"],"before":[{"command":["b"],"output":"b.txt"}],"start":{"command":["s"],"when":"up"},)"
            R"("after":[],"collect":{"c.txt":"/sys/rel/c.txt"},"down":[],"timeoutSeconds":1800})");
  EXPECT_EQ(boost::json::serialize(j.at("variant")), R"({"env":"V","default":"x","values":["x","y"]})");
  EXPECT_EQ(boost::json::serialize(j.at("needs")), R"(["kube-scheduler"])");
  EXPECT_EQ(boost::json::serialize(j.at("command")), R"(["bash","-c","kubectl --kubeconfig {kubeconfig} get pods"])");
}

TEST(SystemFile, FillsPlaceholdersAndKeepsEscapedBraces) {
  System s = load_system_text(kMinimal + "env: {X: '{{port}} {port} {workdir}/x'}\n", "s.yaml", "/sys");
  System f = fill_placeholders(s, {{"kubeconfig", "/k"}, {"port", "81"}});
  EXPECT_EQ(f.command[2], "kubectl --kubeconfig /k get pods");
  EXPECT_EQ(f.env.at("X"), "{port}} 81 {workdir}/x");
}

TEST(SystemFile, ResolvesRelativePathsAgainstTheFile) {
  System s = load_system_text(kMinimal + "build: {path: bin/tool}\nsetup: {manifests: [a.yaml, /abs.yaml]}\n", "s.yaml",
                              "/sys");
  EXPECT_EQ(s.build.path, "/sys/bin/tool");
  EXPECT_EQ(s.manifests, (std::vector<std::string>{"/sys/a.yaml", "/abs.yaml"}));
}

TEST(SystemFile, UnknownNameListsTheShippedSystems) {
  try {
    resolve_system("nosuch", shipped());
    FAIL() << "no error";
  } catch (const faults::ScenarioError& e) {
    EXPECT_EQ(e.errors().at(0),
              "no system \"nosuch\": not a file, and not a shipped system (airflow, kube-controller-manager, "
              "kube-scheduler, yunikorn)");
  }
}

const std::string kHooksOnly =
    "apiVersion: faultline/v1\n"
    "kind: System\n"
    "metadata: {name: app}\n"
    "identity: {user: u}\n";

struct Bad {
  std::string text;
  std::vector<std::string> errors;
};

class BadSystem : public ::testing::TestWithParam<Bad> {};

TEST_P(BadSystem, ReportsExactlyTheseErrors) { EXPECT_EQ(errors_of(GetParam().text), GetParam().errors); }

INSTANTIATE_TEST_SUITE_P(
    Files, BadSystem,
    ::testing::Values(
        Bad{"apiVersion: faultline/v1\nkind: Scenario\nmetadata: {name: x}\n",
            {R"(s.yaml:2:7: kind: must be "System", got "Scenario")", "s.yaml:1:1: identity: required key is missing",
             "s.yaml:1:1: command: required key is missing", "s.yaml:1:1: ready: required key is missing"}},
        Bad{kMinimal + "env: {A: '{kubconfig}'}\n",
            {"s.yaml:7:10: env.A: unknown placeholder {kubconfig} (known: {kubeconfig}, {workdir}, {port}, {bin}, "
             "{ca}, {system_dir}, {run_dir}, {nodes}, {name}; write {{ for a literal {)"}},
        Bad{"apiVersion: faultline/v1\nkind: System\nmetadata: {name: Big_Name}\nidentity: {user: 'a,b'}\n"
            "command: []\nready: {http: 'http://x', command: [a]}\nchecks: [pods-happy]\nexclusive: {port: 70000}\n"
            "scheduler: {}\nextra: 1\n",
            {R"(s.yaml:3:18: metadata.name: expected lower-case letters, digits and '-' (at most 63, a DNS label), got "Big_Name")",
             "s.yaml:4:18: identity.user: expected a user name of 1 to 128 characters without / , = + \" \\ < > ;",
             "s.yaml:8:19: exclusive.port: expected a TCP port from 1 to 65535, got 70000",
             "s.yaml:5:10: command: expected the program and its arguments, got an empty list",
             "s.yaml:6:8: ready: takes exactly one of http, https and command",
             "s.yaml:9:12: scheduler.name: required key is missing",
             "s.yaml:7:10: checks[0]: unknown check \"pods-happy\" (known: pods-bound, queue-accounting, "
             "no-orphan-allocations, no-unexpected-deletes, bound-to-live-node)",
             "s.yaml:10:1: extra: unknown key (allowed: apiVersion, build, checks, command, env, exclusive, "
             "explore, hooks, identity, kind, metadata, metrics, needs, ready, scenarios, scheduler, setup, "
             "variant, yunikorn)"}},
        Bad{"apiVersion: faultline/v1\nkind: System\nmetadata: {name: etcd}\nidentity: {user: u}\n"
            "command: [x]\nready: {command: [x], timeout: 2h}\n",
            {R"(s.yaml:3:18: metadata.name: "etcd" is a component of the stack itself; name the system otherwise)",
             "s.yaml:6:32: ready.timeout: must be at most 1h, got 2h"}},
        // hooks instead of command: no command, no ready needed; the hooks are checked
        Bad{kHooksOnly + "hooks: {up: [x]}\n", {}},
        Bad{kHooksOnly + "hooks: {}\n",
            {"s.yaml:5:8: hooks: expected at least one of up, before, start, after, collect and down"}},
        Bad{kHooksOnly + "hooks:\n"
                         "  up: []\n"
                         "  before: [{command: [a, '{dir}'], output: report.json}, {output: ../x}]\n"
                         "  start: {command: [s], when: later}\n"
                         "  after: [{command: [a], output: b.txt}, {command: [a], output: b.txt, extra: 1}]\n"
                         "  collect: {c.txt: '{nope}'}\n"
                         "  down: x\n"
                         "  stop: [y]\n"
                         "  timeout: 3h\n",
            {"s.yaml:6:7: hooks.up: expected the program and its arguments, got an empty list",
             "s.yaml:7:26: hooks.before[0].command[1]: unknown placeholder {dir} (known: {kubeconfig}, {workdir}, "
             "{port}, {bin}, {ca}, {system_dir}, {run_dir}, {nodes}, {name}; write {{ for a literal {)",
             "s.yaml:7:44: hooks.before[0].output: \"report.json\" is written by faultline itself; name the file "
             "otherwise",
             "s.yaml:7:58: hooks.before[1].command: required key is missing",
             "s.yaml:7:67: hooks.before[1].output: expected a file name in the report directory (letters, digits, "
             "'.', '_', '-', at most 128, not starting with '.'), got \"../x\"",
             "s.yaml:8:31: hooks.start.when: must be one of armed, up, got \"later\"",
             "s.yaml:9:65: hooks.after[1].output: the report file \"b.txt\" is written by another hook already",
             "s.yaml:9:72: hooks.after[1].extra: unknown key (allowed: command, output)",
             "s.yaml:10:20: hooks.collect.c.txt: unknown placeholder {nope} (known: {kubeconfig}, {workdir}, "
             "{port}, {bin}, {ca}, {system_dir}, {run_dir}, {nodes}, {name}; write {{ for a literal {)",
             "s.yaml:11:9: hooks.down: expected a list, got \"x\"",
             "s.yaml:13:12: hooks.timeout: must be at most 2h, got 3h",
             "s.yaml:12:3: hooks.stop: unknown key (allowed: after, before, collect, down, start, timeout, up)"}},
        Bad{kHooksOnly + "hooks: {up: [x]}\nneeds: [app]\nscenarios: x\n"
                         "variant: {env: lower, default: z, values: ['a b', y]}\n",
            {"s.yaml:6:9: needs[0]: a system cannot need itself", "s.yaml:7:12: scenarios: expected a list, got \"x\"",
             "s.yaml:8:16: variant.env: expected an environment variable name (A-Z, 0-9, '_'), got \"lower\"",
             "s.yaml:8:44: variant.values[0]: expected letters, digits, '.', '_' and '-' (at most 63: it names the "
             "report directory), got \"a b\"",
             "s.yaml:8:32: variant.default: \"z\" is not one of values"}},
        // a variant is not a hook: command and ready stay required
        Bad{kHooksOnly + "variant: {env: V}\n",
            {"s.yaml:1:1: command: required key is missing", "s.yaml:1:1: ready: required key is missing",
             "s.yaml:5:10: variant.values: required key is missing",
             "s.yaml:5:10: variant.default: required key is missing"}},
        // explore.components: the actions its target takes (as componentFaults), bounded lengths
        Bad{kMinimal + "explore:\n"
                       "  components:\n"
                       "    - target: airflow-scheduler\n"
                       "      userAgents: [\"airflow-scheduler-1 *\"]\n"
                       "      actions: [kill, pause, pause]\n"
                       "      downFor: [10s, 0s, 11m, 10s, 20s]\n"
                       "    - target: etcd2\n"
                       "      userAgents: []\n"
                       "      actions: [restart]\n"
                       "      extra: 1\n"
                       "    - {target: kwok, downFor: [ten]}\n",
            {"s.yaml:11:17: explore.components[0].actions[0]: airflow-scheduler can be paused and resumed only, not "
             "kill: nothing can start it again",
             "s.yaml:11:30: explore.components[0].actions[2]: \"pause\" is listed twice",
             "s.yaml:12:16: explore.components[0].downFor: 5 lengths; the maximum is 4",
             "s.yaml:12:22: explore.components[0].downFor[1]: must be greater than 0",
             "s.yaml:12:26: explore.components[0].downFor[2]: must be at most 10m, got 11m",
             "s.yaml:12:31: explore.components[0].downFor[3]: \"10s\" is listed twice",
             "s.yaml:13:15: explore.components[1].target: must be one of kube-apiserver, scheduler, kwok, etcd, "
             "airflow-scheduler, got \"etcd2\"",
             "s.yaml:14:19: explore.components[1].userAgents: expected at least one glob of the component's "
             "User-Agent",
             "s.yaml:15:17: explore.components[1].actions[0]: must be one of kill, pause, got \"restart\"",
             "s.yaml:16:7: explore.components[1].extra: unknown key (allowed: actions, downFor, target, userAgents)",
             "s.yaml:17:7: explore.components[2].userAgents: required key is missing",
             "s.yaml:17:32: explore.components[2].downFor[0]: invalid duration \"ten\" (write a number and a unit: "
             "250ms, 10s, 2m, 1h)"}},
        Bad{kMinimal + "explore: {components: [" +
                [] {
                  std::string items;
                  for (int i = 0; i < 9; ++i)
                    items += std::string(i ? ", " : "") + "{target: scheduler, userAgents: [x]}";
                  return items;
                }() +
                "], extra: 1}\n",
            {"s.yaml:7:23: explore.components: 9 components; the maximum is 8",
             "s.yaml:7:367: explore.extra: unknown key (allowed: components)"}},
        Bad{kMinimal + "metrics: {url: 'http://x/metrics', series: [ok_total, 'workqueue_adds_total{name=\"x\"}']}\n",
            {R"(s.yaml:7:55: metrics.series[1]: expected a metric name ([a-zA-Z_:][a-zA-Z0-9_:]*), got "workqueue_adds_total{name="x"}")"}}));

}  // namespace
}  // namespace faultline::harness::schema
