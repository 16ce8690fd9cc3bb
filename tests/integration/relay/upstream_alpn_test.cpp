// The upstream's ALPN decides the client's protocol: the real faultline-proxy binary in front of a
// real nginx that speaks only HTTP/1.1 (`listen ... ssl`, its ALPN offers only http/1.1: an nginx
// without http2, an HTTP/1.1 load balancer in front of kube-apiserver) and of one that speaks h2
// too, with curl (HTTP/2 and HTTP/1.1) and nghttp as clients:
//   - an HTTP/2 client of an HTTP/1.1-only upstream gets its answer (over HTTP/1.1: the proxy
//     offers clients h2 only while the upstream negotiates h2);
//   - an HTTP/2 client of an h2 upstream speaks h2 end to end, --http1-only still gives HTTP/1.1;
//   - an upstream that stops negotiating h2 while the proxy runs: the HTTP/2 connection that finds
//     out gets RST_STREAM REFUSED_STREAM, then GOAWAY (curl sends the request again on a new
//     connection, which is offered http/1.1); an upstream that negotiates h2 again is noticed
//     within seconds.

#include <gtest/gtest.h>

#include <sstream>

#include "faultline/net/certs.hpp"
#include "local_stack.hpp"  // run_command, shell_quote
#include "nginx_process.hpp"
#include "relay_support.hpp"

namespace faultline::relaytest {
namespace {

using namespace std::chrono_literals;
using testing::NginxOptions;
using testing::NginxProcess;

// nginx answers every request with the protocol it was asked in (HTTP/1.1 or HTTP/2.0).
constexpr const char* kServerBlock = R"(    location / {
      default_type text/plain;
      return 200 "served over $server_protocol\n";
    })";

struct CurlAnswer {
  int code = 0;
  std::string version;  // curl's %{http_version}: "1.1", "2"
  std::string body;
  std::string output;  // everything, for failure messages
};

class relay_alpn : public ::testing::Test {
 protected:
  TempDir dir{"faultline-upstream-alpn"};
  net::CertifiedKey upstream_ca = net::generate_ca("upstream-alpn-test-upstream-ca");
  net::CertifiedKey proxy_ca = net::generate_ca("upstream-alpn-test-proxy-ca");
  unsigned short upstream_port = testing::free_loopback_port();
  int nginx_count = 0;

  std::unique_ptr<NginxProcess> start_nginx(bool http2) {
    NginxOptions options;
    options.port = upstream_port;
    options.http2 = http2;
    auto serving = net::mint_serving_cert(upstream_ca, {"127.0.0.1"});
    options.cert_pem = serving.cert_pem;
    options.key_pem = serving.key_pem;
    options.server_block = kServerBlock;
    return std::make_unique<NginxProcess>(dir.path(), "nginx-" + std::to_string(++nginx_count), options);
  }

  std::unique_ptr<ProxyProcess> start_proxy(const std::vector<std::string>& extra = {}) {
    net::write_file(dir.path() / "upstream-ca.crt", upstream_ca.cert_pem);
    std::vector<std::string> args = {"--upstream",    "https://127.0.0.1:" + std::to_string(upstream_port),
                                     "--upstream-ca", (dir.path() / "upstream-ca.crt").string(),
                                     "--log-level",   "debug"};
    args.insert(args.end(), extra.begin(), extra.end());
    return start_proxy_process(dir.path(), proxy_ca, args);
  }

  // curl through the proxy with `protocol` ("--http2" or "--http1.1").
  CurlAnswer curl(const ProxyProcess& proxy, const std::string& protocol, const std::string& path = "/api/") {
    const std::string cmd = "curl -sS --max-time 30 " + protocol + " --cacert " +
                            testing::shell_quote((dir.path() / "proxy-ca.crt").string()) +
                            " -w '\\n%{http_code} %{http_version}' " +
                            testing::shell_quote("https://127.0.0.1:" + std::to_string(proxy.port()) + path);
    auto result = testing::run_command(cmd);
    CurlAnswer answer;
    answer.output = cmd + "\n" + result.output;
    auto nl = result.output.rfind('\n');
    if (nl == std::string::npos) return answer;
    std::istringstream last(result.output.substr(nl + 1));
    last >> answer.code >> answer.version;
    answer.body = result.output.substr(0, nl);
    if (!answer.body.empty() && answer.body.back() == '\n') answer.body.pop_back();  // nginx's own
    return answer;
  }
};

