// The admin server over real loopback HTTP (port 0), backed by faultline-proxy's AdminBridge over
// the real fault engine, audit log and metrics.

#include "faultline/admin/admin_server.hpp"
#include "faultline/app/bridge.hpp"
#include "faultline/faults/clock.hpp"
#include "faultline/faults/scenario.hpp"
#include "files.hpp"
#include "prometheus_text.hpp"

#include <gtest/gtest.h>
#include <spdlog/sinks/ostream_sink.h>
#include <spdlog/spdlog.h>
#include <boost/asio/connect.hpp>
#include <boost/asio/read.hpp>
#include <boost/asio/read_until.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/json/parse.hpp>

#include <fstream>
#include <optional>
#include <regex>
#include <sstream>
#include <thread>

namespace faultline::admin {
namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
namespace json = boost::json;
using tcp = asio::ip::tcp;
using Response = http::response<http::string_body>;

std::string scenario_file(const std::string& name) {
  return faultline::testing::slurp(std::string(FAULTLINE_TEST_DATA_DIR) + "/scenarios/" + name);
}

const std::string kBindFailures = R"(apiVersion: faultline/v1
kind: Scenario
metadata: {name: bind-failures}
seed: 7
faults:
  - name: fail-binds
    match: {verbs: [create], resources: [pods/binding]}
    action: {type: respond, code: 500}
)";

class AdminServerTest : public ::testing::Test {
 protected:
  void start(AdminServerOptions options = {}) {
    server_ = std::make_unique<AdminServer>(ioc_, std::move(options), bridge_);
    server_->start();
    endpoint_ = server_->local_endpoint();
    // Two threads: handlers of different connections really run concurrently.
    for (int i = 0; i < 2; ++i) threads_.emplace_back([this] { ioc_.run(); });
  }

  // Stops the server and waits until the io_context ran out of admin work.
  void stop() {
    if (!server_) return;
    server_->stop();
    for (auto& t : threads_) t.join();
    threads_.clear();
  }

  void TearDown() override {
    stop();
    server_.reset();
  }

  Response send(http::verb method, const std::string& target, const std::string& body = "",
                const std::vector<std::pair<std::string, std::string>>& headers = {}) {
    asio::io_context ioc;
    beast::tcp_stream stream(ioc);
    stream.connect(endpoint_);
    http::request<http::string_body> req{method, target, 11};
    req.set(http::field::host, "127.0.0.1");
    for (const auto& [k, v] : headers) req.set(k, v);
    req.body() = body;
    req.prepare_payload();
    http::write(stream, req);
    beast::flat_buffer buffer;
    Response res;
    http::read(stream, buffer, res);
    return res;
  }

  Response get(const std::string& target) { return send(http::verb::get, target); }
  Response post(const std::string& target, const std::string& body = "") {
    return send(http::verb::post, target, body);
  }
  Response put_scenario(const std::string& yaml) { return send(http::verb::put, "/v1/scenario", yaml); }

  // Writes raw bytes and reads one response (the server closes after error answers).
  Response raw(const std::string& bytes) {
    asio::io_context ioc;
    tcp::socket socket(ioc);
    socket.connect(endpoint_);
    asio::write(socket, asio::buffer(bytes));
    beast::flat_buffer buffer;
    Response res;
    http::read(socket, buffer, res);
    return res;
  }

  static json::value body_json(const Response& res) {
    EXPECT_EQ(res[http::field::content_type], "application/json");
    return json::parse(res.body());
  }

  static std::string error_of(const Response& res) { return std::string(body_json(res).at("error").as_string()); }

  faults::ManualClock clock_;
  AuditLog audit_{{.ring_capacity = 5}};
  ProxyMetrics metrics_;
  faults::Engine engine_;
  app::AdminBridge bridge_{engine_, clock_, audit_, metrics_};
  asio::io_context ioc_;
  std::unique_ptr<AdminServer> server_;
  std::vector<std::thread> threads_;
  tcp::endpoint endpoint_;
};

