// faultline-proxy in front of the REAL kube-apiserver of the local stack: transparent relaying
// (kubectl, watches, byte equality) and every fault action observed from the client side.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <thread>

#include <boost/json.hpp>

#include <atomic>
#include <cstdlib>
#include <fstream>
#include <mutex>
#include <optional>
#include <sstream>
#include <utility>

#include "faultline/net/kubeconfig.hpp"
#include "proxy_test.hpp"
#include "sanitizers.hpp"
#include "stale_read_support.hpp"

namespace faultline::testing {

StackWithProxy* env = nullptr;

namespace {

using ::testing::HasSubstr;
using ::testing::Not;
using namespace std::chrono_literals;
namespace json = boost::json;

// ---- transparent ------------------------------------------------------------------------------

TEST_F(ProxyTest, KubectlApplyGetListDeleteThroughTheProxy) {
  std::string manifest = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: applied\n  namespace: " + ns_ +
                         "\ndata:\n  key: through-the-proxy\n";
  EXPECT_THAT(kubectl_proxied("apply -f -", manifest), HasSubstr("configmap/applied created"));
  EXPECT_EQ(kubectl_proxied("-n " + ns_ + " get configmap applied -o jsonpath={.data.key}"), "through-the-proxy");
  EXPECT_THAT(kubectl_direct("-n " + ns_ + " get configmaps -o name"), HasSubstr("configmap/applied"));
  EXPECT_THAT(kubectl_proxied("-n " + ns_ + " get configmaps -o name"), HasSubstr("configmap/applied"));
  EXPECT_THAT(kubectl_proxied("-n " + ns_ + " delete configmap applied"), HasSubstr("deleted"));
  CommandResult gone =
      run_command(kubectl_cmd(env->var("FAULTLINE_ADMIN_KUBECONFIG")) + " -n " + ns_ + " get configmap applied");
  EXPECT_NE(gone.exit_code, 0);
  EXPECT_THAT(gone.output, HasSubstr("NotFound"));
}

TEST_F(ProxyTest, KubectlWatchSeesEventsThroughTheProxy) {
  create_configmap("before");
  std::mutex mutex;
  std::string seen;
  std::thread watcher([&] {
    std::string cmd =
        "timeout 30 " + kubectl_cmd(env->proxy->kubeconfig().string()) + " -n " + ns_ + " get configmaps -w -o name";
    FILE* pipe = ::popen(cmd.c_str(), "r");
    char line[512];
    while (std::fgets(line, sizeof line, pipe) != nullptr) {
      std::lock_guard lock(mutex);
      seen += line;
      if (seen.find("after") != std::string::npos) break;
    }
    ::pclose(pipe);
  });
  auto saw = [&](const std::string& what) {
    for (int i = 0; i < 200; ++i) {
      {
        std::lock_guard lock(mutex);
        if (seen.find(what) != std::string::npos) return true;
      }
      std::this_thread::sleep_for(100ms);
    }
    return false;
  };
  EXPECT_TRUE(saw("configmap/before"));
  create_configmap("after");
  EXPECT_TRUE(saw("configmap/after")) << "kubectl printed:\n" << seen;
  watcher.join();
  std::lock_guard lock(mutex);
  EXPECT_THAT(seen, HasSubstr("configmap/after"));
}

// All values of a header, sorted (a repeated header's order is not part of its meaning).
std::vector<std::string> values_of(const Reply& reply, const std::string& name) {
  std::vector<std::string> out;
  for (auto [it, end] = reply.headers.equal_range(name); it != end; ++it) out.push_back(it->second);
  std::sort(out.begin(), out.end());
  return out;
}

// Same request directly and through the proxy: same status, same body, same end-to-end headers.
TEST_F(ProxyTest, ResponsesEqualDirectOnesByteForByte) {
  for (int i = 0; i < 50; ++i) create_configmap("cm-" + std::to_string(i));
  auto via = proxied();
  auto to = direct();
  for (const std::string& target :
       std::vector<std::string>{cm_path("cm-7"), cm_path(), cm_path() + "?limit=5", std::string("/openapi/v2"),
                                std::string("/api/v1/namespaces/" + ns_ + "/configmaps/missing")}) {
    Reply a = to.request(http::verb::get, target, {}, {{"Accept", "application/json"}});
    Reply b = via.request(http::verb::get, target, {}, {{"Accept", "application/json"}});
    ASSERT_FALSE(a.error) << a.error.message();
    ASSERT_FALSE(b.error) << target << ": " << b.error.message();
    EXPECT_EQ(a.status, b.status) << target;
    EXPECT_EQ(a.body.size(), b.body.size()) << target;
    EXPECT_TRUE(a.body == b.body) << target;
    for (const auto& [name, value] : a.headers) {
      if (name == "date" || name == "audit-id") continue;
      EXPECT_EQ(values_of(b, name), values_of(a, name)) << target << " header " << name;
    }
    for (const auto& [name, value] : b.headers) {
      EXPECT_NE(name, "connection") << target;
      EXPECT_NE(name, "keep-alive") << target;
      EXPECT_GE(a.headers.count(name), 1u) << target << " proxy added header " << name;
    }
  }
  EXPECT_GT(via.request(http::verb::get, "/openapi/v2").body.size(), 1'000'000u);
}

// ---- actions ----------------------------------------------------------------------------------

// The fault actions over HTTP/1.1 (TlsClient, curl --http1.1, kubectl with DISABLE_HTTP2). Every
// action type has at least one test here whose name starts with the type in CamelCase
// (`drop-response`: DropResponse...); unit.ActionCoverage checks it.
class ActionOverHttp1 : public ProxyTest {};

TEST_F(ActionOverHttp1, RespondAnswers429WithRetryAfterAndAStatusBody) {
  create_configmap("x");
  arm("  - {name: throttle, match: {verbs: [get], resources: [configmaps], " + match_ns() +
      "}, action: {type: respond, code: 429, retryAfter: 3s}}\n");
  auto client = proxied();
  Reply r = client.request(http::verb::get, cm_path("x"));
  ASSERT_FALSE(r.error) << r.error.message();
  EXPECT_EQ(r.status, 429);
  EXPECT_EQ(r.header("retry-after"), "3");
  auto body = json::parse(r.body).as_object();
  EXPECT_EQ(body.at("kind").as_string(), "Status");
  EXPECT_EQ(body.at("code").as_int64(), 429);
  EXPECT_EQ(body.at("reason").as_string(), "TooManyRequests");
  // Only the matching request is hit; the connection stays usable.
  Reply list = client.request(http::verb::get, cm_path());
  EXPECT_EQ(list.status, 200);
  EXPECT_EQ(fired("throttle"), 1u);
  EXPECT_THAT(audit_containing("\"rule\":\"throttle\""), HasSubstr("\"rule\":\"throttle\""));
}

TEST_F(ActionOverHttp1, ResetIsSeenAsEconnreset) {
  arm("  - {name: rst, match: {verbs: [list], resources: [configmaps], " + match_ns() + "}, action: {type: reset}}\n");
  auto client = proxied();
  Reply r = client.request(http::verb::get, cm_path());
  EXPECT_EQ(r.status, 0);
  EXPECT_EQ(r.error, asio::error::connection_reset) << r.error.message();
  EXPECT_EQ(fired("rst"), 1u);
}

TEST_F(ActionOverHttp1, CloseEndsTheConnectionWithoutAnswer) {
  arm("  - {name: fin, match: {verbs: [list], resources: [configmaps], " + match_ns() + "}, action: {type: close}}\n");
  auto client = proxied();
  Reply r = client.request(http::verb::get, cm_path());
  EXPECT_EQ(r.status, 0);
  EXPECT_TRUE(r.error == asio::ssl::error::stream_truncated || r.error == http::error::end_of_stream ||
              r.error == asio::error::eof)
      << r.error.message();
}

TEST_F(ActionOverHttp1, DelayHoldsTheRequestThenAnswers) {
  arm("  - {name: slow, match: {verbs: [list], resources: [configmaps], " + match_ns() +
      "}, action: {type: delay, latency: 1500ms}}\n");
  auto client = proxied();
  auto start = std::chrono::steady_clock::now();
  Reply r = client.request(http::verb::get, cm_path());
  EXPECT_EQ(r.status, 200);
  EXPECT_GE(std::chrono::steady_clock::now() - start, 1500ms);
}

TEST_F(ActionOverHttp1, HangNeverAnswersAndClosesAfterItsDuration) {
  arm("  - {name: stuck, match: {verbs: [list], resources: [configmaps], " + match_ns() +
      "}, action: {type: hang, duration: 1s}}\n");
  auto client = proxied();
  auto start = std::chrono::steady_clock::now();
  Reply r = client.request(http::verb::get, cm_path());
  EXPECT_EQ(r.status, 0);
  EXPECT_TRUE(r.error) << "expected the connection to end without an answer";
  EXPECT_GE(std::chrono::steady_clock::now() - start, 1s);
}

TEST_F(ActionOverHttp1, DropResponseLeavesTheObjectWrittenUpstream) {
  arm("  - {name: lost, match: {verbs: [create], resources: [configmaps], " + match_ns() +
      "}, action: {type: drop-response, then: reset}}\n");
  auto client = proxied();
  std::string body = R"({"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"written"},"data":{"k":"v"}})";
  Reply r = client.request(http::verb::post, cm_path(), body, {{"Content-Type", "application/json"}});
  EXPECT_EQ(r.status, 0);
  EXPECT_EQ(r.error, asio::error::connection_reset) << r.error.message();
  auto check = direct();
  EXPECT_EQ(check.request(http::verb::get, cm_path("written")).status, 200);
  EXPECT_THAT(audit_containing("\"action\":\"drop-response\""), HasSubstr("\"action\":\"drop-response\""));
}

