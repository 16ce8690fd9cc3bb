// The real faultline-proxy binary, no local stack (the upstream is a port nobody listens on, so
// every relayed request is answered 503 and audited):
//   - an --admin-token-file that yields no token is a start-up error, never "no authentication";
//   - an admin API beyond loopback without a token is logged as a warning;
//   - every audit line, admin API JSON body and metrics text is valid UTF-8 whatever bytes a
//     client sent: ill-formed sequences become U+FFFD;
//   - resources a client invents cannot grow the request metrics without bound;
//   - long request targets cannot grow the in-memory audit ring without bound: it holds at most
//     64 MiB of records (--audit-memory), whatever their count;
//   - bare TCP connections to the admin API (no request, so no token either) cannot take the
//     descriptors the relay needs: admin connections are capped (--admin-max-connections), the
//     rest closed at once and counted, and one that sends no request header is closed after 5 s.

#include <gtest/gtest.h>

#include <boost/asio/connect.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/http.hpp>
#include <boost/json/parse.hpp>

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <sstream>
#include <thread>

#include "faultline/audit/record.hpp"
#include "relay_support.hpp"

namespace faultline::relaytest {
namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;
using namespace std::chrono_literals;

constexpr std::string_view kReplacement = "\xEF\xBF\xBD";  // U+FFFD

using testing::slurp;

// One plain HTTP GET to the admin API, with a bearer token when `token` is not empty.
AdminAnswer admin_get(unsigned short port, const std::string& target, const std::string& token = {}) {
  return admin_request(port, "GET", target, token);
}

class ProxyHardening : public ::testing::Test {
 protected:
  TempDir dir{"faultline-proxy-hardening"};
  net::CertifiedKey ca = net::generate_ca("proxy-hardening-test-ca");
  std::string upstream = "https://127.0.0.1:" + std::to_string(unused_port());

  std::unique_ptr<ProxyProcess> start(std::vector<std::string> args) {
    args.insert(args.begin(), {"--upstream", upstream, "--upstream-insecure"});
    return start_proxy_process(dir.path(), ca, args);
  }