TEST_F(AdminServerTest, HealthzAnswersOk) {
  start();
  EXPECT_EQ(endpoint_.address().to_string(), "127.0.0.1");
  EXPECT_NE(endpoint_.port(), 0);
  Response res = get("/healthz");
  EXPECT_EQ(res.result(), http::status::ok);
  EXPECT_EQ(body_json(res).at("status").as_string(), "ok");
}

TEST_F(AdminServerTest, UnknownPathIs404AndWrongMethodIs405WithAllow) {
  start();
  Response missing = get("/v1/nope");
  EXPECT_EQ(missing.result(), http::status::not_found);
  EXPECT_NE(error_of(missing).find("/v1/nope"), std::string::npos);

  Response wrong = send(http::verb::delete_, "/v1/scenario");
  EXPECT_EQ(wrong.result(), http::status::method_not_allowed);
  EXPECT_EQ(wrong[http::field::allow], "GET, PUT");
  EXPECT_NE(error_of(wrong).find("DELETE"), std::string::npos);
  EXPECT_EQ(get("/v1/arm").result(), http::status::method_not_allowed);
  EXPECT_EQ(post("/metrics").result(), http::status::method_not_allowed);
}

TEST_F(AdminServerTest, GetScenarioWithoutOneIs404) {
  start();
  Response res = get("/v1/scenario");
  EXPECT_EQ(res.result(), http::status::not_found);
  EXPECT_EQ(error_of(res), "no scenario is loaded");
}

TEST_F(AdminServerTest, PutGoodScenarioSwapsItAndGetReturnsIt) {
  start();
  Response put = put_scenario(kBindFailures);
  ASSERT_EQ(put.result(), http::status::ok) << put.body();
  json::value answer = body_json(put);
  EXPECT_TRUE(answer.at("accepted").as_bool());
  EXPECT_EQ(answer.at("name").as_string(), "bind-failures");
  EXPECT_EQ(answer.at("rules").as_int64(), 1);
  ASSERT_TRUE(engine_.scenario());
  EXPECT_EQ(engine_.scenario()->metadata.name, "bind-failures");

  Response got = get("/v1/scenario");
  EXPECT_EQ(got.result(), http::status::ok);
  EXPECT_EQ(got[http::field::content_type], "application/yaml");
  EXPECT_EQ(got.body(), kBindFailures);
}

// The sections only faultline-harness reads are accepted without being checked (its `validate`
// checks them), and the answer names them: here a workload the harness would refuse.
TEST_F(AdminServerTest, PutScenarioNamesTheHarnessSectionsItDidNotCheck) {
  start();
  Response plain = put_scenario(kBindFailures);
  ASSERT_EQ(plain.result(), http::status::ok) << plain.body();
  EXPECT_FALSE(body_json(plain).as_object().contains("unchecked")) << plain.body();

  Response put = put_scenario(scenario_file("bad/zero-node-count.yaml"));
  ASSERT_EQ(put.result(), http::status::ok) << put.body();
  EXPECT_EQ(body_json(put).at("unchecked"), (json::array{"workload"})) << put.body();
  ASSERT_TRUE(engine_.scenario());
  EXPECT_EQ(engine_.scenario()->metadata.name, "bad");
}

TEST_F(AdminServerTest, GetScenarioAsJsonOnRequest) {
  start();
  ASSERT_EQ(put_scenario(kBindFailures).result(), http::status::ok);
  for (const Response& res :
       {get("/v1/scenario?format=json"), send(http::verb::get, "/v1/scenario", "", {{"Accept", "application/json"}})}) {
    ASSERT_EQ(res.result(), http::status::ok) << res.body();
    const json::value doc = body_json(res);
    EXPECT_EQ(doc.at("metadata").at("name").as_string(), "bind-failures");
    EXPECT_EQ(doc.at("seed").as_int64(), 7);
    EXPECT_EQ(doc.at("faults").at(0).at("action").at("code").as_int64(), 500);
    EXPECT_EQ(doc.at("faults").at(0).at("match").at("resources").at(0).as_string(), "pods/binding");
  }
  EXPECT_EQ(get("/v1/scenario?format=yaml").body(), kBindFailures);
  EXPECT_EQ(get("/v1/scenario?format=xml").result(), http::status::bad_request);
}

