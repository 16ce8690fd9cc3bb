// HTTP/2 through faultline-proxy in front of the REAL kube-apiserver: kubectl (client-go) and
// curl --http2 negotiate h2 through it, the audit says `proto: h2`, DISABLE_HTTP2 and
// --http1-only give the HTTP/1.1 mode, and every fault action is seen from real HTTP/2 clients
// (kubectl, curl --http2, nghttp) hitting one stream while the others on the connection go on.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <nghttp2/nghttp2.h>

#include <map>
#include <optional>
#include <regex>
#include <sstream>
#include <thread>

#include "proxy_test.hpp"
#include "raw_h2_client.hpp"
#include "stale_read_support.hpp"

namespace faultline::testing {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

class H2Test : public ProxyTest {
 protected:
  std::string proxy_url(const std::string& path, const std::string& listen = {}) {
    return "https://" + (listen.empty() ? env->proxy_listen() : listen) + path;
  }

  // curl --http2 through the proxy: "<http_version> <status>" then the body.
  CommandResult curl_h2(const std::string& args, const std::string& listen = {}) {
    (void)listen;
    // The User-Agent of the direct client: kube-apiserver pretty-prints JSON for curl's own.
    return run_command("curl -sS --http2 -A faultline-proxy-integration-test --cacert " +
                       shell_quote(env->var("FAULTLINE_CA_CERT")) + " " + args);
  }

  // nghttp (nghttp2's client): every URL as one stream of ONE connection; -v prints the frames.
  CommandResult nghttp(const std::vector<std::string>& paths, const std::string& extra = {}) {
    std::string cmd = "timeout 60 nghttp -v -n --no-dep " + extra;
    for (const auto& p : paths) cmd += " " + shell_quote(proxy_url(p));
    return run_command(cmd);
  }

  // The stream id nghttp used for `path` (from its "send HEADERS" frame dump).
  static int stream_of(const std::string& out, const std::string& path) {
    std::regex headers(R"(send HEADERS frame <[^>]*stream_id=(\d+)>)");
    int current = 0;
    std::istringstream in(out);
    for (std::string line; std::getline(in, line);) {
      std::smatch m;
      if (std::regex_search(line, m, headers)) current = std::stoi(m[1]);
      if (current && line.find(":path: " + path) != std::string::npos &&
          line.find(":path: " + path + "?") == std::string::npos && line.size() >= path.size() &&
          line.compare(line.size() - path.size(), path.size(), path) == 0) {
        return current;
      }
    }
    return 0;
  }
  // The :status nghttp received on `stream` (0: none).
  static int status_of(const std::string& out, int stream) {
    std::regex status("recv \\(stream_id=" + std::to_string(stream) + "\\) :status: (\\d+)");
    std::smatch m;
    return std::regex_search(out, m, status) ? std::stoi(m[1]) : 0;
  }
  // The error code of the RST_STREAM nghttp received on `stream` ("" when none).
  static std::string reset_of(const std::string& out, int stream) {
    std::regex rst("recv RST_STREAM frame <[^>]*stream_id=" + std::to_string(stream) + ">\\s*\\(error_code=([A-Z_]+)");
    std::smatch m;
    return std::regex_search(out, m, rst) ? std::string(m[1]) : std::string();
  }
};

// The fault actions over HTTP/2. Every action type has at least one test here whose name starts
// with the type in CamelCase (`watch-reset`: WatchReset...); unit.ActionCoverage checks it.
class ActionOverHttp2 : public H2Test {};

// ---- transparent ------------------------------------------------------------------------------

TEST_F(H2Test, KubectlNegotiatesH2ThroughTheProxyAndTheAuditSaysSo) {
  EXPECT_THAT(kubectl_proxied("-n " + ns_ + " create configmap over-h2 --from-literal=k=v"), HasSubstr("created"));
  EXPECT_EQ(kubectl_proxied("-n " + ns_ + " get configmap over-h2 -o jsonpath={.data.k}"), "v");
  EXPECT_THAT(kubectl_proxied("-n " + ns_ + " get configmaps -o name"), HasSubstr("configmap/over-h2"));
  std::string line = audit_line(cm_path("over-h2"));
  EXPECT_THAT(line, HasSubstr("\"method\":\"GET\""));
  EXPECT_THAT(line, HasSubstr("\"proto\":\"h2\"")) << line;
  EXPECT_THAT(line, HasSubstr("\"status\":200"));
  EXPECT_THAT(audit_line(cm_path() + "?limit=500"), HasSubstr("\"proto\":\"h2\""));
}

TEST_F(H2Test, DisableHttp2MakesKubectlSpeakHttp1ThroughTheProxy) {
  create_configmap("over-h1");
  CommandResult r = run_command("DISABLE_HTTP2=1 " + kubectl_cmd(env->proxy->kubeconfig().string()) + " -n " + ns_ +
                                " get configmap over-h1 -o name");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_THAT(audit_line(cm_path("over-h1")), HasSubstr("\"proto\":\"h1\""));
}

TEST_F(H2Test, CurlHttp2GetsTheSameBodyAsDirect) {
  create_configmap("same");
  CommandResult via = curl_h2("-w '\\n%{http_version} %{http_code}' " + shell_quote(proxy_url(cm_path("same"))));
  ASSERT_EQ(via.exit_code, 0) << via.output;
  EXPECT_THAT(via.output, HasSubstr("\n2 200"));
  auto direct_client = direct();
  Reply d = direct_client.request(http::verb::get, cm_path("same"));
  EXPECT_EQ(via.output.substr(0, via.output.rfind('\n')), d.body);
}

TEST_F(H2Test, ABodyOfManyFramesAndWindowsArrivesWhole) {
  // 300 kB: some twenty DATA frames, more than four flow-control windows (64 KiB per stream) on
  // each side of the proxy, so the relay's window updates and frame boundaries all take part.
  std::string value;
  for (int i = 0; value.size() < 300 * 1024; ++i) value += "chunk-" + std::to_string(i) + "-";
  auto direct_client = direct();
  Reply created = direct_client.request(
      http::verb::post, cm_path(),
      R"({"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"large"},"data":{"k":")" + value + R"("}})",
      {{"content-type", "application/json"}});
  ASSERT_EQ(created.status, 201) << created.body.substr(0, 500);
  CommandResult via = curl_h2("-w '\\n%{http_version} %{http_code}' " + shell_quote(proxy_url(cm_path("large"))));
  ASSERT_EQ(via.exit_code, 0) << via.output.substr(0, 500);
  auto end = via.output.rfind('\n');
  ASSERT_NE(end, std::string::npos);
  EXPECT_EQ(via.output.substr(end), "\n2 200");
  Reply d = direct_client.request(http::verb::get, cm_path("large"));
  ASSERT_EQ(d.status, 200);
  ASSERT_GT(d.body.size(), 300u * 1024);
  std::string body = via.output.substr(0, end);
  EXPECT_EQ(body.size(), d.body.size());
  EXPECT_TRUE(body == d.body) << "the body through the proxy differs from the apiserver's";
}

