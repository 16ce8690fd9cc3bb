// Component faults and the node flap against the real local stack (etcd, kube-apiserver, kwok;
// scripts/stack up --no-scheduler), started once for this test program. What each test checks is
// seen from outside the harness: the process state in /proc, the pid files scripts/stack keeps,
// kubectl, and a node watch of the real apiserver.
#include "faultline/harness/component_faults.hpp"

#include <signal.h>

#include <gtest/gtest.h>
#include <boost/json.hpp>

#include <fstream>
#include <functional>
#include <set>
#include <thread>

#include "faultline/harness/async.hpp"
#include "faultline/harness/node_flap.hpp"
#include "faultline/harness/pod_watcher.hpp"
#include "local_stack.hpp"

namespace faultline::harness {
namespace {

namespace json = boost::json;
using std::chrono::milliseconds;
using std::chrono::seconds;
using namespace std::chrono_literals;

testing::LocalStackEnvironment* g_stack = nullptr;

// The pid scripts/stack recorded for a component (first field of DIR/pids/NAME), read here
// independently of StackProcesses.
int recorded_pid(const std::string& component) {
  std::ifstream in(g_stack->stack.dir() / "pids" / component);
  int pid = 0;
  in >> pid;
  return pid;
}

char proc_state(int pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string stat;
  std::getline(in, stat);
  auto close = stat.rfind(')');
  return close == std::string::npos || close + 2 >= stat.size() ? '\0' : stat[close + 2];
}

schema::ComponentFault fault(std::string name, schema::Component target, schema::ComponentAction action,
                             std::optional<faults::Duration> down_for = std::nullopt) {
  schema::ComponentFault f;
  f.name = std::move(name);
  f.target = target;
  f.action = action;
  f.down_for = down_for;
  return f;
}

class ComponentFaultsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(g_stack->stack.started()) << "the local stack did not start:\n" << g_stack->stack.log();
    stack = std::make_unique<StackProcesses>(g_stack->stack.dir(), testing::stack_script(), out.path() / "stack.log",
                                             clock);
  }
  template <class T>
  T run(asio::awaitable<T> task) {
    return run_blocking(ioc, std::move(task));
  }
  // Carries out `faults` (due at once) and returns their records, polling `observe` every 20 ms
  // on the same executor while they run.
  std::vector<StepRecord> carry_out(std::vector<schema::ComponentFault> faults, std::function<void()> observe = {}) {
    ComponentFaults runner(ioc.get_executor(), std::move(faults), *stack, nullptr, clock,
                           [](const std::string&, bool) {});
    run(runner.start());
    auto body = [&]() -> asio::awaitable<std::vector<StepRecord>> {
      co_await sleep_for(milliseconds(50));  // the trigger watch fires due faults on its first pass
      while (runner.busy()) {
        if (observe) observe();
        co_await sleep_for(milliseconds(20));
      }
      co_return co_await runner.finish();
    };
    return run(body());
  }
  std::string kubectl(const std::string& args) const { return g_stack->stack.kubectl(args); }

  testing::TempDir out{"component-faults"};
  faults::SteadyClock clock;
  asio::io_context ioc;
  std::unique_ptr<StackProcesses> stack;
};

TEST_F(ComponentFaultsTest, PauseStopsKwokForItsDurationThenItRunsAgain) {
  const int pid = recorded_pid("kwok");
  ASSERT_GT(pid, 0);
  std::set<char> states;
  auto records = carry_out({fault("kwok-pause", schema::Component::kwok, schema::ComponentAction::pause, 2s)},
                           [&] { states.insert(proc_state(pid)); });
  ASSERT_EQ(records.size(), 1u);
  EXPECT_EQ(records[0].error, "");
  EXPECT_TRUE(records[0].recovered);
  EXPECT_TRUE(states.contains('T')) << "kwok was never seen stopped in /proc";
  const char after = proc_state(pid);
  EXPECT_NE(after, 'T');
  EXPECT_NE(after, '\0') << "kwok must be the same process, running again";
  EXPECT_EQ(recorded_pid("kwok"), pid);
  // kwok works again: it answers its health endpoint.
  auto health = testing::run_command("curl -sf " + g_stack->stack.var("FAULTLINE_KWOK_URL") + "/healthz");
  EXPECT_EQ(health.exit_code, 0) << health.output;
}