TEST_F(AdminServerTest, PutBadScenarioAnswers400WithLocatedErrorsAndKeepsTheRunningOne) {
  start();
  ASSERT_EQ(put_scenario(kBindFailures).result(), http::status::ok);
  const auto running = engine_.scenario();

  Response bad = put_scenario(scenario_file("bad/many-errors.yaml"));
  ASSERT_EQ(bad.result(), http::status::bad_request) << bad.body();
  json::value answer = body_json(bad);
  const json::array& errors = answer.at("errors").as_array();
  ASSERT_GE(errors.size(), 3u) << bad.body();  // every problem of the file, not just the first
  const std::regex located(R"(^PUT /v1/scenario:\d+:\d+: .+)");
  for (const auto& e : errors) {
    EXPECT_TRUE(std::regex_match(std::string(e.as_string()), located)) << e.as_string();
  }
  EXPECT_NE(std::string(answer.at("error").as_string()).find("unchanged"), std::string::npos);

  EXPECT_EQ(engine_.scenario(), running) << "a rejected PUT must not swap the snapshot";
  EXPECT_EQ(get("/v1/scenario").body(), kBindFailures);

  Response not_yaml = put_scenario("{{{");
  EXPECT_EQ(not_yaml.result(), http::status::bad_request);
  EXPECT_EQ(engine_.scenario(), running);
}

TEST_F(AdminServerTest, ArmAndDisarmDriveTheEngine) {
  start();
  ASSERT_EQ(put_scenario(kBindFailures).result(), http::status::ok);
  EXPECT_FALSE(engine_.armed());
  Response armed = post("/v1/arm");
  EXPECT_EQ(armed.result(), http::status::ok);
  EXPECT_TRUE(body_json(armed).at("armed").as_bool());
  EXPECT_TRUE(engine_.armed());
  EXPECT_EQ(post("/v1/disarm").result(), http::status::ok);
  EXPECT_FALSE(engine_.armed());
}

TEST_F(AdminServerTest, RulesReportTheEnginesCounters) {
  start();
  ASSERT_EQ(put_scenario(kBindFailures).result(), http::status::ok);
  ASSERT_EQ(post("/v1/arm").result(), http::status::ok);
  const auto bind = faults::make_request("POST", "/api/v1/namespaces/faultline/pods/p1/binding");
  const auto list = faults::make_request("GET", "/api/v1/pods");
  for (int i = 0; i < 3; ++i) EXPECT_TRUE(engine_.decide(bind, clock_.now()).fires());
  EXPECT_FALSE(engine_.decide(list, clock_.now()).fires());

  Response res = get("/v1/rules");
  ASSERT_EQ(res.result(), http::status::ok);
  const json::value answer = body_json(res);
  EXPECT_TRUE(answer.at("armed").as_bool());
  const json::array& rules = answer.at("rules").as_array();
  ASSERT_EQ(rules.size(), 1u);
  EXPECT_EQ(rules[0].at("name").as_string(), "fail-binds");
  EXPECT_EQ(rules[0].at("matched").as_int64(), 3);
  EXPECT_EQ(rules[0].at("fired").as_int64(), 3);
  EXPECT_TRUE(rules[0].at("windowOpened").as_bool());
}

TEST_F(AdminServerTest, OutageFromQueryStartsAnEngineOutage) {
  start();
  Response res = post("/v1/outage?duration=10s&mode=refuse");
  ASSERT_EQ(res.result(), http::status::ok) << res.body();
  EXPECT_EQ(body_json(res).at("outage").as_string(), "refuse");
  auto outage = engine_.outage(clock_.now());
  ASSERT_TRUE(outage);
  EXPECT_EQ(outage->mode, OutageMode::refuse);
  EXPECT_EQ(outage->until, clock_.now() + std::chrono::seconds(10));
}