  // The proxy must refuse to start with this token file: it exits non-zero naming the file and
  // `problem`. When it starts anyway, say what an unauthenticated admin request got.
  void expect_refused(const fs::path& token_file, const std::string& problem) {
    std::unique_ptr<ProxyProcess> proxy;
    try {
      proxy = start({"--admin-token-file", token_file.string()});
    } catch (const std::runtime_error& e) {
      const std::string what = e.what();
      EXPECT_NE(what.find("exited with status 1 "), std::string::npos) << what;
      EXPECT_NE(what.find(token_file.string() + ": "), std::string::npos) << "the error must name the file:\n" << what;
      EXPECT_NE(what.find(problem), std::string::npos) << what;
      return;
    }
    AdminAnswer rules = admin_get(proxy->admin_port(), "/v1/rules");
    ADD_FAILURE() << "the proxy started with token file " << token_file << "; GET /v1/rules without a token got "
                  << rules.status << " " << rules.body;
  }
};

TEST_F(ProxyHardening, EmptyTokenFileIsAStartUpError) {
  net::write_file(dir.path() / "empty.token", "");
  expect_refused(dir.path() / "empty.token", "empty or only whitespace");
}

TEST_F(ProxyHardening, WhitespaceOnlyTokenFileIsAStartUpError) {
  net::write_file(dir.path() / "blank.token", " \n\t\r\n  \n");
  expect_refused(dir.path() / "blank.token", "empty or only whitespace");
}

TEST_F(ProxyHardening, TokenFileThatIsNotARegularFileIsAStartUpError) {
  // A FIFO without a writer: reading it would block start-up forever.
  const fs::path fifo = dir.path() / "token.fifo";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  expect_refused(fifo, "not a regular file");
}

TEST_F(ProxyHardening, TokenWithALineBreakInsideIsAStartUpError) {
  net::write_file(dir.path() / "two-lines.token", "first-line\nsecond-line\n");
  expect_refused(dir.path() / "two-lines.token", "control or non-ASCII byte");
}

TEST_F(ProxyHardening, ValidTokenIsRequiredByTheAdminApi) {
  const std::string token = "proxy-hardening-token-3f9a";
  net::write_file(dir.path() / "admin.token", token + "\n");
  auto proxy = start({"--admin-token-file", (dir.path() / "admin.token").string()});
  EXPECT_EQ(admin_get(proxy->admin_port(), "/v1/rules").status, 401);
  EXPECT_EQ(admin_get(proxy->admin_port(), "/v1/rules", "wrong-" + token).status, 401);
  EXPECT_EQ(admin_get(proxy->admin_port(), "/v1/rules", token).status, 200);
  EXPECT_EQ(admin_get(proxy->admin_port(), "/healthz").status, 200);
  EXPECT_EQ(proxy->log().find(token), std::string::npos) << "the token must not be logged";
}

// The proxy with `--admin <admin>` (ProxyProcess always passes 127.0.0.1:0), started and stopped
// by hand; returns its log once it was ready.
std::string log_of_proxy_with_admin(const fs::path& dir, const net::CertifiedKey& ca, const std::string& upstream,
                                    const std::string& admin, const std::vector<std::string>& extra = {}) {
  net::write_file(dir / "ca.crt", ca.cert_pem);
  net::write_file(dir / "ca.key", ca.key_pem, true);
  const fs::path ready = dir / "admin-ready.json";
  const fs::path log = dir / "admin-proxy.log";
  std::error_code ec;
  fs::remove(ready, ec);
  std::vector<std::string> args = {proxy_binary().string(),
                                   "--listen",
                                   "127.0.0.1:0",
                                   "--admin",
                                   admin,
                                   "--ready-file",
                                   ready.string(),
                                   "--ca-cert",
                                   (dir / "ca.crt").string(),
                                   "--ca-key",
                                   (dir / "ca.key").string(),
                                   "--upstream",
                                   upstream,
                                   "--upstream-insecure"};
  args.insert(args.end(), extra.begin(), extra.end());
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  const pid_t pid = ::fork();
  if (pid == 0) {
    int fd = ::open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd >= 0) ::dup2(fd, 1), ::dup2(fd, 2);
    ::execv(argv[0], argv.data());
    ::_exit(127);
  }
  const auto deadline = std::chrono::steady_clock::now() + 60s;
  int status = 0;
  bool exited = false;
  while (!fs::exists(ready) && std::chrono::steady_clock::now() < deadline) {
    if (::waitpid(pid, &status, WNOHANG) == pid) {
      exited = true;
      break;
    }
    std::this_thread::sleep_for(20ms);
  }
  if (!exited) {
    ::kill(pid, SIGTERM);
    ::waitpid(pid, &status, 0);
  }
  const std::string text = slurp(log);
  if (exited || !fs::exists(ready))
    throw std::runtime_error("faultline-proxy --admin " + admin + " did not start:\n" + text);
  return text;
}

bool warns_about_unauthenticated_admin(const std::string& log) {
  for (std::istringstream in(log); !in.eof();) {
    std::string line;
    std::getline(in, line);
    if (line.find(" warning ") != std::string::npos && line.find("admin API") != std::string::npos &&
        line.find("WITHOUT authentication") != std::string::npos) {
      return true;
    }
  }
  return false;
}

TEST_F(ProxyHardening, AdminApiBeyondLoopbackWithoutATokenIsAWarning) {
  const std::string log = log_of_proxy_with_admin(dir.path(), ca, upstream, "0.0.0.0:0");
  EXPECT_TRUE(warns_about_unauthenticated_admin(log)) << log;
}