TEST_F(ActionOverHttp1, GoawayGracefulAnswersWithConnectionCloseAndTheNextRequestGoesOnANewConnection) {
  create_configmap("last");
  create_configmap("next");
  arm(rule("drain", "last", "{type: goaway}"));
  // curl: two requests, one connection if the first answer allows it.
  CommandResult r =
      run_command("curl -sS -v --http1.1 --cacert " + shell_quote(env->var("FAULTLINE_CA_CERT")) +
                  " -o /dev/null -o /dev/null " + shell_quote("https://" + env->proxy_listen() + cm_path("last")) +
                  " " + shell_quote("https://" + env->proxy_listen() + cm_path("next")));
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_THAT(r.output, HasSubstr("< HTTP/1.1 200"));
  EXPECT_THAT(r.output, HasSubstr("< Connection: close"));
  EXPECT_THAT(r.output, Not(HasSubstr("Re-using existing connection"))) << r.output;
  EXPECT_THAT(audit_line(cm_path("last")), HasSubstr("\"proto\":\"h1\""));
  EXPECT_THAT(audit_line(cm_path("next")), HasSubstr("\"status\":200"));
  EXPECT_EQ(fired("drain"), 1u);
}

TEST_F(ActionOverHttp1, GoawayAbruptEndsTheConnectionWithoutAnswer) {
  create_configmap("victim");
  arm(rule("away", "victim", "{type: goaway, mode: abrupt, errorCode: ENHANCE_YOUR_CALM}"));
  auto client = proxied();
  Reply r = client.request(http::verb::get, cm_path("victim"));
  EXPECT_EQ(r.status, 0);
  EXPECT_TRUE(r.error == asio::ssl::error::stream_truncated || r.error == http::error::end_of_stream ||
              r.error == asio::error::eof)
      << r.error.message();
  EXPECT_EQ(fired("away"), 1u);
  // The next connection is served (the rule fired once).
  auto again = proxied();
  EXPECT_EQ(again.request(http::verb::get, cm_path("victim")).status, 200);
}