TEST_F(H2Test, WatchStreamsOverH2WhileOtherStreamsGoOn) {
  create_configmap("first");
  // One connection: a watch (never ends by itself) and a GET after it; the GET is answered while
  // the watch stays open, then nghttp gives up on the watch (timeout).
  CommandResult r = nghttp({cm_path() + "?watch=1", cm_path("first")}, "--timeout=5");
  int watch = stream_of(r.output, cm_path() + "?watch=1");
  int get = stream_of(r.output, cm_path("first"));
  ASSERT_GT(watch, 0) << r.output;
  ASSERT_GT(get, 0) << r.output;
  EXPECT_EQ(status_of(r.output, watch), 200) << r.output;
  EXPECT_EQ(status_of(r.output, get), 200) << r.output;
  EXPECT_THAT(audit_line(cm_path("first")), HasSubstr("\"proto\":\"h2\""));
}

TEST_F(H2Test, Http1OnlyFlagOffersOnlyHttp11) {
  StackProxy h1(env->stack, "proxy-h1only", (env->dir() / "h1only-audit.jsonl").string(), std::nullopt,
                {"--http1-only"});
  CommandResult via =
      curl_h2("-o /dev/null -w '%{http_version} %{http_code}' " + shell_quote("https://" + h1.listen() + cm_path()));
  EXPECT_EQ(via.output, "1.1 200");
  CommandResult k = run_command(kubectl_cmd(h1.kubeconfig().string()) + " -n " + ns_ + " get configmaps");
  EXPECT_EQ(k.exit_code, 0) << k.output;
  EXPECT_TRUE(h1.stop());
}

// ---- per-stream faults --------------------------------------------------------------------------

TEST_F(ActionOverHttp2, RespondAnswersTheOneStreamWithAStatus) {
  arm(rule("throttle", "limited", "{type: respond, code: 429, retryAfter: 2s}"));
  CommandResult r = curl_h2("-i " + shell_quote(proxy_url(cm_path("limited"))));
  EXPECT_THAT(r.output, HasSubstr("HTTP/2 429"));
  EXPECT_THAT(r.output, HasSubstr("retry-after: 2"));
  EXPECT_THAT(r.output, HasSubstr("\"reason\":\"TooManyRequests\""));
  EXPECT_THAT(audit_line(cm_path("limited")), HasSubstr("\"rule\":\"throttle\""));
}

TEST_F(ActionOverHttp2, ResetHitsOnlyItsStreamWithRstStreamInternalError) {
  create_configmap("bystander");
  arm(rule("rst", "victim", "{type: reset}"));
  CommandResult r = nghttp({cm_path("victim"), cm_path("bystander")});
  int victim = stream_of(r.output, cm_path("victim"));
  int bystander = stream_of(r.output, cm_path("bystander"));
  EXPECT_EQ(reset_of(r.output, victim), "INTERNAL_ERROR") << r.output;
  EXPECT_EQ(status_of(r.output, victim), 0);
  EXPECT_EQ(status_of(r.output, bystander), 200) << r.output;
  EXPECT_EQ(fired("rst"), 1u);
}