TEST_F(AdminServerTest, OutageFromJsonBodyDefaultsToReset) {
  start();
  Response res = post("/v1/outage", R"({"duration":"1m30s"})");
  ASSERT_EQ(res.result(), http::status::ok) << res.body();
  auto outage = engine_.outage(clock_.now());
  ASSERT_TRUE(outage);
  EXPECT_EQ(outage->mode, OutageMode::reset);
  EXPECT_EQ(outage->until, clock_.now() + std::chrono::seconds(90));

  ASSERT_EQ(post("/v1/outage", R"({"duration":2.5,"mode":"blackhole"})").result(), http::status::ok);
  outage = engine_.outage(clock_.now());
  ASSERT_TRUE(outage);
  EXPECT_EQ(outage->mode, OutageMode::blackhole);
  EXPECT_EQ(outage->until, clock_.now() + std::chrono::milliseconds(2500));
}

TEST_F(AdminServerTest, OutageRejectsBadInputAndStartsNothing) {
  start();
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"/v1/outage", ""},                                      // no duration
      {"/v1/outage?duration=10x", ""},                         // unknown unit
      {"/v1/outage?duration=0s", ""},                          // not positive
      {"/v1/outage?duration=10s&mode=explode", ""},            // unknown mode
      {"/v1/outage?duraton=10s", ""},                          // misspelt parameter
      {"/v1/outage", R"({"duration":"10s","colour":"red"})"},  // unknown key
      {"/v1/outage", R"({"duration":-1})"},                    // negative seconds
      {"/v1/outage", R"(["10s"])"},                            // not an object
      {"/v1/outage?mode=reset", R"({"duration":"10s"})"},      // both query and body
  };
  for (const auto& [target, body] : cases) {
    Response res = post(target, body);
    EXPECT_EQ(res.result(), http::status::bad_request) << target << " " << body;
    EXPECT_FALSE(error_of(res).empty());
  }
  EXPECT_FALSE(engine_.outage(clock_.now())) << "a rejected request must not start an outage";
}

audit::Record bind_record(int i) {
  audit::Record r;
  r.method = "POST";
  r.path = "/api/v1/namespaces/faultline/pods/p" + std::to_string(i) + "/binding";
  r.verb = "create";
  r.resource = "pods";
  r.subresource = "binding";
  r.status = 201;
  r.upstream_status = 201;
  return r;
}

std::vector<std::uint64_t> seqs_of(const Response& res) {
  std::vector<std::uint64_t> out;
  std::istringstream in(res.body());
  for (std::string line; std::getline(in, line);) {
    out.push_back(audit::from_json(json::parse(line)).seq);  // every line a whole record
  }
  return out;
}

TEST_F(AdminServerTest, AuditServesJsonLinesSinceASeq) {
  start();
  for (int i = 1; i <= 4; ++i) audit_.append(bind_record(i));
  Response res = get("/v1/audit?since=1");
  ASSERT_EQ(res.result(), http::status::ok) << res.body();
  EXPECT_EQ(res[http::field::content_type], "application/x-ndjson");
  EXPECT_EQ(seqs_of(res), (std::vector<std::uint64_t>{2, 3, 4}));
  EXPECT_EQ(res["Faultline-Audit-Last-Seq"], "4");
  EXPECT_EQ(res["Faultline-Audit-Next-Since"], "4");
  EXPECT_EQ(res["Faultline-Audit-More"], "false");

  Response none = get("/v1/audit?since=4");
  EXPECT_EQ(none.result(), http::status::ok);
  EXPECT_TRUE(none.body().empty());
  EXPECT_EQ(none["Faultline-Audit-Next-Since"], "4");
}

