// The admin API request handler (check_request_header + handle_admin_request) in front of the
// proxy's real AdminBridge, with a real engine, audit log and metrics: what a client of the admin
// port can reach once Beast has parsed its request. The relay server is not attached (no
// listener to reopen), so outages and disarm only change the engine.
//
// Input: up to 8 requests separated by a line "@@@". Each request is
//   METHOD TARGET
//   Header: value          (any number of header lines)
//                          (an empty line)
//   body                   (the rest)
// It is written out as HTTP/1.1 with its Content-Length and parsed by Beast the way the admin
// server parses it; inputs Beast rejects are skipped (the server would have answered 400).
// Every answer must be a real status with a body, JSON bodies must parse, and nothing may turn
// into 500 (an exception the handler did not expect).

#include <spdlog/spdlog.h>
#include <boost/asio/buffer.hpp>
#include <boost/beast/http.hpp>
#include <boost/json/parse.hpp>

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "admin_routes.hpp"
#include "faultline/admin/audit_log.hpp"
#include "faultline/admin/proxy_metrics.hpp"
#include "faultline/app/bridge.hpp"
#include "faultline/faults/clock.hpp"
#include "faultline/faults/engine.hpp"
#include "faultline/faults/scenario.hpp"
#include "fuzz_check.hpp"

namespace {

using namespace faultline;
using fuzz::check;
namespace http = boost::beast::http;

constexpr std::string_view kToken = "fuzz-token";
constexpr std::string_view kSeparator = "\n@@@\n";

// The scenario running when each input starts (a fresh proxy state per input, so every crash
// replays from its input alone).
constexpr std::string_view kScenario = R"(apiVersion: faultline/v1
kind: Scenario
metadata: {name: fuzz-admin, description: "admin API fuzzing"}
seed: 3
faults:
  - {name: fail-binds, match: {verbs: [create], resources: [pods/binding]}, when: {every: 2}, action: {type: respond, code: 500}}
  - {name: outage, match: {}, when: {afterMatches: 3, for: 10s}, action: {type: outage, mode: reset}}
)";

admin::AdminServerOptions options() {
  admin::AdminServerOptions o;
  o.token = std::string(kToken);
  o.audit_default_limit = 5;
  o.audit_max_limit = 50;
  return o;
}

struct Proxy {
  faults::ManualClock clock;
  faults::Engine engine;
  admin::AuditLog audit{{.ring_capacity = 4}};
  admin::ProxyMetrics metrics;
  app::AdminBridge bridge{engine, clock, audit, metrics};

  Proxy() {
    app::count_rule_matches(engine, metrics);
    // As faultline-proxy loads --scenario at start (parsed once: the snapshot is immutable).
    static const auto scenario = faults::load_scenario_text(kScenario, "fuzz-admin.yaml");
    engine.load(scenario);
    bridge.set_scenario_text(std::string(kScenario));
    app::AuditingObserver observer(audit, metrics);
    for (int i = 0; i < 6; ++i) {  // some audit history; the ring keeps the last 4 (410 is reachable)
      audit::Record record;
      record.proto = "h1";
      record.method = "GET";
      record.path = audit::redact_path("/api/v1/pods?token=secret&limit=" + std::to_string(i));
      record.verb = "list";
      record.resource = "pods";
      record.status = 200;
      observer.exchange_done(record, std::nullopt);
    }
  }
};

void handle(Proxy& proxy, std::string_view text) {
  const auto line_end = text.find('\n');
  const std::string_view request_line = text.substr(0, line_end);
  const auto space = request_line.find(' ');
  if (space == std::string_view::npos) return;
  std::string raw;
  raw.append(request_line.substr(0, space)).append(" ").append(request_line.substr(space + 1));
  raw.append(" HTTP/1.1\r\n");
  std::string_view rest = line_end == std::string_view::npos ? std::string_view() : text.substr(line_end + 1);
  std::string_view body;
  while (!rest.empty()) {
    const auto nl = rest.find('\n');
    const std::string_view header = rest.substr(0, nl);
    rest = nl == std::string_view::npos ? std::string_view() : rest.substr(nl + 1);
    if (header.empty()) {
      body = rest;
      break;
    }
    raw.append(header).append("\r\n");
  }
  raw.append("Content-Length: ").append(std::to_string(body.size())).append("\r\n\r\n").append(body);

  const admin::AdminServerOptions opts = options();
  http::request_parser<http::string_body> parser;
  parser.eager(true);
  parser.header_limit(static_cast<std::uint32_t>(opts.header_limit));
  parser.body_limit(boost::none);
  boost::beast::error_code ec;
  parser.put(boost::asio::buffer(raw), ec);
  if (ec || !parser.is_done()) return;

  auto early = admin::check_request_header(parser.get().base(), opts);
  admin::AdminResponse response =
      early ? std::move(*early) : admin::handle_admin_request(parser.release(), proxy.bridge, opts);
  const unsigned code = response.result_int();
  check(code >= 200 && code <= 599, "answer with status " + std::to_string(code));
  check(code != 500, "500 (an unexpected exception in a handler): " + response.body());
  const std::string_view type = response[http::field::content_type];
  if (type == "application/json") {
    boost::system::error_code json_ec;
    boost::json::parse(response.body(), json_ec);
    check(!json_ec, "a JSON answer that does not parse (" + json_ec.message() + "): " + response.body());
  }
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  spdlog::set_level(spdlog::level::off);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::string_view input(reinterpret_cast<const char*>(data), size);
  Proxy proxy;
  for (int i = 0; i < 8 && !input.empty(); ++i) {
    const auto sep = input.find(kSeparator);
    handle(proxy, input.substr(0, sep));
    if (sep == std::string_view::npos) break;
    input.remove_prefix(sep + kSeparator.size());
    proxy.clock.advance(std::chrono::seconds(1));
  }
  return 0;
}
