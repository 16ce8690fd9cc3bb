// KubeClient against a real kube-apiserver: the local stack without scheduler and proxy
// (etcd, kube-apiserver, kwok), started once for this test program in a temporary run dir.
#include "faultline/harness/kube_client.hpp"

#include <gtest/gtest.h>
#include <boost/algorithm/string/case_conv.hpp>

#include <boost/json.hpp>

#include <fstream>

#include "faultline/faults/clock.hpp"
#include "faultline/harness/async.hpp"
#include "faultline/harness/pod_watcher.hpp"
#include "faultline/harness/workload.hpp"
#include "local_stack.hpp"
#include "proxy_process.hpp"

namespace faultline::harness {
namespace {

namespace json = boost::json;
using std::chrono::milliseconds;
using std::chrono::seconds;

testing::LocalStackEnvironment* g_api = nullptr;

class KubeClientTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(g_api->stack.started()) << "the local stack did not start:\n" << g_api->stack.log();
    client = make_client(KubeClientOptions{});
    ns = boost::algorithm::to_lower_copy("kube-client-" +
                                         std::string(::testing::UnitTest::GetInstance()->current_test_info()->name()));
    run(client->create("/api/v1/namespaces",
                       json::object{{"apiVersion", "v1"}, {"kind", "Namespace"}, {"metadata", {{"name", ns}}}}));
  }
  std::unique_ptr<KubeClient> make_client(KubeClientOptions o) {
    o.cluster = net::load_kubeconfig(g_api->stack.var("FAULTLINE_ADMIN_KUBECONFIG"));
    return std::make_unique<KubeClient>(ioc.get_executor(), o);
  }
  template <class T>
  T run(asio::awaitable<T> task) {
    return run_blocking(ioc, std::move(task));
  }
  json::value config_map(const std::string& name, const std::string& label = "x") {
    return json::object{{"apiVersion", "v1"},
                        {"kind", "ConfigMap"},
                        {"metadata", {{"name", name}, {"labels", {{"group", label}}}}},
                        {"data", {{"k", "v"}}}};
  }
  std::string collection() const { return "/api/v1/namespaces/" + ns + "/configmaps"; }
  asio::io_context ioc;
  std::unique_ptr<KubeClient> client;
  std::string ns;
};

TEST_F(KubeClientTest, CreateGetPatchDelete) {
  json::value created = run(client->create(collection(), config_map("one")));
  EXPECT_EQ(created.at("metadata").at("name").as_string(), "one");
  auto got = run(client->get(collection() + "/one"));
  ASSERT_TRUE(got);
  EXPECT_EQ(got->at("data").at("k").as_string(), "v");
  json::value patched = run(client->patch(collection() + "/one", json::object{{"data", {{"k", "w"}}}}));
  EXPECT_EQ(patched.at("data").at("k").as_string(), "w");
  EXPECT_TRUE(run(client->remove(collection() + "/one")));
  EXPECT_FALSE(run(client->remove(collection() + "/one")));
  EXPECT_FALSE(run(client->get(collection() + "/one")));
}

TEST_F(KubeClientTest, CreatingTwiceIsAnApiErrorWithTheReason) {
  run(client->create(collection(), config_map("dup")));
  try {
    run(client->create(collection(), config_map("dup")));
    FAIL() << "the second create must fail";
  } catch (const ApiError& e) {
    EXPECT_EQ(e.status, 409);
    EXPECT_EQ(e.reason, "AlreadyExists");
  }
}

TEST_F(KubeClientTest, ListFollowsContinueTokensAcrossPages) {
  for (int i = 0; i < 25; ++i) {
    run(client->create(collection(), config_map("cm-" + std::to_string(i), i % 5 == 0 ? "five" : "x")));
  }
  ListResult all = run(client->list(collection(), {}, 10));
  EXPECT_EQ(all.items.size(), 25u);  // three pages of at most 10
  EXPECT_FALSE(all.resource_version.empty());
  EXPECT_EQ(run(client->list(collection(), "group=five", 2)).items.size(), 5u);
  // A set-based selector: spaces, parentheses and commas in the query go through encoded.
  EXPECT_EQ(run(client->list(collection(), "group in (five, other)", 2)).items.size(), 5u);
}