TEST_F(ActionOverHttp2, ResetFailsKubectlWithAStreamError) {
  arm(rule("rst", "victim", "{type: reset}"));
  CommandResult r =
      run_command(kubectl_cmd(env->proxy->kubeconfig().string()) + " -n " + ns_ + " get configmap victim");
  EXPECT_NE(r.exit_code, 0);
  EXPECT_THAT(r.output, HasSubstr("INTERNAL_ERROR")) << r.output;
}

TEST_F(ActionOverHttp2, CloseHitsOnlyItsStreamWithRstStreamNoError) {
  create_configmap("bystander");
  arm(rule("fin", "victim", "{type: close}"));
  CommandResult r = nghttp({cm_path("victim"), cm_path("bystander")});
  int victim = stream_of(r.output, cm_path("victim"));
  EXPECT_EQ(reset_of(r.output, victim), "NO_ERROR") << r.output;
  EXPECT_EQ(status_of(r.output, stream_of(r.output, cm_path("bystander"))), 200) << r.output;
}

TEST_F(ActionOverHttp2, HangHoldsItsStreamWhileTheOthersAreAnsweredThenResetsIt) {
  create_configmap("bystander");
  arm(rule("stuck", "victim", "{type: hang, duration: 2s}"));
  CommandResult r = nghttp({cm_path("victim"), cm_path("bystander")});
  int victim = stream_of(r.output, cm_path("victim"));
  int bystander = stream_of(r.output, cm_path("bystander"));
  EXPECT_EQ(status_of(r.output, bystander), 200) << r.output;
  EXPECT_EQ(reset_of(r.output, victim), "NO_ERROR") << r.output;
  // The bystander's answer came before the hung stream ended.
  auto answered = r.output.find("recv (stream_id=" + std::to_string(bystander) + ") :status: 200");
  auto ended = r.output.find("stream_id=" + std::to_string(victim) + ">\n          (error_code=NO_ERROR");
  EXPECT_LT(answered, ended) << r.output;
}

TEST_F(ActionOverHttp2, DelayAnswersLate) {
  create_configmap("late");
  arm(rule("slow", "late", "{type: delay, latency: 1500ms}"));
  CommandResult r = curl_h2("-o /dev/null -w '%{http_code}' " + shell_quote(proxy_url(cm_path("late"))));
  EXPECT_EQ(r.output, "200");
  std::string line = audit_line(cm_path("late"));
  std::smatch m;
  ASSERT_TRUE(std::regex_search(line, m, std::regex("\"durationUs\":(\\d+)"))) << line;
  EXPECT_GE(std::stoull(m[1]), 1500000u) << line;
}

