// faultline-proxy in front of an HTTP/1.1-only front of the REAL kube-apiserver: nginx listening
// with TLS and without http2 (its ALPN offers only http/1.1, as an HTTP/1.1 load balancer in front
// of an apiserver), passing every request on to the stack's apiserver with the stack's admin
// identity. kubectl (client-go, which speaks HTTP/2 wherever it is offered) and curl --http2 work
// through the proxy: the proxy offers them http/1.1, as the upstream does.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fstream>
#include <memory>
#include <sstream>
#include <vector>

#include "faultline/net/certs.hpp"
#include "faultline/net/kubeconfig.hpp"
#include "nginx_process.hpp"
#include "proxy_test.hpp"

namespace faultline::testing {
namespace {

using ::testing::HasSubstr;

class H1UpstreamTest : public ProxyTest {
 protected:
  void SetUp() override {
    ProxyTest::SetUp();
    if (HasFatalFailure()) return;
    try {
      nginx_ = start_front(/*http2=*/false);
      proxy_ = start_proxy();
    } catch (const std::exception& e) {
      FAIL() << e.what();
    }
  }

  // faultline-proxy in front of nginx_. It authenticates upstream with the admin identity too
  // (nginx does not ask for it: its own goes to the apiserver); its kubeconfig gets a placeholder
  // token the proxy replaces, so kubectl does not ask for credentials.
  std::unique_ptr<ProxyProcess> start_proxy() {
    return std::make_unique<ProxyProcess>(
        env->dir(), "h1-upstream-proxy",
        std::vector<std::string>{"--upstream", "https://127.0.0.1:" + std::to_string(nginx_->port()), "--upstream-ca",
                                 env->var("FAULTLINE_CA_CERT"), "--upstream-kubeconfig",
                                 env->var("FAULTLINE_ADMIN_KUBECONFIG"), "--ca-cert", env->var("FAULTLINE_CA_CERT"),
                                 "--ca-key", env->var("FAULTLINE_CA_KEY"), "--write-kubeconfig", kubeconfig().string(),
                                 "--audit-log", (env->dir() / "h1-upstream-audit.jsonl").string(), "--log-level",
                                 "debug"});
  }

  // nginx in front of the stack's apiserver, with or without http2 (on the port of the one before);
  // `extra`: more directives for its server block, before the location that passes requests on.
  std::unique_ptr<NginxProcess> start_front(bool http2, const std::string& extra = {}) {
    const auto apiserver = net::parse_https_url(env->var("FAULTLINE_APISERVER_URL")).endpoint;
    const net::CertifiedKey stack_ca{net::read_file(env->var("FAULTLINE_CA_CERT")),
                                     net::read_file(env->var("FAULTLINE_CA_KEY"))};
    const auto serving = net::mint_serving_cert(stack_ca, {"127.0.0.1"});
    NginxOptions options;
    options.port = nginx_ ? nginx_->port() : 0;
    options.http2 = http2;
    options.cert_pem = serving.cert_pem;
    options.key_pem = serving.key_pem;
    // The apiserver's certificate names "kubernetes" (and 127.0.0.1, which nginx does not check).
    options.server_block = extra + "    location / {\n      proxy_pass https://" + apiserver.to_string() +
                           ";\n"
                           "      proxy_http_version 1.1;\n"
                           "      proxy_buffering off;\n"
                           "      proxy_read_timeout 300s;\n"
                           "      proxy_ssl_certificate " +
                           env->var("FAULTLINE_ADMIN_CERT") + ";\n      proxy_ssl_certificate_key " +
                           env->var("FAULTLINE_ADMIN_KEY") + ";\n      proxy_ssl_trusted_certificate " +
                           env->var("FAULTLINE_CA_CERT") +
                           ";\n"
                           "      proxy_ssl_verify on;\n"
                           "      proxy_ssl_name kubernetes;\n"
                           "    }";
    return std::make_unique<NginxProcess>(env->dir(), http2 ? "h2-front" : "h1-front", options);
  }