TEST_F(relay_alpn, Http2ClientOfAnHttp11OnlyUpstreamGetsItsAnswer) {
  auto nginx = start_nginx(/*http2=*/false);
  auto proxy = start_proxy();
  CurlAnswer h2 = curl(*proxy, "--http2");
  EXPECT_EQ(h2.code, 200) << h2.output << "\nproxy log:\n" << proxy->log();
  EXPECT_EQ(h2.version, "1.1") << h2.output;
  EXPECT_EQ(h2.body, "served over HTTP/1.1") << h2.output;
  CurlAnswer h1 = curl(*proxy, "--http1.1");
  EXPECT_EQ(h1.code, 200) << h1.output;
  EXPECT_EQ(h1.body, "served over HTTP/1.1") << h1.output;
  // Every later HTTP/2 client is offered http/1.1 at once.
  for (int i = 0; i < 3; ++i) {
    CurlAnswer again = curl(*proxy, "--http2");
    EXPECT_EQ(again.code, 200) << again.output;
    EXPECT_EQ(again.version, "1.1") << again.output;
  }
  EXPECT_EQ(relaytest::count_lines_with(proxy->log(), "negotiates only http/1.1", "HTTP/2 clients are offered"), 1u)
      << "the proxy says once what it learned:\n"
      << proxy->log();
}

TEST_F(relay_alpn, Http2ClientOfAnH2UpstreamSpeaksH2EndToEnd) {
  auto nginx = start_nginx(/*http2=*/true);
  auto proxy = start_proxy();
  CurlAnswer h2 = curl(*proxy, "--http2");
  EXPECT_EQ(h2.code, 200) << h2.output;
  EXPECT_EQ(h2.version, "2") << h2.output;
  EXPECT_EQ(h2.body, "served over HTTP/2.0") << h2.output;
  CurlAnswer h1 = curl(*proxy, "--http1.1");
  EXPECT_EQ(h1.code, 200) << h1.output;
  EXPECT_EQ(h1.version, "1.1") << h1.output;
  EXPECT_EQ(h1.body, "served over HTTP/1.1") << h1.output;

  auto http1_only = start_proxy({"--http1-only"});
  CurlAnswer downgraded = curl(*http1_only, "--http2");
  EXPECT_EQ(downgraded.code, 200) << downgraded.output;
  EXPECT_EQ(downgraded.version, "1.1") << downgraded.output;
  EXPECT_EQ(downgraded.body, "served over HTTP/1.1") << downgraded.output;
}

TEST_F(relay_alpn, UpstreamThatStopsNegotiatingH2IsLearnedAgain) {
  auto nginx = start_nginx(/*http2=*/true);
  auto proxy = start_proxy();
  CurlAnswer h2 = curl(*proxy, "--http2");
  ASSERT_EQ(h2.code, 200) << h2.output;
  ASSERT_EQ(h2.version, "2") << h2.output;

  // The same address now speaks HTTP/1.1 only. The proxy still offers h2; the first HTTP/2
  // connection whose upstream connection finds out gets its stream refused (then GOAWAY): a client
  // sends that request again on a new connection.
  nginx->stop();
  nginx = start_nginx(/*http2=*/false);
  auto nghttp =
      testing::run_command("timeout 60 nghttp -v -n https://127.0.0.1:" + std::to_string(proxy->port()) + "/api/");
  EXPECT_NE(nghttp.output.find("error_code=REFUSED_STREAM"), std::string::npos) << nghttp.output;
  EXPECT_EQ(nghttp.output.find(":status: 503"), std::string::npos) << nghttp.output;
  EXPECT_EQ(count_lines_with(proxy->log(), "stream(s) refused (REFUSED_STREAM)", "GOAWAY follows"), 1u) << proxy->log();
  CurlAnswer h1 = curl(*proxy, "--http2");
  EXPECT_EQ(h1.code, 200) << h1.output << "\nproxy log:\n" << proxy->log();
  EXPECT_EQ(h1.version, "1.1") << h1.output;
  EXPECT_EQ(h1.body, "served over HTTP/1.1") << h1.output;

  // h2 again: noticed (the proxy asks again every few seconds while clients connect).
  nginx->stop();
  nginx = start_nginx(/*http2=*/true);
  CurlAnswer last;
  bool back = eventually(
      [&] {
        last = curl(*proxy, "--http2");
        if (last.code == 200 && last.version == "2") return true;
        std::this_thread::sleep_for(500ms);
        return false;
      },
      60s);
  EXPECT_TRUE(back) << last.output << "\nproxy log:\n" << proxy->log();
  EXPECT_EQ(last.body, "served over HTTP/2.0") << last.output;
}

TEST_F(relay_alpn, CurlWhoseStreamIsRefusedGetsItsAnswerOnANewConnection) {
  auto nginx = start_nginx(/*http2=*/true);
  auto proxy = start_proxy();
  ASSERT_EQ(curl(*proxy, "--http2").version, "2");
  nginx->stop();
  nginx = start_nginx(/*http2=*/false);
  // curl's stream is the one refused: it sends the request again, and gets HTTP/1.1.
  CurlAnswer answer = curl(*proxy, "--http2");
  EXPECT_EQ(answer.code, 200) << answer.output << "\nproxy log:\n" << proxy->log();
  EXPECT_EQ(answer.version, "1.1") << answer.output;
  EXPECT_EQ(answer.body, "served over HTTP/1.1") << answer.output;
  EXPECT_EQ(count_lines_with(proxy->log(), "stream(s) refused (REFUSED_STREAM)", "GOAWAY follows"), 1u) << proxy->log();
}

}  // namespace
}  // namespace faultline::relaytest