TEST_F(ActionOverHttp2, DropResponseCreatesUpstreamAndResetsTheStream) {
  arm("  - {name: lost, match: {" + match_ns() +
      ", verbs: [create]}, when: {limit: 1}, action: {type: drop-response}}\n");
  std::string body = "{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"metadata\":{\"name\":\"dropped\"}}";
  CommandResult r = curl_h2("-X POST -H 'Content-Type: application/json' --data-binary " + shell_quote(body) + " " +
                            shell_quote(proxy_url(cm_path())));
  EXPECT_NE(r.exit_code, 0) << r.output;
  EXPECT_THAT(r.output, HasSubstr("INTERNAL_ERROR"));
  EXPECT_THAT(kubectl_direct("-n " + ns_ + " get configmap dropped -o name"), HasSubstr("configmap/dropped"));
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

// Two creates from two curl --http2 connections (request bodies held in the proxy) and a GET
// stream of a third connection are released together once the third arrives.
TEST_F(ActionOverHttp2, HoldReleasesStreamsOfSeveralConnectionsTogether) {
  create_configmap("probe");
  arm("  - {name: trio, match: {verbs: [create, get], resources: [configmaps], " + match_ns() +
      "}, action: {type: hold, count: 3, duration: 60s}}\n");
  auto create = [this](const std::string& name) {
    std::string body = "{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"metadata\":{\"name\":\"" + name + "\"}}";
    return curl_h2(
        "--max-time 60 -o /dev/null -w '%{http_version} %{http_code} %{time_total}' -X POST -H "
        "'Content-Type: application/json' --data-binary " +
        shell_quote(body) + " " + shell_quote(proxy_url(cm_path())));
  };
  CommandResult first, second;
  std::thread a([&] { first = create("first"); });
  std::thread b([&] { second = create("second"); });
  std::this_thread::sleep_for(2s);
  EXPECT_THAT(run_command(kubectl_cmd(env->var("FAULTLINE_ADMIN_KUBECONFIG")) + " -n " + ns_ +
                          " get configmap first second -o name")
                  .output,
              Not(HasSubstr("configmap/")));
  RawH2Client client(env->proxy_listen());
  const auto started = std::chrono::steady_clock::now();
  const std::int32_t probe = client.get(env->proxy_listen(), cm_path("probe"));
  EXPECT_TRUE(client.read_until([&] { return client.streams[probe].closed; }, 20s));
  EXPECT_LT(std::chrono::steady_clock::now() - started, 5s);
  EXPECT_EQ(client.streams[probe].status, 200);
  a.join();
  b.join();
  for (const auto* r : {&first, &second}) {
    EXPECT_THAT(r->output, ::testing::StartsWith("2 201 ")) << r->output;
    EXPECT_GE(std::stod(r->output.substr(6)), 2.0) << r->output;  // it waited for the third
  }
  EXPECT_THAT(kubectl_direct("-n " + ns_ + " get configmap first second -o name"), HasSubstr("configmap/second"));
  EXPECT_EQ(audit_lines_with([this] { return admin("GET", "/v1/audit").body; }, ns_,
                             "\"held\":{\"outcome\":\"forwarded\",\"batch\":3,", 3),
            3u);
}

TEST_F(ActionOverHttp2, HoldResetsTheBatchWhenItsTimePasses) {
  arm("  - {name: cut, match: {verbs: [get], resources: [configmaps], " + match_ns() +
      "}, action: {type: hold, count: 10, duration: 1s, then: reset}}\n");
  RawH2Client client(env->proxy_listen());
  const auto started = std::chrono::steady_clock::now();
  const std::int32_t one = client.get(env->proxy_listen(), cm_path("one"));
  const std::int32_t two = client.get(env->proxy_listen(), cm_path("two"));
  EXPECT_TRUE(client.read_until([&] { return client.streams[one].closed && client.streams[two].closed; }, 20s));
  EXPECT_GE(std::chrono::steady_clock::now() - started, 1s);
  for (auto id : {one, two}) {
    EXPECT_EQ(client.streams[id].reset, std::optional<std::uint32_t>(NGHTTP2_INTERNAL_ERROR)) << id;
    EXPECT_EQ(client.streams[id].status, 0) << id;
  }
  EXPECT_TRUE(client.open());  // only the streams were hit
  EXPECT_EQ(audit_lines_with([this] { return admin("GET", "/v1/audit").body; }, ns_,
                             "\"held\":{\"outcome\":\"reset\",\"batch\":2,", 2),
            2u);
}

TEST_F(ActionOverHttp2, HoldAnswersTheWholeBatchWithAStatus) {
  create_configmap("one");
  arm("  - {name: fail, match: {verbs: [get], resources: [configmaps], " + match_ns() +
      "}, action: {type: hold, count: 2, duration: 60s, then: respond, code: 503}}\n");
  RawH2Client client(env->proxy_listen());
  const std::int32_t one = client.get(env->proxy_listen(), cm_path("one"));
  client.read_for(1000);
  EXPECT_FALSE(client.streams[one].closed);  // held until the second
  const std::int32_t two = client.get(env->proxy_listen(), cm_path("two"));
  EXPECT_TRUE(client.read_until([&] { return client.streams[one].closed && client.streams[two].closed; }, 20s));
  EXPECT_EQ(client.streams[one].status, 503);
  EXPECT_EQ(client.streams[two].status, 503);
  EXPECT_EQ(audit_lines_with([this] { return admin("GET", "/v1/audit").body; }, ns_,
                             "\"held\":{\"outcome\":\"answered\",\"batch\":2,", 2),
            2u);
}

// A stream its client resets while held leaves the batch: it is never forwarded, and the next two
// are released together (with it still counted, the next one would go alone and the last wait).
TEST_F(ActionOverHttp2, HoldForgetsAStreamItsClientReset) {
  create_configmap("kept");
  create_configmap("last");
  arm("  - {name: pair, match: {verbs: [get], resources: [configmaps], " + match_ns() +
      "}, action: {type: hold, count: 2, duration: 30s}}\n");
  RawH2Client client(env->proxy_listen());
  const std::int32_t gone = client.get(env->proxy_listen(), cm_path("gone"));
  client.read_for(500);
  client.cancel(gone);
  client.read_for(500);
  const auto started = std::chrono::steady_clock::now();
  const std::int32_t kept = client.get(env->proxy_listen(), cm_path("kept"));
  client.read_for(1000);
  EXPECT_FALSE(client.streams[kept].closed);  // waits for a second one
  const std::int32_t last = client.get(env->proxy_listen(), cm_path("last"));
  EXPECT_TRUE(client.read_until([&] { return client.streams[kept].closed && client.streams[last].closed; }, 20s));
  EXPECT_LT(std::chrono::steady_clock::now() - started, 10s);
  EXPECT_EQ(client.streams[kept].status, 200);
  EXPECT_EQ(client.streams[last].status, 200);
  std::string line = audit_line(cm_path("gone"));
  EXPECT_THAT(line, HasSubstr("\"upstreamStatus\":null")) << line;
  EXPECT_THAT(line, HasSubstr("\"held\":{\"outcome\":\"gave-up\",\"batch\":0,")) << line;
  EXPECT_THAT(audit_line(cm_path("kept")), HasSubstr("\"held\":{\"outcome\":\"forwarded\",\"batch\":2,"));
}

TEST_F(ActionOverHttp2, StaleReadListsTheObjectsAsTheyWereWhenTheRuleWasArmed) {
  create_configmap("a");
  create_configmap("b");
  arm("  - {name: back-h2, match: {verbs: [list], resources: [configmaps], " + match_ns() +
      "}, action: {type: stale-read}}\n");
  CommandResult get = curl_h2("-o /dev/null -w '%{http_version} %{http_code}' " + shell_quote(proxy_url(cm_path("a"))));
  ASSERT_EQ(get.output, "2 200");  // records the resourceVersion
  create_configmap("c");
  CommandResult then = curl_h2("-w '\\n%{http_version}' " + shell_quote(proxy_url(cm_path() + "?limit=500")));
  ASSERT_EQ(then.exit_code, 0) << then.output;
  const auto nl = then.output.rfind('\n');
  EXPECT_EQ(then.output.substr(nl + 1), "2");
  auto stale = stale_read::list_answer(then.output.substr(0, nl));
  EXPECT_EQ(stale.names, (std::vector<std::string>{"a", "b"}));
  const std::string c_rv = kubectl_direct("-n " + ns_ + " get configmap c -o jsonpath={.metadata.resourceVersion}");
  EXPECT_LT(std::stoull(stale.resource_version), std::stoull(c_rv));
  EXPECT_THAT(audit_line(cm_path() + "?limit=500"), HasSubstr(R"("proto":"h2")"));
  EXPECT_THAT(audit_line(cm_path() + "?limit=500"), HasSubstr(R"("staleRead":{"requested":"","served":")" +
                                                              stale.resource_version + R"(","expired":false})"));
  EXPECT_EQ(stale_read::stale_reads(admin("GET", "/metrics").body, "back-h2", "served"), 1u);
}