TEST_F(AdminServerTest, AuditLimitPages) {
  start();
  for (int i = 1; i <= 4; ++i) audit_.append(bind_record(i));
  Response page = get("/v1/audit?since=0&limit=3");
  EXPECT_EQ(seqs_of(page), (std::vector<std::uint64_t>{1, 2, 3}));
  EXPECT_EQ(page["Faultline-Audit-More"], "true");
  Response rest = get("/v1/audit?since=" + std::string(page["Faultline-Audit-Next-Since"]) + "&limit=3");
  EXPECT_EQ(seqs_of(rest), (std::vector<std::uint64_t>{4}));
  EXPECT_EQ(rest["Faultline-Audit-More"], "false");
}

TEST_F(AdminServerTest, AuditAnswers410WhenAskedForEvictedRecords) {
  start();
  for (int i = 1; i <= 8; ++i) audit_.append(bind_record(i));  // ring keeps 5: seq 4..8
  Response gone = get("/v1/audit?since=0");
  ASSERT_EQ(gone.result(), http::status::gone) << gone.body();
  json::value answer = body_json(gone);
  EXPECT_EQ(answer.at("firstRetained").as_int64(), 4);
  EXPECT_EQ(answer.at("lastSeq").as_int64(), 8);
  EXPECT_NE(std::string(answer.at("error").as_string()).find("since=3"), std::string::npos);

  EXPECT_EQ(seqs_of(get("/v1/audit?since=3")), (std::vector<std::uint64_t>{4, 5, 6, 7, 8}));
  EXPECT_EQ(seqs_of(get("/v1/audit")), (std::vector<std::uint64_t>{4, 5, 6, 7, 8}));  // no since: what is kept
}

TEST_F(AdminServerTest, AuditRejectsBadParameters) {
  start();
  EXPECT_EQ(get("/v1/audit?since=abc").result(), http::status::bad_request);
  EXPECT_EQ(get("/v1/audit?since=-1").result(), http::status::bad_request);
  EXPECT_EQ(get("/v1/audit?limit=0").result(), http::status::bad_request);
  EXPECT_EQ(get("/v1/audit?limit=100001").result(), http::status::bad_request);
  EXPECT_EQ(get("/v1/audit?from=1").result(), http::status::bad_request);
}

TEST_F(AdminServerTest, MetricsServePrometheusText) {
  start();
  metrics_.request_done("create", "pods/binding", 500);
  metrics_.open_watches.inc();
  Response res = get("/metrics");
  ASSERT_EQ(res.result(), http::status::ok);
  EXPECT_EQ(res[http::field::content_type], "text/plain; version=0.0.4; charset=utf-8");
  const auto e = test::parse_exposition(res.body());
  EXPECT_EQ(e.value("faultline_requests_total", {{"verb", "create"}, {"resource", "pods/binding"}, {"code", "500"}}),
            1);
  EXPECT_EQ(e.value("faultline_open_watches"), 1);
  EXPECT_EQ(e.type.at("faultline_upstream_latency_seconds"), "histogram");
}

TEST_F(AdminServerTest, BackendFailuresBecomeJsonErrors) {
  // The real bridge, except that rendering the metrics throws something that is not an AdminError.
  struct Failing final : AdminBackend {
    explicit Failing(AdminBackend& bridge) : real(bridge) {}
    AdminBackend& real;
    std::optional<ScenarioDocument> scenario(ScenarioFormat f) override { return real.scenario(f); }
    ScenarioReplaceResult replace_scenario(std::string_view yaml) override { return real.replace_scenario(yaml); }
    boost::json::value arm() override { return real.arm(); }
    boost::json::value disarm() override { return real.disarm(); }
    boost::json::value outage(const OutageRequest& request) override { return real.outage(request); }
    boost::json::value rules() override { return real.rules(); }
    AuditSince audit_since(std::optional<std::uint64_t> since, std::size_t limit) override {
      return real.audit_since(since, limit);
    }
    std::string metrics_text() override { throw std::runtime_error("registry exploded"); }
  };
  Failing failing(bridge_);
  server_ = std::make_unique<AdminServer>(ioc_, AdminServerOptions{}, failing);
  server_->start();
  endpoint_ = server_->local_endpoint();
  threads_.emplace_back([this] { ioc_.run(); });

  Response conflict = post("/v1/arm");
  EXPECT_EQ(conflict.result(), http::status::conflict);
  EXPECT_EQ(error_of(conflict), "no scenario loaded: nothing to arm");
  Response internal = get("/metrics");
  EXPECT_EQ(internal.result(), http::status::internal_server_error);
  EXPECT_NE(error_of(internal).find("registry exploded"), std::string::npos);
  stop();  // before `failing` goes out of scope
}