TEST_F(ProxyHardening, AdminApiBeyondLoopbackWithATokenOrOnLoopbackIsNoWarning) {
  net::write_file(dir.path() / "admin.token", "proxy-hardening-token\n");
  const std::string with_token = log_of_proxy_with_admin(dir.path(), ca, upstream, "0.0.0.0:0",
                                                         {"--admin-token-file", (dir.path() / "admin.token").string()});
  EXPECT_FALSE(warns_about_unauthenticated_admin(with_token)) << with_token;
  const std::string loopback = log_of_proxy_with_admin(dir.path(), ca, upstream, "127.0.0.1:0");
  EXPECT_FALSE(warns_about_unauthenticated_admin(loopback)) << loopback;
}

// Raw bytes a client may send: a User-Agent and a path that are not UTF-8 (obs-text, which HTTP
// allows), and percent-encoded bytes that decode to no UTF-8 either.
const std::string kBadAgent = "kubectl/\xff\xfe (\xc3\x28) \xe2\x82";
const std::vector<std::string> kBadTargets = {
    "/api/v1/namespaces/caf\xe9/pods/\xf0\x9f\x98", "/api/v1/namespaces/%FF%FE/configmaps/%C3%28?labelSelector=%E2%82",
    "/api/v1/%FFpods%C3",  // a resource, so a label of the request metrics
};

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    if (!line.empty()) out.push_back(line);
  }
  return out;
}

// One request written as raw bytes over `client` (any method, any target), and its answer's status.
int status_of(TlsClient& client, const std::string& method, const std::string& target) {
  const std::string request = method + " " + target + " HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n";
  asio::write(client.tls_stream(), asio::buffer(request));
  http::response<http::string_body> res;
  http::read(client.tls_stream(), client.buffer(), res);
  return res.result_int();
}

// /metrics once it contains `line` (a request is counted once its answer went out), or after 30 s.
std::string metrics_with(unsigned short admin_port, const std::string& line) {
  std::string metrics;
  eventually(
      [&] {
        metrics = admin_get(admin_port, "/metrics").body;
        return metrics.find(line) != std::string::npos;
      },
      30s);
  return metrics;
}

// The series of faultline_requests_total in a /metrics text.
std::size_t request_series(const std::string& metrics) {
  std::size_t series = 0;
  for (const auto& line : lines_of(metrics)) series += line.rfind("faultline_requests_total{", 0) == 0;
  return series;
}