// A resourceVersion kube-apiserver refuses (far in the future): its own error is relayed.
TEST_F(ActionOverHttp2, StaleReadAtAResourceVersionTheApiserverRefusesRelaysItsError) {
  arm("  - {name: ahead, match: {verbs: [list], resources: [configmaps], " + match_ns() +
      "}, action: {type: stale-read, resourceVersion: '999999999999'}}\n");
  CommandResult r = curl_h2("-w '\\n%{http_version} %{http_code}' " + shell_quote(proxy_url(cm_path())));
  EXPECT_THAT(r.output, HasSubstr("\n2 504")) << r.output;
  EXPECT_THAT(r.output, HasSubstr("Too large resource version")) << r.output;
  EXPECT_THAT(audit_line(cm_path()), HasSubstr(R"("served":"999999999999","expired":false})"));
  EXPECT_EQ(stale_read::stale_reads(admin("GET", "/metrics").body, "ahead", "refused"), 1u);
}

// ---- connection faults ------------------------------------------------------------------------

TEST_F(ActionOverHttp2, GoawayGracefulAnswersItsStreamAndEndsTheConnection) {
  create_configmap("last");
  arm(rule("drain", "last", "{type: goaway}"));
  CommandResult r = nghttp({cm_path("last")});
  int last = stream_of(r.output, cm_path("last"));
  EXPECT_EQ(status_of(r.output, last), 200) << r.output;
  EXPECT_THAT(r.output, HasSubstr("recv GOAWAY frame"));
  EXPECT_THAT(r.output, HasSubstr("(last_stream_id=" + std::to_string(last) + ", error_code=NO_ERROR(0x00)"));
}

TEST_F(ActionOverHttp2, GoawayAbruptIsRetriedByKubectlOnANewConnection) {
  create_configmap("victim");
  arm(rule("away", "victim", "{type: goaway, mode: abrupt, errorCode: ENHANCE_YOUR_CALM}"));
  CommandResult n = nghttp({cm_path("victim")});
  EXPECT_THAT(n.output, HasSubstr("error_code=ENHANCE_YOUR_CALM")) << n.output;
  EXPECT_EQ(status_of(n.output, stream_of(n.output, cm_path("victim"))), 0) << n.output;
  // client-go's transport retries a request the server never processed (stream id above the
  // GOAWAY's last-stream-id) on a new connection: kubectl succeeds, the rule fired for it.
  arm(rule("away", "victim", "{type: goaway, mode: abrupt}"));
  EXPECT_THAT(kubectl_proxied("-n " + ns_ + " get configmap victim -o name"), HasSubstr("configmap/victim"));
  EXPECT_EQ(fired("away"), 1u);
}

TEST_F(ActionOverHttp2, StallLeavesPingsUnansweredSoClientGoHealthCheckDropsTheConnection) {
  create_configmap("frozen");
  arm(rule("freeze", "frozen", "{type: stall, duration: 20s}"));
  // client-go's HTTP/2 health check: PING after 1 s without frames, give up 1 s later; then
  // client-go retries the GET on a new connection (the rule fired once: limit 1).
  CommandResult r = run_command("HTTP2_READ_IDLE_TIMEOUT_SECONDS=1 HTTP2_PING_TIMEOUT_SECONDS=1 timeout 60 " +
                                kubectl_cmd(env->proxy->kubeconfig().string()) + " -n " + ns_ +
                                " get configmap frozen -o name --request-timeout=15s");
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_THAT(r.output, HasSubstr("configmap/frozen"));
  // The request reached the proxy twice: on the stalled connection and again on a new one.
  auto rules = json::parse(admin("GET", "/v1/rules").body);
  EXPECT_EQ(rules.at("rules").as_array()[0].at("matched").to_number<std::uint64_t>(), 2u) << rules;
  EXPECT_EQ(fired("freeze"), 1u);
}