  void TearDown() override {
    if (proxy_) {
      EXPECT_TRUE(proxy_->stop()) << "the proxy exits cleanly:\n" << proxy_->log();
    }
    if (nginx_) nginx_->stop();
    ProxyTest::TearDown();
  }

  CommandResult kubectl_via_h1(const std::string& args) {
    return run_command(kubectl_cmd(kubeconfig().string()) + " " + args);
  }
  static fs::path kubeconfig() { return env->dir() / "h1-upstream-proxy.kubeconfig"; }
  // curl through the proxy: "<status> <HTTP version>".
  std::string curl(const std::string& protocol) {
    return run_command("curl -sS " + protocol + " --cacert " + shell_quote(env->var("FAULTLINE_CA_CERT")) +
                       " -o /dev/null -w '%{http_code} %{http_version}' " +
                       shell_quote("https://" + proxy_->listen() + "/api/v1/namespaces/" + ns_))
        .output;
  }

  std::unique_ptr<NginxProcess> nginx_;
  std::unique_ptr<ProxyProcess> proxy_;
};

TEST_F(H1UpstreamTest, KubectlThroughTheProxyWorks) {
  CommandResult namespaces = kubectl_via_h1("get namespaces -o name");
  ASSERT_EQ(namespaces.exit_code, 0) << namespaces.output << "\nproxy log:\n" << proxy_->log();
  EXPECT_THAT(namespaces.output, HasSubstr("namespace/" + ns_));
  CommandResult created = kubectl_via_h1("-n " + ns_ + " create configmap via-h1 --from-literal=k=v");
  EXPECT_EQ(created.exit_code, 0) << created.output;
  CommandResult read = kubectl_via_h1("-n " + ns_ + " get configmap via-h1 -o jsonpath={.data.k}");
  EXPECT_EQ(read.exit_code, 0) << read.output;
  EXPECT_EQ(read.output, "v");
  // kubectl spoke HTTP/1.1 with the proxy (the audit's proto), as the upstream does.
  std::string audit;
  for (int i = 0; i < 50 && audit.find("configmaps/via-h1") == std::string::npos; ++i) {
    std::this_thread::sleep_for(100ms);
    audit = admin_at(proxy_->admin(), "GET", "/v1/audit").body;
  }
  std::istringstream lines(audit);
  int records = 0;
  for (std::string line; std::getline(lines, line);) {
    if (line.empty()) continue;
    ++records;
    EXPECT_THAT(line, HasSubstr("\"proto\":\"h1\"")) << line;
    EXPECT_THAT(line, HasSubstr("\"status\":20")) << line;
  }
  EXPECT_GE(records, 3) << "list, create, get (and discovery):\n" << audit;
}

TEST_F(H1UpstreamTest, CurlHttp2AndHttp11ThroughTheProxyGet200) {
  EXPECT_EQ(curl("--http2"), "200 1.1") << "proxy log:\n" << proxy_->log();
  EXPECT_EQ(curl("--http1.1"), "200 1.1");
}

TEST_F(H1UpstreamTest, KubectlWhoseStreamIsRefusedGetsItsAnswerOnANewConnection) {
  // The front speaks h2 first, so the proxy offers kubectl h2; then the same address speaks
  // HTTP/1.1 only. kubectl's stream is refused on the connection that finds out (REFUSED_STREAM,
  // GOAWAY): client-go sends it again on a new connection, over HTTP/1.1.
  proxy_->stop();
  nginx_->stop();
  nginx_ = start_front(/*http2=*/true);
  proxy_ = start_proxy();
  ASSERT_EQ(curl("--http2"), "200 2") << "proxy log:\n" << proxy_->log();
  nginx_->stop();
  nginx_ = start_front(/*http2=*/false);
  CommandResult after = kubectl_via_h1("get namespace " + ns_ + " -o name");
  EXPECT_EQ(after.exit_code, 0) << after.output << "\nproxy log:\n" << proxy_->log();
  EXPECT_THAT(after.output, HasSubstr("namespace/" + ns_));
  EXPECT_THAT(proxy_->log(), HasSubstr("stream(s) refused (REFUSED_STREAM), GOAWAY follows"));
}

// The proxy's own request for the current resourceVersion (a stale-read rule's recording) is
// bounded: an upstream answering it with more than 1 MiB, or too slowly to finish within 10 s,
// fails the recording with an error naming the step, and the rule's requests go on as they are.
TEST_F(H1UpstreamTest, StaleReadRecordingFromAHostileUpstreamIsBoundedAndTheListsGoOn) {
  struct Case {
    std::string name;
    std::string body;
    std::string rate;  // nginx limit_rate: bytes per second of the answer, "0" for no limit
    std::string failure;
  };
  const std::string pad(2 << 20, 'x');
  const std::vector<Case> cases{
      {"big", R"({"kind":"NamespaceList","metadata":{"resourceVersion":"5"},"pad":")" + pad + "\"}", "0",
       "reading the answer: body limit exceeded"},
      {"slow", R"({"kind":"NamespaceList","metadata":{"resourceVersion":"5"},"items":[]})" + std::string(40, ' '), "1",
       "reading the answer: "},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.name);
    const fs::path answer = env->dir() / ("probe-answer-" + c.name + ".json");
    std::ofstream(answer) << c.body;
    // Only the proxy's own request (its User-Agent) gets the hostile answer.
    const std::string extra =
        "    if ($http_user_agent ~ \"stale-read\") { rewrite ^ /probe-answer last; }\n"
        "    location = /probe-answer {\n      internal;\n      default_type application/json;\n"
        "      limit_rate " +
        c.rate + ";\n      alias " + answer.string() + ";\n    }\n";
    proxy_->stop();
    nginx_->stop();
    nginx_ = start_front(/*http2=*/false, extra);
    proxy_ = start_proxy();
    const std::string rule = "probe-" + c.name;
    const std::string yaml = "apiVersion: faultline/v1\nkind: Scenario\nmetadata: {name: " + rule +
                             "}\nseed: 7\nfaults:\n  - {name: " + rule +
                             ", match: {verbs: [list], resources: [configmaps], " + match_ns() +
                             "}, action: {type: stale-read}}\n";
    ASSERT_EQ(admin_at(proxy_->admin(), "PUT", "/v1/scenario", yaml).code, 200);
    ASSERT_EQ(admin_at(proxy_->admin(), "POST", "/v1/arm").code, 200);
    // The first request after arming waits for the recording (at most 10 s), then goes on; the
    // slow answer alone would take 80 s.
    const std::string curl_list = "curl -sS --max-time 60 --http1.1 --cacert " +
                                  shell_quote(env->var("FAULTLINE_CA_CERT")) + " -w ' %{http_code} %{time_total}' " +
                                  shell_quote("https://" + proxy_->listen() + cm_path());
    CommandResult first = run_command(curl_list);
    EXPECT_THAT(first.output, HasSubstr("ConfigMapList")) << first.output << "\n" << proxy_->log();
    double seconds = std::stod(first.output.substr(first.output.rfind(' ') + 1));
    EXPECT_LT(seconds, 30) << "the recording was not cut at its 10 s bound";
    CommandResult second = run_command(curl_list);
    EXPECT_THAT(second.output, HasSubstr(" 200 ")) << second.output;
    EXPECT_THAT(proxy_->log(), HasSubstr("could not learn the current resourceVersion upstream (" + c.failure));
    const std::string metrics = admin_at(proxy_->admin(), "GET", "/metrics").body;
    EXPECT_THAT(metrics, HasSubstr("faultline_stale_reads_total{rule=\"" + rule + "\",outcome=\"unrecorded\"} 1"))
        << metrics;
  }
}

}  // namespace
}  // namespace faultline::testing