TEST_F(ComponentFaultsTest, AFaultOnAComponentTheStackDoesNotRunIsAnError) {
  // There is no scheduler in this stack: the fault cannot be carried out, and says so.
  auto records = carry_out({fault("no-scheduler", schema::Component::scheduler, schema::ComponentAction::resume)});
  ASSERT_EQ(records.size(), 1u);
  EXPECT_NE(records[0].error.find("scheduler"), std::string::npos) << records[0].error;
  EXPECT_NE(records[0].error.find("no pid"), std::string::npos) << records[0].error;
}

TEST_F(ComponentFaultsTest, KillOfTheApiserverRestartsItHealthyWithTheSameFlags) {
  const int old_pid = recorded_pid("kube-apiserver");
  ASSERT_GT(old_pid, 0);
  const std::string server = g_stack->stack.var("FAULTLINE_APISERVER_URL");
  auto records =
      carry_out({fault("apiserver-kill", schema::Component::kube_apiserver, schema::ComponentAction::kill, 2s)});
  ASSERT_EQ(records.size(), 1u);
  EXPECT_EQ(records[0].error, "");
  ASSERT_TRUE(records[0].recovered);
  EXPECT_GE(*records[0].recovered - records[0].started, 2s);  // down for downFor at least
  const char old_state = proc_state(old_pid);
  EXPECT_TRUE(old_state == '\0' || old_state == 'Z') << "the killed apiserver still runs: " << old_state;
  const int new_pid = recorded_pid("kube-apiserver");
  EXPECT_NE(new_pid, old_pid);
  EXPECT_NE(proc_state(new_pid), '\0');
  // The same port and certificates: the admin kubeconfig written at `up` still works.
  auto nodes = testing::run_command(kubectl("get namespaces -o name"));
  EXPECT_EQ(nodes.exit_code, 0) << nodes.output;
  EXPECT_NE(nodes.output.find("namespace/faultline"), std::string::npos) << nodes.output;
  std::ifstream cmdline("/proc/" + std::to_string(new_pid) + "/cmdline");
  std::string args((std::istreambuf_iterator<char>(cmdline)), std::istreambuf_iterator<char>());
  EXPECT_NE(args.find(server.substr(server.rfind(':') + 1)), std::string::npos) << "not on the same port";
}

TEST_F(ComponentFaultsTest, AFaultOnAComponentThatIsNotRunningIsAnError) {
  const int pid = recorded_pid("kwok");
  ASSERT_GT(pid, 0);
  // Killed behind the harness's back: the pid file names a process that is gone.
  ASSERT_EQ(::kill(pid, SIGKILL), 0);
  while (proc_state(pid) != '\0' && proc_state(pid) != 'Z') std::this_thread::sleep_for(20ms);
  auto records = carry_out({fault("kwok-pause", schema::Component::kwok, schema::ComponentAction::pause, 1s)});
  ASSERT_EQ(records.size(), 1u);
  EXPECT_NE(records[0].error.find("kwok is not running"), std::string::npos) << records[0].error;
  // Put it back for the other tests.
  auto started = testing::run_command(testing::stack_script() + " start kwok --run-dir " +
                                      testing::shell_quote(g_stack->stack.dir().string()));
  ASSERT_EQ(started.exit_code, 0) << started.output;
}

