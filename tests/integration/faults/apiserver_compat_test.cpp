// What faultline injects must be indistinguishable from what kube-apiserver sends. These tests
// provoke real errors from a real kube-apiserver (the local stack, no scheduler, no proxy) and
// compare them byte for byte with the fault model's rendering.
#include <gtest/gtest.h>
#include <unistd.h>

#include <boost/asio/io_context.hpp>
#include <boost/json.hpp>

#include "faultline/faults/action.hpp"
#include "faultline/faults/request_info.hpp"
#include "faultline/faults/status.hpp"
#include "faultline/harness/async.hpp"
#include "faultline/harness/http_plain.hpp"
#include "faultline/harness/kube_client.hpp"
#include "local_stack.hpp"

namespace faultline::faults {
namespace {

namespace json = boost::json;

// One local stack for the whole program, in a temporary run dir.
testing::LocalStackEnvironment* stack_env = nullptr;

class ApiserverCompat : public ::testing::Test {
 protected:
  void SetUp() override {
    const testing::LocalStack& stack = stack_env->stack;
    ASSERT_TRUE(stack.started()) << "the local stack did not start:\n" << stack.log();
    harness::KubeClientOptions options;
    options.cluster = net::load_kubeconfig(stack.var("FAULTLINE_ADMIN_KUBECONFIG"));
    options.user_agent = "faultline-faults-test";  // not curl: kube-apiserver pretty-prints for curl
    client = std::make_unique<harness::KubeClient>(ioc.get_executor(), options);
  }

  // A namespace of its own per test.
  std::string make_namespace() {
    static int created = 0;
    std::string name = "faults-" + std::to_string(::getpid()) + "-" + std::to_string(++created);
    run(client->create("/api/v1/namespaces",
                       json::object{{"apiVersion", "v1"}, {"kind", "Namespace"}, {"metadata", {{"name", name}}}}));
    return name;
  }

  // The harness's client is asynchronous (coroutines); a test waits for each call here.
  template <class T>
  T run(boost::asio::awaitable<T> task) {
    return harness::run_blocking(ioc, std::move(task));
  }

  boost::asio::io_context ioc;
  std::unique_ptr<harness::KubeClient> client;
};

json::value pod(const std::string& name) {
  return json::object{{"apiVersion", "v1"},
                      {"kind", "Pod"},
                      {"metadata", {{"name", name}}},
                      {"spec", {{"containers", json::array{json::object{{"name", "c"}, {"image", "busybox"}}}}}}};
}

std::string binding(const std::string& pod_name, const std::string& node) {
  return json::serialize(json::object{{"apiVersion", "v1"},
                                      {"kind", "Binding"},
                                      {"metadata", {{"name", pod_name}}},
                                      {"target", {{"apiVersion", "v1"}, {"kind", "Node"}, {"name", node}}}});
}

TEST_F(ApiserverCompat, InjectedNotFoundIsByteForByteTheApiserversNotFound) {
  std::string ns = make_namespace();
  std::string target = "/api/v1/namespaces/" + ns + "/pods/no-such-pod";
  harness::HttpResult real = run(client->request("GET", target));
  ASSERT_EQ(real.status, 404) << real.body;

  actions::Respond respond;
  respond.code = 404;
  HttpResponse injected = respond.render(classify("GET", target));
  EXPECT_EQ(injected.code, real.status);
  EXPECT_EQ(injected.body, real.body);
}

TEST_F(ApiserverCompat, ConflictOnASecondBindHasTheStatusLayoutWeRender) {
  std::string ns = make_namespace();
  run(client->create("/api/v1/namespaces/" + ns + "/pods", pod("p")));
  std::string target = "/api/v1/namespaces/" + ns + "/pods/p/binding";
  ASSERT_EQ(run(client->request("POST", target, binding("p", "node-a"))).status, 201);
  harness::HttpResult real = run(client->request("POST", target, binding("p", "node-b")));
  ASSERT_EQ(real.status, 409) << real.body;

  // Same message as the apiserver's (ours is generic); everything else is our rendering.
  actions::Respond respond;
  respond.code = 409;
  respond.message = std::string(json::parse(real.body).at("message").as_string());
  EXPECT_EQ(respond.render(classify("POST", target)).body, real.body);
}

json::value event(const std::string& ns, const std::string& name) {
  return json::object{{"apiVersion", "v1"},
                      {"kind", "Event"},
                      {"metadata", {{"name", name}}},
                      {"involvedObject", {{"kind", "Pod"}, {"name", "p"}, {"namespace", ns}}},
                      {"reason", "Test"},
                      {"message", "m"},
                      {"type", "Normal"}};
}

std::string resource_version(const json::value& object) {
  return std::string(object.at("metadata").at("resourceVersion").as_string());
}

TEST_F(ApiserverCompat, WatchGoneEventIsTheApiserversExpiredEvent) {
  std::string ns = make_namespace();
  std::string events = "/api/v1/namespaces/" + ns + "/events";
  std::string old_version = resource_version(run(client->create(events, event(ns, "first"))));
  run(client->create(events, event(ns, "second")));
  std::string new_version = resource_version(run(client->create(events, event(ns, "third"))));
  // Core events have no watch cache, so a watch from a revision etcd has compacted away gets the
  // 410 ERROR event from the storage layer, as client-go's reflectors meet it in real clusters.
  harness::PlainResponse compacted =
      run(harness::http_call("POST", stack_env->stack.vars().at("FAULTLINE_ETCD_URL") + "/v3/kv/compaction",
                             R"({"revision":")" + new_version + R"(","physical":true})", "application/json"));
  ASSERT_EQ(compacted.status, 200) << compacted.body;

  harness::HttpResult real =
      run(client->request("GET", events + "?watch=1&timeoutSeconds=2&resourceVersion=" + old_version));
  ASSERT_EQ(real.status, 200) << real.body;
  std::string first_line = real.body.substr(0, real.body.find('\n') + 1);
  json::value error_event = json::parse(first_line);
  ASSERT_EQ(error_event.at("type"), "ERROR") << real.body;

  actions::WatchGone gone;
  gone.message = std::string(error_event.at("object").at("message").as_string());
  EXPECT_EQ(gone.render_event(), first_line);
}

}  // namespace
}  // namespace faultline::faults

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  faultline::faults::stack_env =
      new faultline::testing::LocalStackEnvironment("faultline-faults-compat", "--no-scheduler --nodes 0");
  ::testing::AddGlobalTestEnvironment(faultline::faults::stack_env);
  return RUN_ALL_TESTS();
}