TEST_F(ProxyHardening, AuditLinesAreValidJsonWhateverBytesTheClientSent) {
  const fs::path audit = dir.path() / "audit.jsonl";
  auto proxy = start({"--audit-log", audit.string()});
  {
    TlsClient client(proxy->port(), ca.cert_pem, 60s);
    for (const auto& target : kBadTargets) {
      const std::string request =
          "GET " + target + " HTTP/1.1\r\nHost: 127.0.0.1\r\nUser-Agent: " + kBadAgent + "\r\n\r\n";
      asio::write(client.tls_stream(), asio::buffer(request));
      http::response<http::string_body> res;
      http::read(client.tls_stream(), client.buffer(), res);
      EXPECT_EQ(res.result_int(), 503) << "the upstream is unreachable: " << res.body();
    }
  }
  // The same bytes through the admin API: a query parameter name and a path it echoes in errors.
  AdminAnswer unknown_param = admin_get(proxy->admin_port(), "/v1/rules?%FF%C3=1");
  EXPECT_EQ(unknown_param.status, 400);
  AdminAnswer unknown_path = admin_get(proxy->admin_port(), "/v1/%FE%80");
  EXPECT_EQ(unknown_path.status, 404);
  for (const AdminAnswer* answer : {&unknown_param, &unknown_path}) {
    boost::system::error_code ec;
    boost::json::parse(answer->body, ec);
    EXPECT_FALSE(ec) << "admin API error body is not valid JSON (" << ec.message() << "): " << answer->body;
    EXPECT_NE(answer->body.find(kReplacement), std::string::npos) << answer->body;
  }
  // The resource label of the request metrics comes from the path as well.
  AdminAnswer metrics = admin_get(proxy->admin_port(), "/metrics");
  EXPECT_EQ(metrics.body.find('\xff'), std::string::npos) << "metrics text is not UTF-8";
  EXPECT_NE(metrics.body.find("resource=\"" + std::string(kReplacement) + "pods" + std::string(kReplacement) + "\""),
            std::string::npos)
      << metrics.body;
  AdminAnswer from_api = admin_get(proxy->admin_port(), "/v1/audit?since=0");
  ASSERT_EQ(from_api.status, 200);
  ASSERT_TRUE(proxy->stop());  // flushes the audit file

  for (const std::string& text : {slurp(audit), from_api.body}) {
    const auto lines = lines_of(text);
    ASSERT_EQ(lines.size(), kBadTargets.size()) << text;
    for (const auto& line : lines) {
      boost::system::error_code ec;
      boost::json::value record = boost::json::parse(line, ec);
      ASSERT_FALSE(ec) << "audit line is not valid JSON (" << ec.message() << "): " << line;
      const std::string agent(record.at("userAgent").as_string());
      EXPECT_EQ(agent.find('\xff'), std::string::npos);
      EXPECT_NE(agent.find(kReplacement), std::string::npos) << agent;
      EXPECT_EQ(agent.substr(0, 8), "kubectl/") << "the valid part is kept";
    }
    // What faultline-harness reads the audit with.
    const audit::DecodedLines decoded = audit::decode_lines(text);
    EXPECT_EQ(decoded.malformed, 0u) << "the harness's audit decoder rejects the audit: " << decoded.first_error;
    const std::vector<audit::Record>& records = decoded.records;
    ASSERT_EQ(records.size(), kBadTargets.size());
    EXPECT_EQ(records[0].status, 503);
    EXPECT_EQ(records[0].path.find('\xe9'), std::string::npos) << records[0].path;
    EXPECT_NE(records[0].path.find("/api/v1/namespaces/caf" + std::string(kReplacement)), std::string::npos)
        << records[0].path;
    EXPECT_EQ(records[1].namespace_, std::string(kReplacement) + std::string(kReplacement)) << "decoded %FF%FE";
    EXPECT_EQ(records[1].resource, "configmaps");
    EXPECT_EQ(records[2].resource, std::string(kReplacement) + "pods" + std::string(kReplacement));
  }
}

TEST_F(ProxyHardening, ClientInventedResourcesDoNotGrowTheMetricsWithoutBound) {
  // Every path segment after /api/v1/ is a "resource" to the classifier; a client can invent them
  // forever. Past the proxy's bound (256 distinct resources) they share one series.
  auto proxy = start({});
  constexpr int kInvented = 400;
  {
    TlsClient client(proxy->port(), ca.cert_pem, 120s);
    for (int i = 0; i < kInvented; ++i)
      ASSERT_EQ(status_of(client, "GET", "/api/v1/invented" + std::to_string(i)), 503);
  }
  const std::string counted = "faultline_requests_total{verb=\"list\",resource=\"_other\",code=\"503\"} 144";
  const std::string metrics = metrics_with(proxy->admin_port(), counted);
  EXPECT_LE(request_series(metrics), 257u) << metrics;
  EXPECT_NE(metrics.find(counted), std::string::npos) << metrics;
}