TEST_F(ActionOverHttp1, StallHoldsTheRequestLikeADelayAndTheConnectionGoesOn) {
  create_configmap("frozen");
  arm(rule("freeze", "frozen", "{type: stall, duration: 1500ms}"));
  auto client = proxied();
  auto start = std::chrono::steady_clock::now();
  Reply r = client.request(http::verb::get, cm_path("frozen"));
  ASSERT_FALSE(r.error) << r.error.message();
  EXPECT_EQ(r.status, 200);
  EXPECT_GE(std::chrono::steady_clock::now() - start, 1500ms);
  ASSERT_TRUE(client.connected());
  EXPECT_EQ(client.request(http::verb::get, cm_path("frozen")).status, 200);  // the same connection
  EXPECT_THAT(audit_line(cm_path("frozen")), HasSubstr("\"proto\":\"h1\""));
  EXPECT_EQ(fired("freeze"), 1u);
}

// ---- hold: a batch of requests released together ----------------------------------------------

// Audit lines of namespace `ns` (this test's) that contain `needle`: the audit log spans every test.
std::size_t lines_with(const std::string& audit, const std::string& ns, const std::string& needle) {
  std::size_t n = 0;
  std::istringstream in(audit);
  for (std::string line; std::getline(in, line);)
    if (line.find("\"namespace\":\"" + ns + "\"") != std::string::npos && line.find(needle) != std::string::npos) ++n;
  return n;
}

// lines_with() of the audit log, once it reaches `want` (or after 5 s).
std::size_t audit_lines_with(const std::function<std::string()>& audit, const std::string& ns,
                             const std::string& needle, std::size_t want) {
  std::size_t n = 0;
  for (int i = 0; i < 50 && (n = lines_with(audit(), ns, needle)) < want; ++i) std::this_thread::sleep_for(100ms);
  return n;
}

// curl --http1.1 through the proxy, creating configmap `name` (or, with an empty name, listing);
// prints "<status> <seconds>" on its last line.
CommandResult curl_h1(const std::string& path, const std::string& name, int max_time = 60) {
  std::string cmd = "curl -sS --http1.1 --max-time " + std::to_string(max_time) + " -A faultline-hold-test --cacert " +
                    shell_quote(env->var("FAULTLINE_CA_CERT")) + " -w '\n%{http_code} %{time_total}\n' ";
  if (!name.empty()) {
    const std::string body = R"({"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":")" + name + R"("}})";
    cmd += "-X POST -H 'Content-Type: application/json' --data-binary " + shell_quote(body) + " ";
  }
  return run_command(cmd + shell_quote("https://" + env->proxy_listen() + path));
}

// The status and seconds of curl_h1's last line.
std::pair<int, double> status_and_time(const CommandResult& r) {
  auto nl = r.output.find_last_of('\n', r.output.size() >= 2 ? r.output.size() - 2 : 0);
  std::istringstream last(r.output.substr(nl == std::string::npos ? 0 : nl + 1));
  int status = 0;
  double seconds = 0;
  last >> status >> seconds;
  return {status, seconds};
}

TEST_F(ActionOverHttp1, HoldReleasesThreeConcurrentCreatesTogether) {
  arm("  - {name: trio, match: {verbs: [create], resources: [configmaps], " + match_ns() +
      "}, action: {type: hold, count: 3, duration: 60s}}\n");
  CommandResult first, second, third;
  std::thread a([&] { first = curl_h1(cm_path(), "first"); });
  std::thread b([&] { second = curl_h1(cm_path(), "second"); });
  std::this_thread::sleep_for(2s);
  // Two are held: neither reached the apiserver yet.
  EXPECT_THAT(run_command(kubectl_cmd(env->var("FAULTLINE_ADMIN_KUBECONFIG")) + " -n " + ns_ +
                          " get configmap first second -o name")
                  .output,
              Not(HasSubstr("configmap/")));
  const auto third_started = std::chrono::steady_clock::now();
  third = curl_h1(cm_path(), "third");
  const auto third_took = std::chrono::steady_clock::now() - third_started;
  a.join();
  b.join();
  for (const auto* r : {&first, &second, &third}) EXPECT_EQ(status_and_time(*r).first, 201) << r->output;
  // The first two waited for the third; the third was released at once.
  EXPECT_GE(status_and_time(first).second, 2.0) << first.output;
  EXPECT_GE(status_and_time(second).second, 2.0) << second.output;
  EXPECT_LT(third_took, 5s);
  EXPECT_THAT(kubectl_direct("-n " + ns_ + " get configmap first second third -o name"), HasSubstr("configmap/third"));
  EXPECT_EQ(audit_lines_with([this] { return admin("GET", "/v1/audit").body; }, ns_,
                             "\"held\":{\"outcome\":\"forwarded\",\"batch\":3,", 3),
            3u);
  EXPECT_EQ(fired("trio"), 3u);
}

TEST_F(ActionOverHttp1, HoldReleasesByTimeWhenTooFewArrive) {
  arm("  - {name: alone, match: {verbs: [list], resources: [configmaps], " + match_ns() +
      "}, action: {type: hold, count: 5, duration: 1500ms}}\n");
  CommandResult r = curl_h1(cm_path(), "");
  auto [status, seconds] = status_and_time(r);
  EXPECT_EQ(status, 200) << r.output;
  EXPECT_GE(seconds, 1.5) << r.output;
  std::string line = audit_line(cm_path());
  EXPECT_THAT(line, HasSubstr("\"held\":{\"outcome\":\"forwarded\",\"batch\":1,\"waitedMs\":1")) << line;
}