// The outage of a scenario rule: whole connections, as over HTTP/1.1 (refuse: the listener is
// closed too), then the proxy serves again.
TEST_F(ActionOverHttp2, OutageOfARuleCutsTheConnectionAndRefusesNewOnesUntilItEnds) {
  create_configmap("victim");
  arm("  - {name: down, match: {" + match_ns() +
      ", names: [victim]}, when: {limit: 1}, action: {type: outage, mode: refuse, duration: 5s}}\n");
  auto start = std::chrono::steady_clock::now();
  CommandResult hit =
      curl_h2("-o /dev/null -w '%{http_version} %{http_code}' " + shell_quote(proxy_url(cm_path("victim"))));
  EXPECT_NE(hit.exit_code, 0) << hit.output;
  EXPECT_THAT(hit.output, Not(HasSubstr("2 200")));
  CommandResult refused = curl_h2("-o /dev/null " + shell_quote(proxy_url(cm_path())));
  EXPECT_EQ(refused.exit_code, 7) << refused.output;  // CURLE_COULDNT_CONNECT
  std::string served;
  for (int i = 0; i < 300 && served != "2 200"; ++i) {
    std::this_thread::sleep_for(100ms);
    served =
        curl_h2("-o /dev/null -w '%{http_version} %{http_code}' " + shell_quote(proxy_url(cm_path("victim")))).output;
  }
  EXPECT_EQ(served, "2 200") << "the proxy did not serve again after the outage";
  EXPECT_GE(std::chrono::steady_clock::now() - start, 5s);
  EXPECT_EQ(fired("down"), 1u);
}

// ---- watch actions ------------------------------------------------------------------------

TEST_F(ActionOverHttp2, WatchGoneSendsA410ErrorEventAndEndsTheStream) {
  create_configmap("a");
  arm("  - {name: expire, match: {" + match_ns() +
      "}, when: {limit: 1}, action: {type: watch-gone, afterEvents: 1}}\n");
  CommandResult r = curl_h2("-N --max-time 30 -w '\\n%{http_version} %{http_code}' " +
                            shell_quote(proxy_url(cm_path() + "?watch=1")));
  ASSERT_EQ(r.exit_code, 0) << r.output;  // the stream ended by itself
  auto end = r.output.rfind('\n');
  EXPECT_EQ(r.output.substr(end), "\n2 200");
  auto events = events_of(r.output.substr(0, end));
  ASSERT_EQ(events.size(), 2u) << r.output;
  EXPECT_EQ(events[0].at("type").as_string(), "ADDED");
  EXPECT_EQ(events[1].at("type").as_string(), "ERROR");
  EXPECT_EQ(events[1].at("object").at("code").as_int64(), 410);
  EXPECT_EQ(events[1].at("object").at("reason").as_string(), "Expired");
  EXPECT_THAT(audit_line(cm_path() + "?watch=1"), HasSubstr("\"proto\":\"h2\""));
}

TEST_F(ActionOverHttp2, WatchResetCutsOnlyItsStreamWithRstStreamInternalError) {
  create_configmap("bystander");
  arm("  - {name: cut, match: {" + match_ns() + "}, when: {limit: 1}, action: {type: watch-reset, afterEvents: 1}}\n");
  CommandResult r = nghttp({cm_path() + "?watch=1", cm_path("bystander")}, "--timeout=20");
  int watch = stream_of(r.output, cm_path() + "?watch=1");
  int bystander = stream_of(r.output, cm_path("bystander"));
  ASSERT_GT(watch, 0) << r.output;
  EXPECT_EQ(status_of(r.output, watch), 200) << r.output;  // the stream began, then was cut
  EXPECT_EQ(reset_of(r.output, watch), "INTERNAL_ERROR") << r.output;
  EXPECT_EQ(status_of(r.output, bystander), 200) << r.output;
  EXPECT_EQ(fired("cut"), 1u);
}

// curl prints the watch events until --max-time ends it (the stream itself goes on).
TEST_F(ActionOverHttp2, WatchInjectSendsADeletedForALiveObjectEvenWhenProtobufWasAsked) {
  create_configmap("alive");
  arm("  - {name: ghost, match: {" + match_ns() +
      "}, when: {limit: 1}, action: {type: watch-inject, event: DELETED, afterEvents: 1}}\n");
  CommandResult r =
      curl_h2("-N --max-time 4 -H 'Accept: application/vnd.kubernetes.protobuf;stream=watch, application/json' " +
              shell_quote(proxy_url(cm_path() + "?watch=1")));
  EXPECT_EQ(r.exit_code, 28) << r.output;  // CURLE_OPERATION_TIMEDOUT: the stream stayed open
  auto events = events_of(r.output.substr(0, r.output.rfind("curl:")));
  ASSERT_EQ(events.size(), 2u) << r.output;
  EXPECT_EQ(events[0].at("type").as_string(), "ADDED");
  EXPECT_EQ(events[1].at("type").as_string(), "DELETED");
  EXPECT_EQ(events[1].at("object").at("metadata").at("name").as_string(), "alive");
  EXPECT_THAT(kubectl_direct("-n " + ns_ + " get configmap alive -o name"), HasSubstr("configmap/alive"));
  EXPECT_THAT(audit_line(cm_path() + "?watch=1"), HasSubstr("\"proto\":\"h2\""));
}