TEST_F(ProxyHardening, ClientInventedMethodsDoNotGrowTheMetricsWithoutBound) {
  // Outside the Kubernetes API (/healthz) the verb is the request's method, lower-cased: a client can
  // invent methods forever (HTTP allows any token). They must not each get a series.
  auto proxy = start({});
  constexpr int kInvented = 300;
  {
    TlsClient client(proxy->port(), ca.cert_pem, 120s);
    for (int i = 0; i < kInvented; ++i) ASSERT_EQ(status_of(client, "INVENTED" + std::to_string(i), "/healthz"), 503);
  }
  const std::string counted = "faultline_requests_total{verb=\"_other\",resource=\"\",code=\"503\"} 300";
  const std::string metrics = metrics_with(proxy->admin_port(), counted);
  EXPECT_LE(request_series(metrics), 20u) << metrics;
  EXPECT_NE(metrics.find(counted), std::string::npos) << metrics;
}

TEST_F(ProxyHardening, LongTargetsDoNotGrowTheAuditRingPastItsByteBound) {
  // 100 requests with a 512 KiB target (the header limit is 1 MiB) make 100 records of about 1 MiB
  // each (the target is both the path and the object name): more than the ring's 64 MiB, far fewer
  // than its 65,536 records. The oldest records must go. (Before the byte bound all were held: a
  // client could make the ring hold 65,536 records of 2 MiB.)
  auto proxy = start({});
  constexpr int kRequests = 100;
  const std::string target = "/api/v1/namespaces/long/configmaps/" + std::string(512 * 1024, 'a');
  {
    TlsClient client(proxy->port(), ca.cert_pem, 120s);
    for (int i = 0; i < kRequests; ++i) ASSERT_EQ(status_of(client, "GET", target), 503);
  }
  // A record is appended once its answer went out: wait for the last one.
  const std::string last_wanted = "/v1/audit?since=" + std::to_string(kRequests - 1);
  eventually([&] { return !admin_get(proxy->admin_port(), last_wanted).body.empty(); }, 30s);
  AdminAnswer held = admin_get(proxy->admin_port(), "/v1/audit?limit=100000");
  ASSERT_EQ(held.status, 200);
  const auto lines = lines_of(held.body);
  ASSERT_FALSE(lines.empty());
  const std::uint64_t first = boost::json::parse(lines.front()).at("seq").to_number<std::uint64_t>();
  const std::uint64_t last = boost::json::parse(lines.back()).at("seq").to_number<std::uint64_t>();
  EXPECT_EQ(last, static_cast<std::uint64_t>(kRequests));
  EXPECT_GT(first, 1u) << "all " << lines.size() << " records (" << held.body.size() << " bytes) are still held";
  EXPECT_EQ(lines.size(), last - first + 1) << "the held records are the newest, without a gap";
  EXPECT_LE(held.body.size(), std::size_t{64} * 1024 * 1024) << lines.size() << " records held";
  EXPECT_GE(held.body.size(), std::size_t{60} * 1024 * 1024) << "the ring holds what fits, not less";
}

// Whether the connection on `fd` was closed by the other side (readable with nothing to read).
std::size_t closed_by_peer(const std::vector<int>& fds) {
  std::vector<pollfd> polled;
  for (int fd : fds) polled.push_back({fd, POLLIN, 0});
  ::poll(polled.data(), polled.size(), 0);
  std::size_t closed = 0;
  for (const auto& p : polled) {
    char byte = 0;
    if ((p.revents & (POLLIN | POLLHUP | POLLERR)) != 0 && ::recv(p.fd, &byte, 1, MSG_DONTWAIT) <= 0) ++closed;
  }
  return closed;
}