TEST_F(ActionOverHttp1, HoldFailsTheWholeBatchWithAStatusAndNothingIsCreated) {
  arm("  - {name: fail, match: {verbs: [create], resources: [configmaps], " + match_ns() +
      "}, action: {type: hold, count: 2, duration: 60s, then: respond, code: 503}}\n");
  CommandResult first;
  std::thread a([&] { first = curl_h1(cm_path(), "one"); });
  std::this_thread::sleep_for(1s);
  CommandResult second = curl_h1(cm_path(), "two");
  a.join();
  for (const auto* r : {&first, &second}) {
    EXPECT_EQ(status_and_time(*r).first, 503) << r->output;
    EXPECT_THAT(r->output, HasSubstr("\"kind\":\"Status\"")) << r->output;
  }
  EXPECT_GE(status_and_time(first).second, 1.0) << first.output;
  EXPECT_THAT(
      run_command(kubectl_cmd(env->var("FAULTLINE_ADMIN_KUBECONFIG")) + " -n " + ns_ + " get configmap one two -o name")
          .output,
      Not(HasSubstr("configmap/")));
  EXPECT_EQ(audit_lines_with([this] { return admin("GET", "/v1/audit").body; }, ns_,
                             "\"held\":{\"outcome\":\"answered\",\"batch\":2,", 2),
            2u);
}

TEST_F(ActionOverHttp1, HoldResetsTheWholeBatch) {
  arm("  - {name: cut, match: {verbs: [create], resources: [configmaps], " + match_ns() +
      "}, action: {type: hold, count: 2, duration: 60s, then: reset}}\n");
  CommandResult first;
  std::thread a([&] { first = curl_h1(cm_path(), "one"); });
  std::this_thread::sleep_for(1s);
  CommandResult second = curl_h1(cm_path(), "two");
  a.join();
  for (const auto* r : {&first, &second}) {
    EXPECT_EQ(r->exit_code, 56) << r->output;  // curl: failure receiving (connection reset)
    EXPECT_EQ(status_and_time(*r).first, 0) << r->output;
  }
  EXPECT_THAT(
      run_command(kubectl_cmd(env->var("FAULTLINE_ADMIN_KUBECONFIG")) + " -n " + ns_ + " get configmap one two -o name")
          .output,
      Not(HasSubstr("configmap/")));
  EXPECT_EQ(audit_lines_with([this] { return admin("GET", "/v1/audit").body; }, ns_,
                             "\"held\":{\"outcome\":\"reset\",\"batch\":2,", 2),
            2u);
}

// A client that gives up while held leaves the batch: it is never forwarded, and it does not count
// towards the batch (the next two are released together, not the next one alone).
TEST_F(ActionOverHttp1, HoldForgetsARequestWhoseClientGaveUp) {
  arm("  - {name: pair, match: {verbs: [create], resources: [configmaps], " + match_ns() +
      "}, action: {type: hold, count: 2, duration: 30s}}\n");
  CommandResult gone = curl_h1(cm_path(), "gone", 1);
  EXPECT_EQ(gone.exit_code, 28) << gone.output;  // curl: its --max-time passed
  std::this_thread::sleep_for(500ms);
  CommandResult kept;
  std::thread a([&] { kept = curl_h1(cm_path(), "kept", 20); });
  std::this_thread::sleep_for(1s);
  CommandResult last = curl_h1(cm_path(), "last", 20);
  a.join();
  EXPECT_EQ(status_and_time(kept).first, 201) << kept.output;
  EXPECT_EQ(status_and_time(last).first, 201) << last.output;
  EXPECT_GE(status_and_time(kept).second, 1.0) << kept.output;  // it waited for `last`, not with `gone`
  EXPECT_THAT(
      run_command(kubectl_cmd(env->var("FAULTLINE_ADMIN_KUBECONFIG")) + " -n " + ns_ + " get configmap gone -o name")
          .output,
      Not(HasSubstr("configmap/gone")));
  EXPECT_EQ(audit_lines_with([this] { return admin("GET", "/v1/audit").body; }, ns_,
                             "\"held\":{\"outcome\":\"gave-up\",\"batch\":0,", 1),
            1u);
  EXPECT_EQ(audit_lines_with([this] { return admin("GET", "/v1/audit").body; }, ns_,
                             "\"held\":{\"outcome\":\"forwarded\",\"batch\":2,", 2),
            2u);
}

// The outage of a scenario rule (the admin API's own is below): the request that fires it and
// every live connection are cut, then the proxy serves again.
TEST_F(ActionOverHttp1, OutageOfARuleCutsEveryConnectionUntilItEnds) {
  create_configmap("victim");
  auto bystander = proxied();
  ASSERT_EQ(bystander.request(http::verb::get, cm_path()).status, 200);  // a live keep-alive connection
  arm("  - {name: down, match: {" + match_ns() +
      ", names: [victim]}, when: {limit: 1}, action: {type: outage, mode: reset, duration: 5s}}\n");
  auto start = std::chrono::steady_clock::now();
  auto client = proxied();
  Reply r = client.request(http::verb::get, cm_path("victim"));
  EXPECT_EQ(r.status, 0);
  EXPECT_TRUE(r.error) << "the request that started the outage was answered";
  Reply cut = bystander.request(http::verb::get, cm_path());
  EXPECT_EQ(cut.status, 0);
  EXPECT_TRUE(cut.error) << "the live connection survived the outage";
  int status = 0;
  for (int i = 0; i < 300 && status != 200; ++i) {
    std::this_thread::sleep_for(100ms);
    auto again = proxied();
    status = again.request(http::verb::get, cm_path("victim")).status;
  }
  EXPECT_EQ(status, 200) << "the proxy did not serve again after the outage";
  EXPECT_GE(std::chrono::steady_clock::now() - start, 5s);
  EXPECT_EQ(fired("down"), 1u);
}

TEST_F(ProxyTest, OutageRefusesConnectionsThenRecovers) {
  AdminReply started = admin("POST", "/v1/outage?duration=3s&mode=refuse");
  ASSERT_EQ(started.code, 200) << started.body;
  auto client = proxied();
  EXPECT_EQ(client.connect(), asio::error::connection_refused);
  bool recovered = false;
  for (int i = 0; i < 150 && !recovered; ++i) {
    std::this_thread::sleep_for(100ms);
    auto again = proxied();
    recovered = !again.connect() && again.request(http::verb::get, cm_path()).status == 200;
  }
  EXPECT_TRUE(recovered) << "the proxy did not accept connections again after the outage";
}