TEST_F(KubeClientTest, WatchDeliversEventsAndStopsWhenCancelled) {
  ListResult start = run(client->list(collection()));
  std::vector<std::string> seen;
  auto on_event = [&](const WatchEvent& ev) {
    if (ev.type != "BOOKMARK")
      seen.push_back(ev.type + " " + std::string(ev.object.at("metadata").at("name").as_string()));
  };
  asio::cancellation_signal stop;
  std::optional<WatchEnd> end;
  std::string failure;
  asio::co_spawn(ioc, client->watch(collection(), start.resource_version, on_event),
                 asio::bind_cancellation_slot(stop.slot(), [&](std::exception_ptr e, WatchEnd how) {
                   end = how;
                   if (!e) return;
                   try {
                     std::rethrow_exception(e);
                   } catch (const std::exception& x) {
                     failure = x.what();
                   }
                 }));
  run([&]() -> asio::awaitable<void> {
    co_await client->create(collection(), config_map("watched"));
    co_await client->remove(collection() + "/watched");
    for (int i = 0; i < 100 && seen.size() < 2; ++i) co_await sleep_for(milliseconds(100));
    // The watch is now waiting in a read of the stream: cancelling must end it.
    stop.emit(asio::cancellation_type::terminal);
    for (int i = 0; i < 300 && !end; ++i) co_await sleep_for(milliseconds(100));
  }());
  ASSERT_TRUE(end.has_value()) << "the watch did not end within 30 s of being cancelled";
  EXPECT_EQ(failure, "") << "a cancelled watch returns, it does not throw";
  EXPECT_EQ(*end, WatchEnd::stopped);
  EXPECT_TRUE(client->retries().empty()) << "a stop is not a dropped stream to retry";
  ASSERT_EQ(seen.size(), 2u);
  EXPECT_EQ(seen[0], "ADDED watched");
  EXPECT_EQ(seen[1], "DELETED watched");
}

// Settling looks at the pods when one changes (PodWatcher::next_change), not on a fixed poll: a
// wait of 20 s ends as soon as the watch sees a new pod, and a wait with no change runs out.
TEST_F(KubeClientTest, NextChangeEndsAtThePodWatchsNextEvent) {
  PodWatcher watcher(*client, ns, kWorkloadLabel, 100);
  run(watcher.start());
  const json::value pod = json::object{
      {"apiVersion", "v1"},
      {"kind", "Pod"},
      {"metadata", {{"name", "changes"}, {"namespace", ns}, {"labels", {{kWorkloadLabel, "true"}}}}},
      {"spec", {{"containers", json::array{json::object{{"name", "c"}, {"image", "registry.k8s.io/pause:3.10"}}}}}}};
  bool changed = false;
  bool quiet = true;
  std::chrono::steady_clock::duration waited{};
  // Named: a coroutine lambda's closure must outlive the coroutine.
  const auto wait = [&]() -> asio::awaitable<void> { changed = co_await watcher.next_change(seconds(20)); };
  const auto create = [&]() -> asio::awaitable<void> {
    co_await sleep_for(milliseconds(200));
    co_await client->create("/api/v1/namespaces/" + ns + "/pods", pod);
  };
  const auto both = [&]() -> asio::awaitable<void> {
    quiet = co_await watcher.next_change(milliseconds(300));  // nothing changes: the time runs out
    const auto start = std::chrono::steady_clock::now();
    std::vector<asio::awaitable<void>> tasks;
    tasks.push_back(wait());
    tasks.push_back(create());
    co_await all_of(std::move(tasks));
    waited = std::chrono::steady_clock::now() - start;
  };
  run(both());
  run(watcher.stop());
  EXPECT_FALSE(quiet) << "no pod changed, yet next_change said one did";
  EXPECT_TRUE(changed);
  EXPECT_LT(waited, seconds(10)) << "next_change did not end at the pod's ADDED event";
  EXPECT_EQ(watcher.counts().pods, 1);
}