TEST_F(ActionOverHttp2, WatchDropHidesEvents) {
  create_configmap("a");
  create_configmap("b");
  arm("  - {name: forget, match: {" + match_ns() +
      "}, when: {limit: 1}, action: {type: watch-drop, events: [ADDED], count: 1}}\n");
  CommandResult r = curl_h2("-N --max-time 4 " + shell_quote(proxy_url(cm_path() + "?watch=1")));
  EXPECT_EQ(r.exit_code, 28) << r.output;
  auto events = events_of(r.output.substr(0, r.output.rfind("curl:")));
  ASSERT_EQ(events.size(), 1u) << r.output;
  EXPECT_EQ(events[0].at("object").at("metadata").at("name").as_string(), "b");
  EXPECT_THAT(audit_line(cm_path() + "?watch=1"), HasSubstr("\"proto\":\"h2\""));
}

// The resourceVersion of a collection now, read directly (a watch from it replays every later
// change, in order).
std::string collection_rv_h2(TlsClient& client, const std::string& path) {
  Reply r = client.request(http::verb::get, path);
  EXPECT_EQ(r.status, 200) << r.body;
  return std::string(json::parse(r.body).at("metadata").at("resourceVersion").as_string());
}

TEST_F(ActionOverHttp2, WatchDelayDeliversEveryEventAfterItsDurationInOrder) {
  auto direct_client = direct();
  const std::string rv0 = collection_rv_h2(direct_client, cm_path());
  for (const char* name : {"a", "b", "c"}) create_configmap(name);
  arm("  - {name: late, match: {" + match_ns() + "}, action: {type: watch-delay, duration: 2s}}\n");
  const std::string target = cm_path() + "?watch=1&resourceVersion=" + rv0 + "&timeoutSeconds=4";
  // Each line as curl hands it over, prefixed with the milliseconds since the request started.
  CommandResult r =
      run_command("start=$(date +%s%3N); curl -sS -N --http2 -A faultline-proxy-integration-test --cacert " +
                  shell_quote(env->var("FAULTLINE_CA_CERT")) + " " + shell_quote(proxy_url(target)) +
                  " | while IFS= read -r line; do echo \"$(( $(date +%s%3N) - start )) $line\"; done");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  std::istringstream in(r.output);
  std::vector<std::pair<long, json::object>> events;
  for (std::string line; std::getline(in, line);) {
    auto space = line.find(' ');
    if (space == std::string::npos || space + 1 == line.size()) continue;
    events.emplace_back(std::stol(line.substr(0, space)), json::parse(line.substr(space + 1)).as_object());
  }
  ASSERT_EQ(events.size(), 3u) << r.output;
  for (std::size_t i = 0; i < 3; ++i) {
    EXPECT_GE(events[i].first, 2000) << r.output;  // the apiserver sent them at once; the proxy held them 2 s
    EXPECT_LT(events[i].first, 4000) << r.output;  // and not until the watch ended
    EXPECT_EQ(events[i].second.at("object").at("metadata").at("name").as_string(), std::string(1, char('a' + i)));
  }
  std::string line = audit_line(target.substr(target.rfind('/')));
  EXPECT_THAT(line, HasSubstr("\"proto\":\"h2\""));
  EXPECT_THAT(line, HasSubstr("\"eventsDelayed\":3,\"eventsWithheld\":0"));
}

TEST_F(ActionOverHttp2, WatchDelayDeliversWhatItHoldsWhenTheWatchEndsCleanly) {
  auto direct_client = direct();
  const std::string rv0 = collection_rv_h2(direct_client, cm_path());
  for (const char* name : {"a", "b"}) create_configmap(name);
  arm("  - {name: late, match: {" + match_ns() + "}, action: {type: watch-delay, duration: 30s}}\n");
  // The apiserver ends the watch after 1 s, while the proxy holds both events for 30 s: they go
  // out first, then the clean end of the stream.
  CommandResult r =
      curl_h2("-N --max-time 20 " +
              shell_quote(proxy_url(cm_path() + "?watch=1&resourceVersion=" + rv0 + "&timeoutSeconds=1")));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  auto events = events_of(r.output);
  ASSERT_EQ(events.size(), 2u) << r.output;
  EXPECT_EQ(events[0].at("object").at("metadata").at("name").as_string(), "a");
  EXPECT_EQ(events[1].at("object").at("metadata").at("name").as_string(), "b");
}