TEST_F(ProxyTest, OutageResetCutsLiveConnectionsAndRecovers) {
  auto client = proxied();
  ASSERT_EQ(client.request(http::verb::get, cm_path()).status, 200);  // a live keep-alive connection
  AdminReply started = admin("POST", "/v1/outage?duration=2s&mode=reset");
  ASSERT_EQ(started.code, 200) << started.body;
  Reply cut = client.request(http::verb::get, cm_path());
  EXPECT_EQ(cut.status, 0);
  EXPECT_TRUE(cut.error) << "the live connection survived the outage";
  auto fresh = proxied();
  Reply refused = fresh.request(http::verb::get, cm_path());
  EXPECT_EQ(refused.status, 0);
  std::this_thread::sleep_for(2500ms);
  auto after = proxied();
  EXPECT_EQ(after.request(http::verb::get, cm_path()).status, 200);
}

// stale-read: the rule records the resourceVersion current at the first request after arming; a
// LIST through the proxy is then kube-apiserver's own read at it.
TEST_F(ActionOverHttp1, StaleReadListsTheObjectsAsTheyWereWhenTheRuleWasArmed) {
  create_configmap("a");
  create_configmap("b");
  arm("  - {name: back-h1, match: {verbs: [list], resources: [configmaps], " + match_ns() +
      "}, action: {type: stale-read}}\n");
  auto client = proxied();
  ASSERT_EQ(client.request(http::verb::get, cm_path("a")).status, 200);  // records the resourceVersion
  create_configmap("c");
  auto check = direct();
  Reply now = check.request(http::verb::get, cm_path());
  ASSERT_EQ(now.status, 200);
  EXPECT_EQ(stale_read::list_answer(now.body).names, (std::vector<std::string>{"a", "b", "c"}));
  Reply then = client.request(http::verb::get, cm_path() + "?limit=500&resourceVersion=0");
  ASSERT_EQ(then.status, 200) << then.body;
  auto stale = stale_read::list_answer(then.body);
  EXPECT_EQ(stale.names, (std::vector<std::string>{"a", "b"}));
  // kube-apiserver's own resourceVersion, before c's.
  const std::string c_rv(
      json::parse(check.request(http::verb::get, cm_path("c")).body).at("metadata").at("resourceVersion").as_string());
  EXPECT_LT(std::stoull(stale.resource_version), std::stoull(c_rv));
  EXPECT_LT(std::stoull(stale.resource_version), std::stoull(stale_read::list_answer(now.body).resource_version));
  EXPECT_THAT(
      audit_line(cm_path() + "?limit=500&resourceVersion=0"),
      HasSubstr(R"("staleRead":{"requested":"0","served":")" + stale.resource_version + R"(","expired":false})"));
  EXPECT_EQ(stale_read::stale_reads(admin("GET", "/metrics").body, "back-h1", "served"), 1u);
  EXPECT_EQ(fired("back-h1"), 1u);
}

// A resourceVersion kube-apiserver has compacted: its own 410 Expired reaches the client, and the
// audit and the metrics say so.
TEST_F(ActionOverHttp1, StaleReadOfACompactedResourceVersionRelaysTheApiserversExpired) {
  create_configmap("a");
  arm("  - {name: back-compacted, match: {verbs: [list], resources: [configmaps], " + match_ns() +
      "}, action: {type: stale-read}}\n");
  auto client = proxied();
  ASSERT_EQ(client.request(http::verb::get, cm_path("a")).status, 200);
  create_configmap("b");
  stale_read::compact_etcd(env->var("FAULTLINE_ETCD_URL"));
  // kube-apiserver's watch cache drops its older snapshots when it next polls (every 15 s).
  Reply r;
  for (int i = 0; i < 60; ++i) {
    r = client.request(http::verb::get, cm_path());
    if (r.status != 200) break;
    std::this_thread::sleep_for(500ms);
  }
  ASSERT_EQ(r.status, 410) << r.body;
  auto status = json::parse(r.body).as_object();
  EXPECT_EQ(status.at("reason").as_string(), "Expired");
  std::string expired;
  std::istringstream audit(audit_containing(R"("expired":true)"));
  for (std::string line; std::getline(audit, line);)
    if (line.find(R"("rule":"back-compacted")") != std::string::npos &&
        line.find(R"("status":410)") != std::string::npos)
      expired = line;
  EXPECT_THAT(expired, HasSubstr(R"("upstreamStatus":410)"));
  EXPECT_THAT(expired, HasSubstr(R"(","expired":true})"));
  EXPECT_GE(stale_read::stale_reads(admin("GET", "/metrics").body, "back-compacted", "expired"), 1u);
}

// ---- watch actions ----------------------------------------------------------------------------

TEST_F(ActionOverHttp1, WatchGoneSendsA410ErrorEventAndEndsTheStream) {
  create_configmap("a");
  arm("  - {name: expire, match: {" + match_ns() + "}, action: {type: watch-gone, afterEvents: 1}}\n");
  auto client = proxied();
  Reply r = client.request(http::verb::get, cm_path() + "?watch=1", {}, {{"Accept", "application/json"}});
  ASSERT_FALSE(r.error) << r.error.message();
  auto events = events_of(r.body);
  ASSERT_EQ(events.size(), 2u) << r.body;
  EXPECT_EQ(events[0].at("type").as_string(), "ADDED");
  EXPECT_EQ(events[1].at("type").as_string(), "ERROR");
  EXPECT_EQ(events[1].at("object").at("code").as_int64(), 410);
  EXPECT_EQ(events[1].at("object").at("reason").as_string(), "Expired");
}