TEST_F(AdminServerTest, TokenIsRequiredExceptForHealthz) {
  const std::string token = "s3cret-admin-token";
  start({.token = token});
  Response none = get("/v1/rules");
  EXPECT_EQ(none.result(), http::status::unauthorized);
  EXPECT_EQ(none[http::field::www_authenticate], "Bearer realm=\"faultline-admin\"");
  EXPECT_EQ(none.body().find(token), std::string::npos);

  auto with = [&](const std::string& auth) {
    return send(http::verb::get, "/v1/rules", "", {{"Authorization", auth}});
  };
  EXPECT_EQ(with("Bearer wrong").result(), http::status::unauthorized);
  EXPECT_EQ(with("Bearer " + token + "x").result(), http::status::unauthorized);
  EXPECT_EQ(with("Bearer " + token.substr(1)).result(), http::status::unauthorized);
  EXPECT_EQ(with("Basic " + token).result(), http::status::unauthorized);
  EXPECT_EQ(with(token).result(), http::status::unauthorized);
  EXPECT_EQ(with("Bearer " + token).result(), http::status::ok);
  EXPECT_EQ(with("bearer " + token).result(), http::status::ok);  // scheme is case-insensitive

  EXPECT_EQ(get("/healthz").result(), http::status::ok);
  // Unknown paths do not tell an unauthenticated caller what exists.
  EXPECT_EQ(get("/v1/nope").result(), http::status::unauthorized);
  // A PUT without the token never reaches the backend.
  EXPECT_EQ(put_scenario(kBindFailures).result(), http::status::unauthorized);
  EXPECT_FALSE(engine_.scenario());
}

TEST_F(AdminServerTest, TokenNeverReachesTheLog) {
  std::ostringstream captured;
  auto sink = std::make_shared<spdlog::sinks::ostream_sink_mt>(captured);
  auto previous = spdlog::default_logger();
  auto logger = std::make_shared<spdlog::logger>("admin-test", sink);
  logger->set_level(spdlog::level::trace);
  spdlog::set_default_logger(logger);

  const std::string token = "s3cret-admin-token";
  start({.token = token});
  send(http::verb::get, "/v1/rules", "", {{"Authorization", "Bearer " + token}});
  send(http::verb::get, "/v1/rules", "", {{"Authorization", "Bearer wrong-" + token}});
  send(http::verb::post, "/v1/outage?duration=1s&token=" + token, "", {{"Authorization", "Bearer " + token}});
  stop();
  spdlog::set_default_logger(previous);

  const std::string log = captured.str();
  EXPECT_NE(log.find("GET /v1/rules -> 200"), std::string::npos) << log;  // the log did capture requests
  EXPECT_NE(log.find("GET /v1/rules -> 401"), std::string::npos) << log;
  EXPECT_EQ(log.find(token), std::string::npos) << log;
  EXPECT_EQ(log.find("Bearer"), std::string::npos) << log;
}

TEST_F(AdminServerTest, OversizedBodiesAre413AndNeverReachTheBackend) {
  start({.body_limit = 1024});
  const std::string big = kBindFailures + "# " + std::string(2048, 'x') + "\n";
  Response res = put_scenario(big);
  EXPECT_EQ(res.result(), http::status::payload_too_large);
  EXPECT_NE(error_of(res).find("1024"), std::string::npos);
  EXPECT_FALSE(engine_.scenario());

  // Chunked: no Content-Length to check up front; the parser's limit catches it.
  std::string chunked = "PUT /v1/scenario HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n";
  for (int i = 0; i < 3; ++i) chunked += "200\r\n" + std::string(512, 'y') + "\r\n";
  chunked += "0\r\n\r\n";
  EXPECT_EQ(raw(chunked).result(), http::status::payload_too_large);
  EXPECT_FALSE(engine_.scenario());

  EXPECT_EQ(put_scenario(kBindFailures).result(), http::status::ok) << "bodies under the limit still work";
}