TEST_F(KubeClientTest, RequestTimeoutEndsAnEndlessAnswer) {
  KubeClientOptions o;
  o.request_timeout = seconds(2);
  o.retry.max_attempts = 1;
  auto impatient = make_client(o);
  // A watch through request(): the apiserver answers at once and then streams for many minutes,
  // so reading the whole answer can only end by the request timeout.
  const std::string endless = with_query(collection(), {{"watch", "1"}});
  asio::cancellation_signal give_up;
  std::optional<std::string> outcome;
  asio::co_spawn(ioc, impatient->request("GET", endless),
                 asio::bind_cancellation_slot(give_up.slot(), [&](std::exception_ptr e, HttpResult res) {
                   if (!e) {
                     outcome = "HTTP " + std::to_string(res.status);
                     return;
                   }
                   try {
                     std::rethrow_exception(e);
                   } catch (const TransportError& t) {
                     outcome = std::string("TransportError: ") + t.what();
                   } catch (const std::exception& other) {
                     outcome = std::string("other exception: ") + other.what();
                   }
                 }));
  run([&]() -> asio::awaitable<void> {
    for (int i = 0; i < 300 && !outcome; ++i) co_await sleep_for(milliseconds(100));
    if (!outcome) give_up.emit(asio::cancellation_type::terminal);
  }());
  ASSERT_TRUE(outcome.has_value()) << "the request was still waiting 30 s later (its timeout is 2 s)";
  EXPECT_TRUE(outcome->starts_with("TransportError: ")) << *outcome;
  EXPECT_NE(outcome->find("timeout"), std::string::npos) << *outcome;
}

TEST_F(KubeClientTest, WaitForNodesReadsItsDeadlineFromTheInjectedClock) {
  // No KWOK node exists on this stack (--nodes 0), so the wait can only end at its deadline. The
  // first progress line moves the injected clock an hour on: the next look at it must give up,
  // however little real time has passed.
  faults::ManualClock clock;
  schema::Workload spec;
  spec.namespace_ = ns;
  spec.nodes.count = 1;
  int polls = 0;
  auto progress = [&](const std::string&, bool final) {
    if (final) return;
    ++polls;
    clock.advance(std::chrono::hours(1));
  };
  Workload workload(*client, spec, "kube-scheduler", progress, clock);
  try {
    run(workload.wait_nodes_ready(seconds(5)));
    FAIL() << "no node can become Ready";
  } catch (const std::runtime_error& e) {
    EXPECT_TRUE(std::string(e.what()).starts_with("only 0 of 1 KWOK nodes became Ready within 5s")) << e.what();
  }
  EXPECT_EQ(polls, 1) << "the deadline was not read from the injected clock";
}

// The local stack and kind mode (scripts/lib/cluster.sh) and the harness (make_node) make their
// KWOK nodes from one manifest: the apiserver stores the same node for both (server-side dry run,
// nothing is created).
TEST_F(KubeClientTest, TheHarnessCreatesTheNodeTheLocalStackCreates) {
  const auto dry_run = [](json::value node) {
    json::object& meta = node.at("metadata").as_object();
    for (const char* varies : {"uid", "creationTimestamp", "managedFields"}) meta.erase(varies);
    return node;
  };
  const auto rendered =
      testing::run_command("bash -c 'repo=\"$1\"; source \"$1/scripts/lib/cluster.sh\"; kwok_nodes_manifest 1' - " +
                           testing::shell_quote(testing::kSource.string()) + " | " +
                           g_api->stack.kubectl("create --dry-run=server -o json -f -"));
  ASSERT_EQ(rendered.exit_code, 0) << rendered.output;
  const json::value by_the_stack = dry_run(json::parse(rendered.output));
  const json::value by_the_harness =
      dry_run(run(client->create(with_query("/api/v1/nodes", {{"dryRun", "All"}}),
                                 make_node("kwok-node-0", {{"cpu", "32"}, {"memory", "256Gi"}, {"pods", "110"}}))));
  EXPECT_EQ(by_the_harness, by_the_stack)
      << "harness: " << json::serialize(by_the_harness) << "\nstack:   " << json::serialize(by_the_stack);
  // What every KWOK node needs: kwok manages it, the workload's pods select and tolerate it.
  EXPECT_EQ(by_the_stack.at("metadata").at("annotations").at("kwok.x-k8s.io/node"), "fake");
  EXPECT_EQ(by_the_stack.at("metadata").at("labels").at("type"), "kwok");
  EXPECT_EQ(by_the_stack.at("spec").at("taints").at(0).at("effect"), "NoSchedule");
  EXPECT_EQ(by_the_stack.at("status").at("allocatable").at("memory"), "256Gi");
}