TEST_F(ComponentFaultsTest, NodeFlapDeletesTheNodeWithAPodInFlightAndCreatesItAgain) {
  KubeClientOptions options;
  options.cluster = net::load_kubeconfig(g_stack->stack.var("FAULTLINE_ADMIN_KUBECONFIG"));
  KubeClient client(ioc.get_executor(), options);
  // Two nodes kwok does not manage (no kwok annotation): a pod bound to one stays Pending, in flight.
  for (const char* name : {"kwok-node-0", "kwok-node-1"}) {
    json::value node = make_node(name, {{"cpu", "32"}, {"memory", "256Gi"}, {"pods", "110"}});
    node.at("metadata").as_object().erase("annotations");
    run(client.create("/api/v1/nodes", std::move(node)));
  }
  const std::string old_uid = testing::run_command(kubectl("get node kwok-node-0 -o jsonpath={.metadata.uid}")).output;
  json::value pod = json::object{
      {"apiVersion", "v1"},
      {"kind", "Pod"},
      {"metadata", {{"name", "in-flight"}, {"namespace", "faultline"}, {"labels", {{kWorkloadLabel, "true"}}}}},
      {"spec",
       {{"nodeName", "kwok-node-0"},
        {"containers", json::array{json::object{{"name", "c"}, {"image", "registry.k8s.io/pause:3.10"}}}}}}};
  run(client.create("/api/v1/namespaces/faultline/pods", std::move(pod)));
  PodWatcher pods(client, "faultline", kWorkloadLabel, 1000);
  run(pods.start());

  // An independent watch of the nodes records what the apiserver saw.
  std::vector<std::string> node_events;
  asio::cancellation_signal stop_watch;
  bool watch_ended = false;
  const ListResult before = run(client.list("/api/v1/nodes"));
  auto on_event = [&](const WatchEvent& ev) {
    node_events.push_back(ev.type + " " + std::string(ev.object.at("metadata").at("name").as_string()));
  };
  asio::co_spawn(ioc, client.watch("/api/v1/nodes", before.resource_version, on_event),
                 asio::bind_cancellation_slot(stop_watch.slot(),
                                              [&watch_ended](std::exception_ptr, WatchEnd) { watch_ended = true; }));

  schema::Phase step;
  step.name = "flap";
  step.node_flap = schema::NodeFlap{2, faults::Duration{2s}};
  schema::NodePool pool{2, {{"cpu", "32"}, {"memory", "256Gi"}, {"pods", "110"}}};
  NodeFlapContext context{client, pods, "", pool, clock, [](const std::string&, bool) {}};
  StepRecord record = run(run_node_flap(step, context));
  stop_watch.emit(asio::cancellation_type::terminal);
  run(pods.stop());
  ioc.restart();
  while (!watch_ended) ioc.run_one();

  EXPECT_EQ(record.error, "");
  EXPECT_EQ(record.target, "kwok-node-0");  // only the node with a pod in flight, though 2 were asked for
  EXPECT_NE(record.detail.find("deleted 1 of the 2 nodes asked for, holding 1 pods in flight"), std::string::npos)
      << record.detail;
  ASSERT_TRUE(record.recovered);
  auto deleted = std::find(node_events.begin(), node_events.end(), "DELETED kwok-node-0");
  ASSERT_NE(deleted, node_events.end()) << ::testing::PrintToString(node_events);
  EXPECT_NE(std::find(deleted, node_events.end(), "ADDED kwok-node-0"), node_events.end())
      << ::testing::PrintToString(node_events);
  EXPECT_EQ(std::find(node_events.begin(), node_events.end(), "DELETED kwok-node-1"), node_events.end());
  const std::string new_uid = testing::run_command(kubectl("get node kwok-node-0 -o jsonpath={.metadata.uid}")).output;
  EXPECT_NE(new_uid, old_uid);
  // Created again as a KWOK node: kwok made it Ready.
  auto ready = testing::run_command(
      kubectl("get node kwok-node-0 -o jsonpath='{.status.conditions[?(@.type==\"Ready\")].status}'"));
  EXPECT_EQ(ready.output, "True");
}

}  // namespace
}  // namespace faultline::harness

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  faultline::harness::g_stack =
      new faultline::testing::LocalStackEnvironment("faultline-component-faults", "--no-scheduler --nodes 0");
  ::testing::AddGlobalTestEnvironment(faultline::harness::g_stack);
  return RUN_ALL_TESTS();
}