TEST_F(AdminServerTest, OversizedHeaderIs431AndMalformedRequestIs400) {
  start({.header_limit = 1024});
  Response big = raw("GET /healthz HTTP/1.1\r\nHost: x\r\nX-Filler: " + std::string(4096, 'z') + "\r\n\r\n");
  EXPECT_EQ(big.result(), http::status::request_header_fields_too_large);
  Response garbage = raw("GARBAGE\x01 / HTTP/1.1\r\n\r\n");
  EXPECT_EQ(garbage.result(), http::status::bad_request);
  EXPECT_FALSE(error_of(garbage).empty());
}

TEST_F(AdminServerTest, KeepAliveServesSeveralRequestsOnOneConnection) {
  start();
  asio::io_context ioc;
  beast::tcp_stream stream(ioc);
  stream.connect(endpoint_);
  beast::flat_buffer buffer;
  for (const char* target : {"/healthz", "/v1/rules", "/metrics", "/healthz"}) {
    http::request<http::empty_body> req{http::verb::get, target, 11};
    req.set(http::field::host, "127.0.0.1");
    http::write(stream, req);
    Response res;
    http::read(stream, buffer, res);
    EXPECT_EQ(res.result(), http::status::ok) << target;
    EXPECT_TRUE(res.keep_alive()) << target;
  }
}

TEST_F(AdminServerTest, Expect100ContinueGetsAnInterimAnswer) {
  start();
  asio::io_context ioc;
  tcp::socket socket(ioc);
  socket.connect(endpoint_);
  asio::write(socket, asio::buffer("PUT /v1/scenario HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\nContent-Length: " +
                                   std::to_string(kBindFailures.size()) + "\r\n\r\n"));
  std::string interim;
  const std::size_t n = asio::read_until(socket, asio::dynamic_buffer(interim), "\r\n\r\n");
  EXPECT_EQ(interim.substr(0, n), "HTTP/1.1 100 Continue\r\n\r\n");
  interim.erase(0, n);
  asio::write(socket, asio::buffer(kBindFailures));
  beast::flat_buffer buffer;
  Response res;
  http::read(socket, buffer, res);
  EXPECT_EQ(res.result(), http::status::ok) << res.body();
  EXPECT_TRUE(engine_.scenario());
}

TEST_F(AdminServerTest, StopClosesIdleConnectionsAndTheIoContextRunsOut) {
  start({.timeout = std::chrono::hours(1)});  // only stop() can end the idle connection
  asio::io_context ioc;
  tcp::socket idle(ioc);
  idle.connect(endpoint_);
  EXPECT_EQ(get("/healthz").result(), http::status::ok);  // the idle one is accepted by now
  stop();                                                 // joins the io_context threads
  char byte;
  boost::system::error_code ec;
  idle.read_some(asio::buffer(&byte, 1), ec);
  EXPECT_TRUE(ec == asio::error::eof || ec == asio::error::connection_reset) << ec.message();

  tcp::socket late(ioc);
  late.connect(endpoint_, ec);
  EXPECT_TRUE(ec) << "the listener must be closed after stop()";
}

// Whether the server closes `socket` within `limit` (a read ends with EOF or a reset), and how long
// that took.
std::optional<std::chrono::steady_clock::duration> closed_within(tcp::socket& socket,
                                                                 std::chrono::steady_clock::duration limit) {
  auto& ioc = static_cast<asio::io_context&>(socket.get_executor().context());
  const auto from = std::chrono::steady_clock::now();
  std::optional<std::chrono::steady_clock::duration> took;
  bool done = false;
  char byte = 0;
  socket.async_read_some(asio::buffer(&byte, 1), [&](boost::system::error_code ec, std::size_t) {
    done = true;
    if (ec == asio::error::eof || ec == asio::error::connection_reset) took = std::chrono::steady_clock::now() - from;
  });
  ioc.restart();
  ioc.run_for(limit);
  if (!done) {
    socket.cancel();
    ioc.restart();
    ioc.run();  // the handler, cancelled, before its captures go
  }
  return took;
}