// A list whose continue token expires (410, as kube-apiserver answers once etcd compacted the
// revision of the first page, for a list slower than the compaction interval) is made once more in
// one request without a limit, as client-go's pager does; it used to start the pages over, which
// expired again and again for as long as the cause lasted. faultline-proxy in front of the real
// apiserver answers every second list of the namespace with kube-apiserver's 410 (at most 20
// times): page 1 passes, page 2 expires, then the one full list passes.
TEST_F(KubeClientTest, ExpiredContinueTokenGivesOneFullList) {
  for (const char* name : {"a", "b", "c"}) run(client->create(collection(), config_map(name)));
  testing::TempDir dir("faultline-kube-client-expired");
  const std::filesystem::path scenario = dir.path() / "expire.yaml";
  std::ofstream(scenario) << "apiVersion: faultline/v1\nkind: Scenario\nmetadata: {name: expire-continue}\n"
                             "faults:\n"
                             "  - name: expire\n"
                             "    match: {verbs: [list], resources: [configmaps], namespaces: ["
                          << ns
                          << "]}\n"
                             "    when: {every: 2, limit: 20}\n"
                             "    action: {type: respond, code: 410, reason: Expired, message: The provided continue "
                             "parameter is too old to display a consistent list result.}\n";
  const std::filesystem::path kubeconfig = dir.path() / "through-proxy.kubeconfig";
  testing::ProxyProcess proxy(
      dir.path(), "proxy",
      {"--upstream", g_api->stack.var("FAULTLINE_APISERVER_URL"), "--upstream-ca",
       g_api->stack.var("FAULTLINE_CA_CERT"), "--upstream-kubeconfig", g_api->stack.var("FAULTLINE_ADMIN_KUBECONFIG"),
       "--ca-cert", g_api->stack.var("FAULTLINE_CA_CERT"), "--ca-key", g_api->stack.var("FAULTLINE_CA_KEY"),
       "--write-kubeconfig", kubeconfig.string(), "--scenario", scenario.string(), "--arm", "--log-level", "warn"});
  KubeClientOptions o;
  o.cluster = net::load_kubeconfig(kubeconfig.string());
  KubeClient through(ioc.get_executor(), o);

  ListResult all = run(through.list(collection(), {}, 2));
  std::vector<std::string> names;
  for (const auto& item : all.items) names.emplace_back(item.at("metadata").at("name").as_string());
  EXPECT_EQ(names, (std::vector<std::string>{"a", "b", "c"}));
  auto retries = through.retries();
  EXPECT_EQ(retries["410-continue"], 1) << "the list expired and started over more than once";
}

TEST_F(KubeClientTest, ConcurrentCallsShareThePool) {
  int ok = 0;
  auto creator = [&](int t) -> asio::awaitable<void> {
    for (int i = 0; i < 10; ++i) {
      co_await client->create(collection(), config_map("c-" + std::to_string(t) + "-" + std::to_string(i)));
      ++ok;
    }
  };
  std::vector<asio::awaitable<void>> creators;
  for (int t = 0; t < 8; ++t) creators.push_back(creator(t));
  run(all_of(std::move(creators)));
  EXPECT_EQ(ok, 80);
  EXPECT_EQ(run(client->list(collection())).items.size(), 80u);
  EXPECT_TRUE(client->retries().empty());  // nothing transient against a healthy apiserver
}

}  // namespace
}  // namespace faultline::harness

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  faultline::harness::g_api =
      new faultline::testing::LocalStackEnvironment("faultline-kube-client", "--no-scheduler --nodes 0");
  ::testing::AddGlobalTestEnvironment(faultline::harness::g_api);
  return RUN_ALL_TESTS();
}