TEST_F(ActionOverHttp1, WatchResetCutsTheStreamAndTheClientReconnects) {
  create_configmap("a");
  arm("  - {name: cut, match: {" + match_ns() + "}, when: {limit: 1}, action: {type: watch-reset, afterEvents: 1}}\n");
  auto client = proxied();
  Reply first = client.request(http::verb::get, cm_path() + "?watch=1");
  EXPECT_EQ(first.error, asio::error::connection_reset) << first.error.message();
  EXPECT_EQ(events_of(first.body).size(), 1u);
  // The reconnecting watch (limit reached) streams normally.
  auto again = proxied();
  std::string seen;
  Reply second = again.stream(http::verb::get, cm_path() + "?watch=1", [&](std::string_view piece) {
    seen.append(piece);
    return seen.find("\"name\":\"a\"") == std::string::npos || seen.back() != '\n';
  });
  EXPECT_EQ(second.status, 200);
  EXPECT_THAT(seen, HasSubstr("\"ADDED\""));
  EXPECT_EQ(fired("cut"), 1u);
}

TEST_F(ActionOverHttp1, WatchInjectSendsADeletedForALiveObjectEvenWhenProtobufWasAsked) {
  create_configmap("alive");
  arm("  - {name: ghost, match: {" + match_ns() + "}, action: {type: watch-inject, event: DELETED, afterEvents: 1}}\n");
  auto client = proxied();
  std::string seen;
  Reply r = client.stream(http::verb::get, cm_path() + "?watch=1",
                          [&](std::string_view piece) {
                            seen.append(piece);
                            return seen.find("DELETED") == std::string::npos || seen.back() != '\n';
                          },
                          {}, {{"Accept", "application/vnd.kubernetes.protobuf;stream=watch, application/json"}});
  EXPECT_EQ(r.status, 200);
  EXPECT_THAT(r.header("content-type"), HasSubstr("application/json"));
  auto events = events_of(seen);
  ASSERT_EQ(events.size(), 2u) << seen;
  EXPECT_EQ(events[1].at("type").as_string(), "DELETED");
  EXPECT_EQ(events[1].at("object").at("metadata").at("name").as_string(), "alive");
  auto check = direct();
  EXPECT_EQ(check.request(http::verb::get, cm_path("alive")).status, 200);  // it was never deleted
}

TEST_F(ActionOverHttp1, WatchDropHidesEvents) {
  create_configmap("a");
  create_configmap("b");
  arm("  - {name: forget, match: {" + match_ns() + "}, action: {type: watch-drop, events: [ADDED], count: 1}}\n");
  auto client = proxied();
  std::string seen;
  Reply r = client.stream(http::verb::get, cm_path() + "?watch=1", [&](std::string_view piece) {
    seen.append(piece);
    return seen.find("\"name\":\"b\"") == std::string::npos || seen.back() != '\n';
  });
  EXPECT_EQ(r.status, 200);
  auto events = events_of(seen);
  ASSERT_EQ(events.size(), 1u) << seen;
  EXPECT_EQ(events[0].at("object").at("metadata").at("name").as_string(), "b");
}

// The resourceVersion of the test namespace's configmap collection now (a watch from it replays
// every later change, in order).
std::string collection_rv(TlsClient& client, const std::string& path) {
  Reply r = client.request(http::verb::get, path);
  EXPECT_EQ(r.status, 200) << r.body;
  return std::string(json::parse(r.body).at("metadata").at("resourceVersion").as_string());
}

std::uint64_t rv_of(const json::object& event) {
  return std::stoull(std::string(event.at("object").at("metadata").at("resourceVersion").as_string()));
}

TEST_F(ActionOverHttp1, WatchDelayDeliversEveryEventAfterItsDurationInOrder) {
  auto direct_client = direct();
  const std::string rv0 = collection_rv(direct_client, cm_path());
  for (const char* name : {"a", "b", "c"}) create_configmap(name);
  arm("  - {name: late, match: {" + match_ns() + "}, action: {type: watch-delay, duration: 2s}}\n");
  auto client = proxied();
  const std::string target = cm_path() + "?watch=1&resourceVersion=" + rv0 + "&timeoutSeconds=4";
  std::string seen;
  std::optional<std::chrono::milliseconds> first;
  const auto start = std::chrono::steady_clock::now();
  Reply r = client.stream(http::verb::get, target, [&](std::string_view piece) {
    if (!first && !piece.empty())
      first = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - start);
    seen.append(piece);
    return true;
  });
  EXPECT_EQ(r.status, 200);
  EXPECT_FALSE(r.error) << r.error.message();
  auto events = events_of(seen);
  ASSERT_EQ(events.size(), 3u) << seen;
  ASSERT_TRUE(first);
  EXPECT_GE(first->count(), 2000);  // the apiserver sent them at once; the proxy held them 2 s
  EXPECT_LT(first->count(), 4000);  // and not until the watch ended
  for (std::size_t i = 0; i < 3; ++i) {
    EXPECT_EQ(events[i].at("object").at("metadata").at("name").as_string(), std::string(1, char('a' + i)));
    if (i > 0) EXPECT_LT(rv_of(events[i - 1]), rv_of(events[i]));
  }
  std::string line = audit_line(target.substr(target.rfind('/')));
  EXPECT_THAT(line, HasSubstr("\"action\":\"watch-delay\""));
  EXPECT_THAT(line, HasSubstr("\"eventsDelayed\":3,\"eventsWithheld\":0"));
}

TEST_F(ActionOverHttp1, WatchDelayDeliversWhatItHoldsWhenTheWatchEndsCleanly) {
  auto direct_client = direct();
  const std::string rv0 = collection_rv(direct_client, cm_path());
  for (const char* name : {"a", "b"}) create_configmap(name);
  arm("  - {name: late, match: {" + match_ns() + "}, action: {type: watch-delay, duration: 30s}}\n");
  auto client = proxied();
  // The apiserver ends the watch after 1 s, while the proxy holds both events for 30 s: they go
  // out first, then the clean end.
  const auto start = std::chrono::steady_clock::now();
  Reply r = client.request(http::verb::get, cm_path() + "?watch=1&resourceVersion=" + rv0 + "&timeoutSeconds=1");
  EXPECT_LT(std::chrono::steady_clock::now() - start, 20s);
  EXPECT_EQ(r.status, 200);
  EXPECT_FALSE(r.error) << r.error.message();
  auto events = events_of(r.body);
  ASSERT_EQ(events.size(), 2u) << r.body;
  EXPECT_EQ(events[0].at("object").at("metadata").at("name").as_string(), "a");
  EXPECT_EQ(events[1].at("object").at("metadata").at("name").as_string(), "b");
}