// Polls `pred` every 10 ms for up to 5 s (what the server does after a close the client saw).
template <class Pred>
bool soon(Pred pred) {
  for (int i = 0; i < 500; ++i) {
    if (pred()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return pred();
}

TEST_F(AdminServerTest, ConnectionsBeyondMaxConnectionsAreClosedAtOnceAndCounted) {
  start({.timeout = std::chrono::hours(1), .max_connections = 2});
  asio::io_context ioc;
  std::vector<tcp::socket> held;
  for (int i = 0; i < 2; ++i) {
    held.emplace_back(ioc);
    held.back().connect(endpoint_);
  }
  // Accepted in order: the third is past the cap however fast the first two were served.
  tcp::socket third(ioc);
  third.connect(endpoint_);
  const auto took = closed_within(third, std::chrono::seconds(5));
  ASSERT_TRUE(took) << "the connection past the cap was not closed";
  EXPECT_LT(*took, std::chrono::seconds(2)) << "closed at a deadline, not at once";
  EXPECT_TRUE(soon([&] { return metrics_.admin_connections_rejected.value() == 1; }));
  EXPECT_EQ(metrics_.admin_connections.value(), 2) << "the two under the cap are held open";

  // Once one of them closes, a new connection is served again.
  held.pop_back();
  bool served = false;
  for (int i = 0; i < 100 && !served; ++i) {
    try {
      served = get("/healthz").result() == http::status::ok;
    } catch (const std::exception&) {
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
  }
  EXPECT_TRUE(served) << "no connection was served after one of the two closed";
}

TEST_F(AdminServerTest, FirstRequestHeaderHasItsOwnDeadlineFromAccept) {
  start({.timeout = std::chrono::hours(1), .first_request_timeout = std::chrono::seconds(1)});
  asio::io_context ioc;
  tcp::socket silent(ioc);
  silent.connect(endpoint_);
  // A connection that asked something already waits for its next request as long as `timeout`.
  beast::tcp_stream talking(ioc);
  talking.connect(endpoint_);
  beast::flat_buffer buffer;
  auto ask = [&] {
    http::request<http::empty_body> req{http::verb::get, "/healthz", 11};
    req.set(http::field::host, "127.0.0.1");
    http::write(talking, req);
    Response res;
    http::read(talking, buffer, res);
    return res.result();
  };
  EXPECT_EQ(ask(), http::status::ok);

  const auto took = closed_within(silent, std::chrono::seconds(10));
  ASSERT_TRUE(took) << "a connection without a request was kept past first_request_timeout";
  EXPECT_GE(*took, std::chrono::milliseconds(500));
  EXPECT_TRUE(soon([&] { return metrics_.admin_connections.value() == 1; })) << "the silent one still counts";
  std::this_thread::sleep_for(std::chrono::milliseconds(500));  // past the deadline of the first request
  EXPECT_EQ(ask(), http::status::ok) << "the deadline of the first request cut a keep-alive connection";
}

TEST_F(AdminServerTest, StartFailsLoudlyOnABadOrBusyAddress) {
  start();
  AdminServer busy(ioc_, {.port = endpoint_.port()}, bridge_);
  try {
    busy.start();
    FAIL() << "bound a port that is in use";
  } catch (const std::system_error& e) {
    EXPECT_NE(std::string(e.what()).find("127.0.0.1:" + std::to_string(endpoint_.port())), std::string::npos)
        << e.what();
  }
  AdminServer bad(ioc_, {.address = "localhost:80"}, bridge_);
  EXPECT_THROW(bad.start(), std::system_error);
}

}  // namespace
}  // namespace faultline::admin