TEST_F(ProxyHardening, BareAdminConnectionsLeaveTheRelayServing) {
  // 2,200 TCP connections to the admin API that send nothing, against a proxy whose open-files
  // limit is 2,100 (the relay's own share of it: (2,100 - 128) / 2 client connections). Before the
  // cap the admin server accepted them all and the relay's accept failed ("Too many open files")
  // until they closed: no client of the apiserver got an answer.
  constexpr rlim_t kOpenFiles = 2100;
  constexpr int kBare = 2200;
  rlimit own{};
  ASSERT_EQ(::getrlimit(RLIMIT_NOFILE, &own), 0);
  ASSERT_GE(own.rlim_max, rlim_t{kBare + 200}) << "the test needs " << kBare + 200 << " descriptors itself";
  if (own.rlim_cur < own.rlim_max) {
    rlimit raised{own.rlim_max, own.rlim_max};
    ASSERT_EQ(::setrlimit(RLIMIT_NOFILE, &raised), 0);
  }
  net::write_file(dir.path() / "proxy-ca.crt", ca.cert_pem);
  net::write_file(dir.path() / "proxy-ca.key", ca.key_pem, true);
  ProxyProcess proxy(dir.path(), "proxy",
                     {"--ca-cert", (dir.path() / "proxy-ca.crt").string(), "--ca-key",
                      (dir.path() / "proxy-ca.key").string(), "--upstream", upstream, "--upstream-insecure"},
                     testing::OpenFilesLimit{kOpenFiles, kOpenFiles});
  asio::io_context ioc;
  std::vector<tcp::socket> bare;
  // Before the admin API's 5 s deadline for a first request closes the first of them: the relay
  // must answer while they are all open.
  const auto first_connected = std::chrono::steady_clock::now();
  const tcp::endpoint admin(asio::ip::make_address("127.0.0.1"), proxy.admin_port());
  for (int i = 0; i < kBare; ++i) {
    tcp::socket socket(ioc);
    boost::system::error_code ec;
    socket.connect(admin, ec);
    if (ec) break;  // the listen backlog is full: the proxy is not accepting
    bare.push_back(std::move(socket));
  }
  EXPECT_EQ(bare.size(), std::size_t{kBare});
  std::this_thread::sleep_for(500ms);  // the proxy accepts them

  // A client of the apiserver gets its answer (503: the upstream is a port nobody listens on).
  const auto asked = std::chrono::steady_clock::now();
  try {
    TlsClient client(proxy.port(), ca.cert_pem, 10s);
    EXPECT_EQ(status_of(client, "GET", "/api"), 503);
  } catch (const std::exception& e) {
    ADD_FAILURE() << "no answer from the relay while " << bare.size()
                  << " bare admin connections are open: " << e.what() << "\nproxy log:\n"
                  << proxy.log().substr(0, 4000);
  }
  EXPECT_LT(std::chrono::steady_clock::now() - first_connected, 4s)
      << "the relay answered only once the bare connections were closed (connecting them took "
      << std::chrono::duration_cast<std::chrono::milliseconds>(asked - first_connected).count() << " ms)";

  // The admin connections past the cap were closed at once, the others 5 s after they were
  // accepted without a request; then the admin API answers again, and counted what it refused.
  EXPECT_TRUE(eventually(
      [&] {
        try {
          return admin_get(proxy.admin_port(), "/healthz").status == 200;
        } catch (const std::exception&) {
          return false;
        }
      },
      20s));
  std::vector<int> fds;
  for (auto& socket : bare) fds.push_back(socket.native_handle());
  // The last ones may still wait in the listen backlog for the accept that closes them.
  std::size_t closed = 0;
  eventually([&] { return (closed = closed_by_peer(fds)) == bare.size(); }, 20s);
  EXPECT_EQ(closed, bare.size()) << "every bare admin connection is closed by the proxy";
  const std::string metrics = admin_get(proxy.admin_port(), "/metrics").body;
  const std::string counter = "faultline_admin_connections_rejected_total ";
  const auto at = metrics.find("\n" + counter);
  ASSERT_NE(at, std::string::npos) << metrics;
  EXPECT_GE(std::stoul(metrics.substr(at + 1 + counter.size())), std::size_t{kBare - 64}) << metrics;
  EXPECT_GE(count_lines_with(proxy.log(), "admin API: ", "connection(s) refused: 64 admin connections are open"), 1u)
      << proxy.log().substr(0, 4000);
}

}  // namespace
}  // namespace faultline::relaytest