TEST_F(ActionOverHttp2, WatchDelayDropsWhatItHoldsWhenTheClientGoesAway) {
  auto direct_client = direct();
  const std::string rv0 = collection_rv_h2(direct_client, cm_path());
  for (const char* name : {"a", "b"}) create_configmap(name);
  arm("  - {name: late, match: {" + match_ns() + "}, action: {type: watch-delay, duration: 3s}}\n");
  const std::string target = cm_path() + "?watch=1&resourceVersion=" + rv0 + "&timeoutSeconds=120";
  // The client gives up after 1 s, while both events are held: its stream ends, and with it what
  // the proxy held for it; the watch's record comes at once, nothing was written.
  CommandResult r = curl_h2("-N --max-time 1 " + shell_quote(proxy_url(target)));
  EXPECT_EQ(r.exit_code, 28) << r.output;
  EXPECT_TRUE(events_of(r.output.substr(0, r.output.rfind("curl:"))).empty()) << r.output;
  std::string line = audit_line(target.substr(target.rfind('/')));
  EXPECT_THAT(line, HasSubstr("\"bytesOut\":0"));
  EXPECT_THAT(line, HasSubstr("\"eventsDelayed\":2"));
}

TEST_F(ActionOverHttp2, WatchCoalesceDeliversOnlyTheLastOfABurstOfUpdatesToOneObject) {
  auto direct_client = direct();
  const std::string rv0 = collection_rv_h2(direct_client, cm_path());
  create_configmap("a");
  for (int i = 1; i <= 4; ++i)
    kubectl_direct("-n " + ns_ + " patch configmap a -p " +
                   shell_quote(R"({"data":{"k":")" + std::to_string(i) + "\"}}"));
  create_configmap("b");
  arm("  - {name: squash, match: {" + match_ns() + "}, action: {type: watch-coalesce, window: 1s}}\n");
  const std::string target = cm_path() + "?watch=1&resourceVersion=" + rv0 + "&timeoutSeconds=3";
  CommandResult r = curl_h2("-N --max-time 20 " + shell_quote(proxy_url(target)));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  auto events = events_of(r.output);
  // ADDED a, four MODIFIED a, ADDED b upstream: the last of a's and b's reach the client.
  ASSERT_EQ(events.size(), 2u) << r.output;
  EXPECT_EQ(events[0].at("type").as_string(), "MODIFIED");
  EXPECT_EQ(events[0].at("object").at("data").at("k").as_string(), "4");
  EXPECT_EQ(events[1].at("object").at("metadata").at("name").as_string(), "b");
  std::string line = audit_line(target.substr(target.rfind('/')));
  EXPECT_THAT(line, HasSubstr("\"proto\":\"h2\""));
  EXPECT_THAT(line, HasSubstr("\"eventsDelayed\":2,\"eventsWithheld\":4"));
}

// ---- limits --------------------------------------------------------------------------------

// The proxy advertises SETTINGS_MAX_CONCURRENT_STREAMS (--h2-max-streams, 100 as kube-apiserver):
// streams a client opens beyond it (here before it has read the setting) are refused with
// RST_STREAM REFUSED_STREAM, which HTTP/2 clients retry; the ones within it are answered.
TEST_F(H2Test, StreamsBeyondTheAdvertisedLimitAreRefusedAndTheOthersAnswered) {
  create_configmap("many");
  RawH2Client client(env->proxy_listen());
  client.open_at_once(env->proxy_listen(), cm_path("many"), 300);
  EXPECT_EQ(client.closed, 300);
  EXPECT_GE(client.resets[NGHTTP2_REFUSED_STREAM], 150);
  EXPECT_EQ(client.responses + client.resets[NGHTTP2_REFUSED_STREAM], 300);
  EXPECT_GE(client.responses, 50);
  EXPECT_FALSE(client.goaway.has_value());
}

// Rapid reset (CVE-2023-44487): every HEADERS starts a request (classified, audited, opened
// upstream) and its RST_STREAM ends it, so the client never has more than one stream open and
// the stream limit never bites. The proxy's nghttp2 session bounds resets per connection (a
// burst of 1000, then 33 a second) and ends the connection with GOAWAY INTERNAL_ERROR; other
// connections go on.
TEST_F(H2Test, RapidResetEndsTheConnectionWithGoaway) {
  create_configmap("rapid");
  RawH2Client attacker(env->proxy_listen());
  auto start = std::chrono::steady_clock::now();
  int taken = attacker.rapid_reset(env->proxy_listen(), cm_path("rapid"), 5000);
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  attacker.read_for(10000);  // the GOAWAY, if it is not in yet
  ASSERT_TRUE(attacker.goaway.has_value()) << "no GOAWAY after " << taken << " HEADERS + RST_STREAM pairs";
  EXPECT_EQ(*attacker.goaway, static_cast<uint32_t>(NGHTTP2_INTERNAL_ERROR)) << "GOAWAY codes:" << attacker.goaways;
  // The burst, what 33 a second gave back meanwhile, and the last batch of 50.
  EXPECT_LE(taken, 1000 + 33 * seconds + 50) << "the connection took " << taken << " resets in " << seconds << " s";
  // A client on another connection is served as before.
  CommandResult r =
      curl_h2("-o /dev/null -w '%{http_version} %{http_code}' " + shell_quote(proxy_url(cm_path("rapid"))));
  EXPECT_EQ(r.output, "2 200") << r.output;
}

}  // namespace
}  // namespace faultline::testing