TEST_F(ActionOverHttp1, WatchDelayDropsWhatItHoldsWhenTheClientGoesAway) {
  auto direct_client = direct();
  const std::string rv0 = collection_rv(direct_client, cm_path());
  for (const char* name : {"a", "b"}) create_configmap(name);
  arm("  - {name: late, match: {" + match_ns() + "}, action: {type: watch-delay, duration: 2s}}\n");
  const std::string target = cm_path() + "?watch=1&resourceVersion=" + rv0 + "&timeoutSeconds=120";
  // The client gives up after 1 s, while both events are held.
  CommandResult r = run_command("curl -sS -N --http1.1 -A faultline-proxy-integration-test --max-time 1 --cacert " +
                                shell_quote(env->var("FAULTLINE_CA_CERT")) + " " +
                                shell_quote("https://" + env->proxy_listen() + target));
  EXPECT_EQ(r.exit_code, 28) << r.output;
  EXPECT_TRUE(events_of(r.output.substr(0, r.output.rfind("curl:"))).empty()) << r.output;
  // Over HTTP/1.1 the proxy learns it when a write fails: the held events go out to a closed
  // connection, and the next one fails. The watch then ends at once (not when the apiserver ends it,
  // 120 s later): its audit record comes, and the proxy goes on.
  create_configmap("c");
  std::string line = audit_line(target.substr(target.rfind('/')));
  EXPECT_THAT(line, HasSubstr("\"eventsDelayed\":3"));
  EXPECT_EQ(kubectl_proxied("-n " + ns_ + " get configmap c -o name"), "configmap/c\n");
}

TEST_F(ActionOverHttp1, WatchCoalesceDeliversOnlyTheLastOfABurstOfUpdatesToOneObject) {
  auto direct_client = direct();
  const std::string rv0 = collection_rv(direct_client, cm_path());
  create_configmap("a");
  for (int i = 1; i <= 4; ++i)
    kubectl_direct("-n " + ns_ + " patch configmap a -p " +
                   shell_quote(R"({"data":{"k":")" + std::to_string(i) + "\"}}"));
  create_configmap("b");
  arm("  - {name: squash, match: {" + match_ns() + "}, action: {type: watch-coalesce, window: 1s}}\n");
  auto client = proxied();
  const std::string target = cm_path() + "?watch=1&resourceVersion=" + rv0 + "&timeoutSeconds=3";
  Reply r = client.request(http::verb::get, target);
  EXPECT_EQ(r.status, 200);
  EXPECT_FALSE(r.error) << r.error.message();
  auto events = events_of(r.body);
  // ADDED a, four MODIFIED a, ADDED b upstream: the last of a's and b's reach the client.
  ASSERT_EQ(events.size(), 2u) << r.body;
  EXPECT_EQ(events[0].at("type").as_string(), "MODIFIED");
  EXPECT_EQ(events[0].at("object").at("metadata").at("name").as_string(), "a");
  EXPECT_EQ(events[0].at("object").at("data").at("k").as_string(), "4");
  EXPECT_EQ(events[1].at("type").as_string(), "ADDED");
  EXPECT_EQ(events[1].at("object").at("metadata").at("name").as_string(), "b");
  EXPECT_LT(rv_of(events[0]), rv_of(events[1]));
  std::string line = audit_line(target.substr(target.rfind('/')));
  EXPECT_THAT(line, HasSubstr("\"eventsDelayed\":2,\"eventsWithheld\":4"));
  EXPECT_THAT(
      admin("GET", "/metrics").body,
      HasSubstr("faultline_watch_events_held_total{rule=\"squash\",action=\"watch-coalesce\",outcome=\"withheld\"} 4"));
}

// ---- admin ------------------------------------------------------------------------------------

TEST_F(ProxyTest, BadScenarioIsRejectedAndTheRunningOneStays) {
  arm("  - {name: keep-me, match: {" + match_ns() + "}, action: {type: reset}}\n");
  AdminReply bad = admin("PUT", "/v1/scenario",
                         "apiVersion: faultline/v1\nkind: Scenario\nfaults:\n  - {name: x, action: {type: explode}}\n");
  EXPECT_EQ(bad.code, 400);
  EXPECT_THAT(bad.body, HasSubstr("explode"));
  AdminReply current = admin("GET", "/v1/scenario");
  EXPECT_EQ(current.code, 200);
  EXPECT_THAT(current.body, HasSubstr("keep-me"));
}

// ---- resource limits --------------------------------------------------------------------------

// The soft and hard "Max open files" of a process, from /proc.
std::pair<std::string, std::string> open_files_limits(pid_t pid) {
  std::ifstream limits("/proc/" + std::to_string(pid) + "/limits");
  for (std::string line; std::getline(limits, line);) {
    if (line.rfind("Max open files", 0) != 0) continue;
    std::istringstream fields(line.substr(std::string("Max open files").size()));
    std::string soft, hard;
    fields >> soft >> hard;
    return {soft, hard};
  }
  return {};
}

std::size_t count_of(const std::string& text, const std::string& needle) {
  std::size_t n = 0;
  for (auto at = text.find(needle); at != std::string::npos; at = text.find(needle, at + 1)) ++n;
  return n;
}

// A scheduler binding a pod burst opens a connection per bind; the usual soft limit of 1024 open
// files would run out (each connection holds two descriptors in the proxy).
TEST_F(ProxyTest, ProxyRaisesItsOpenFilesLimitToTheHardLimit) {
  StackProxy proxy(env->stack, "proxy-nofile", (env->dir() / "proxy-nofile-audit.jsonl").string(),
                   OpenFilesLimit{256, 4096});
  EXPECT_EQ(open_files_limits(proxy.pid()), std::make_pair(std::string("4096"), std::string("4096")));
  EXPECT_THAT(proxy.log(), HasSubstr("open files limit raised from 256 to 4096"));
  EXPECT_THAT(proxy.log(), HasSubstr("open files limit is 4096"));  // still below what a burst needs: warned
}

// Out of descriptors, accepting fails: the proxy must pause and retry (not spin and flood its log),
// and serve again as soon as connections end.
TEST_F(ProxyTest, ProxyOutOfDescriptorsRecoversWhenConnectionsEnd) {
  if (faultline::testing::kAddressSanitizer) {
    // UBSan's vptr check opens a pipe to find out whether it may read a vtable; in a process with
    // no descriptor left it cannot, and reports every virtual call as "invalid vptr" (seen under
    // `make sanitize`: on boost::system::error_category, right after the first failed accept).
    GTEST_SKIP() << "needs a proxy without sanitizers: the sanitizer runtime itself needs descriptors";
  }
  // --max-connections above what 40 descriptors hold: by default the proxy would stop at
  // (40 - 64) / 2 = 1 connection and never run out; here accepting itself must fail.
  StackProxy proxy(env->stack, "proxy-fdless", (env->dir() / "proxy-fdless-audit.jsonl").string(),
                   OpenFilesLimit{40, 40}, {"--max-connections", "1000"});
  EXPECT_THAT(proxy.log(), HasSubstr("open files limit is 40"));
  asio::io_context io;
  auto listen = net::parse_host_port(proxy.listen());
  asio::ip::tcp::endpoint endpoint(asio::ip::make_address(listen.host), listen.port);
  std::vector<asio::ip::tcp::socket> hogs;
  for (int i = 0; i < 60; ++i) {  // more than the proxy can accept: the rest wait in its backlog
    hogs.emplace_back(io);
    hogs.back().connect(endpoint);
  }
  std::this_thread::sleep_for(3s);
  std::string log = proxy.log();
  EXPECT_THAT(log, HasSubstr("accepting connections failed"));
  EXPECT_LE(count_of(log, "accepting connections failed"), 2u) << "the accept error floods the log";
  hogs.clear();  // the proxy's sessions see EOF in their TLS handshake and end
  int status = 0;
  for (int i = 0; i < 100 && status != 200; ++i) {
    std::this_thread::sleep_for(100ms);
    TlsClient client(listen, proxy_tls());
    status = client.request(http::verb::get, cm_path()).status;
  }
  EXPECT_EQ(status, 200) << "the proxy did not serve again after its connections ended\n" << proxy.log();
  EXPECT_TRUE(proxy.stop()) << proxy.log();
}

// ---- audit log and /healthz -------------------------------------------------------------------

TEST_F(ProxyTest, AuditRecordReachesTheFileWithoutFurtherTraffic) {
  // A quick burst, then silence: the last record must reach the file by the proxy's flush timer,
  // not by a later request (there is none).
  TlsClient client = proxied();
  const std::string missing = "/api/v1/namespaces/" + ns_ + "/configmaps/quiet-";
  for (int i = 0; i < 5; ++i) EXPECT_EQ(client.request(http::verb::get, missing + std::to_string(i)).status, 404);
  EXPECT_THAT(file_containing(env->audit_log(), missing + "4"), HasSubstr(missing + "4"))
      << "the audit file lacks the last record of the burst";
}

TEST_F(ProxyTest, HealthzIs503NamingTheAuditLogWhileItCannotBeWritten) {
  StackProxy full(env->stack, "proxy-dev-full", "/dev/full");
  EXPECT_EQ(admin_at(full.admin(), "GET", "/healthz").code, 200) << "nothing has been written yet";
  TlsClient client(net::parse_host_port(full.listen()), proxy_tls());
  EXPECT_EQ(client.request(http::verb::get, "/api/v1/namespaces/" + ns_).status, 200);
  AdminReply health = admin_until(full.admin(), "/healthz", 503);
  ASSERT_EQ(health.code, 503) << health.body;
  auto body = json::parse(health.body);
  EXPECT_EQ(body.at("status").as_string(), "unhealthy");
  EXPECT_THAT(std::string(body.at("error").as_string()),
              HasSubstr("audit log /dev/full: writing failed: No space left on device"));
  client.close();
  EXPECT_TRUE(full.stop()) << "a failing audit log must not spoil the shutdown:\n" << full.log();
}

TEST_F(ProxyTest, HealthzRecoversOnceTheRemovedAuditFileCanBeCreatedAgain) {
  const fs::path folder = env->dir() / "audit-recovery";
  fs::create_directories(folder);
  StackProxy proxy(env->stack, "proxy-audit-recovery", (folder / "audit.jsonl").string());
  fs::remove_all(folder);
  TlsClient client(net::parse_host_port(proxy.listen()), proxy_tls());
  const std::string configmaps = "/api/v1/namespaces/" + ns_ + "/configmaps/";
  EXPECT_EQ(client.request(http::verb::get, configmaps + "lost").status, 404);
  AdminReply broken = admin_until(proxy.admin(), "/healthz", 503);
  ASSERT_EQ(broken.code, 503) << broken.body;
  EXPECT_THAT(broken.body, HasSubstr("the file was removed and cannot be created again: No such file or directory"));

  fs::create_directories(folder);
  AdminReply healthy = admin_until(proxy.admin(), "/healthz", 200);
  EXPECT_EQ(healthy.code, 200) << healthy.body;
  EXPECT_EQ(client.request(http::verb::get, configmaps + "kept").status, 404);
  std::string file = file_containing(folder / "audit.jsonl", configmaps + "kept");
  EXPECT_THAT(file, HasSubstr(configmaps + "kept"));
  EXPECT_THAT(file, Not(HasSubstr(configmaps + "lost"))) << "records from while there was no file are not replayed";
}

}  // namespace
}  // namespace faultline::testing

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  faultline::testing::env = new faultline::testing::StackWithProxy;
  ::testing::AddGlobalTestEnvironment(faultline::testing::env);
  int rc = RUN_ALL_TESTS();
  return rc;
}
