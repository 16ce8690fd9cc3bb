// Classification, decision and accounting of one request, shared by HTTP/1.1 and HTTP/2.
#include "exchange.hpp"

#include <boost/beast/core/string.hpp>

#include <spdlog/spdlog.h>

#include "faultline/faults/actions/stale_read.hpp"

namespace faultline::proxy {
namespace {

void fill_classification(audit::Record& record, const faults::Request& request) {
  record.method = request.method;
  record.path = audit::redact_path(request.target);
  record.user_agent = request.user_agent;
  record.verb = request.info.verb;
  record.resource = request.info.resource;
  if (!request.info.api_group.empty() && !record.resource.empty()) record.resource += "." + request.info.api_group;
  record.subresource = request.info.subresource;
  record.namespace_ = request.info.namespace_;
  record.name = request.info.name;
  record.watch = request.info.is_watch();
}

}  // namespace

void add_matchable_header(std::vector<faults::Header>& out, std::string_view name, std::string_view value) {
  if (boost::beast::iequals(name, "authorization") || boost::beast::iequals(name, "proxy-authorization")) return;
  out.push_back({std::string(name), std::string(value)});
}

void begin_exchange(Server::Impl& server, ExchangeCore& ex, std::uint64_t conn, const std::string& peer,
                    std::string_view proto, std::string_view method, std::string_view target,
                    std::vector<faults::Header> headers) {
  ex.started = std::chrono::steady_clock::now();
  ex.record.ts = std::chrono::system_clock::now();
  ex.record.conn = conn;
  ex.record.client = peer;
  ex.record.proto = std::string(proto);
  ex.request = faults::make_request(method, target, std::move(headers));
  fill_classification(ex.record, ex.request);
  ex.plan = server.engine.decide(ex.request, server.clock.now());
  // The header fields were for matching: nothing reads them after the decision, and an exchange
  // may last as long as a watch or a held HTTP/2 stream (HPACK makes a 1 MiB list cheap to send).
  ex.request.headers = {};
  ex.effects = effects_of(ex.plan);
  if (ex.plan.fires()) {
    ex.record.rule = ex.plan.rule;
    ex.record.action = std::string(faults::action_type(*ex.plan.action));
    spdlog::info("conn {}: rule '{}' fires {} on {} {} ({})", conn, ex.plan.rule, *ex.record.action, ex.request.method,
                 path_only(ex.request.target), proto);
  }
}

faults::HttpResponse upstream_unreachable_response(const ServerOptions& options, const std::string& failure) {
  faults::Status status;
  status.code = 503;
  status.reason = "ServiceUnavailable";
  status.message = "faultline-proxy: the upstream apiserver " + options.upstream.endpoint.to_string() +
                   " is unreachable: " + failure;
  return faults::status_response(status);
}

faults::HttpResponse bad_gateway_response(const ServerOptions& options, const std::string& why) {
  faults::Status status;
  status.code = 502;
  status.reason = std::string(faults::reason_for_code(502));
  status.message = "faultline-proxy: the upstream apiserver " + options.upstream.endpoint.to_string() +
                   " sent an invalid response: " + why;
  return faults::status_response(status);
}

faults::HttpResponse memory_refused_response(const ServerOptions& options, std::uint64_t resident) {
  faults::Status status;
  status.code = 503;
  status.reason = "ServiceUnavailable";
  status.message = "faultline-proxy: its memory (" + std::to_string(resident >> 20) + " MiB) is past --max-memory (" +
                   std::to_string(options.max_memory >> 20) + " MiB); retry later";
  auto response = faults::status_response(status);
  response.headers.push_back({"Retry-After", "1"});
  return response;
}

faults::HttpResponse final_local_response(const ExchangeCore& ex, const faults::HttpResponse& response,
                                          std::uint64_t conn) {
  if (response.code >= 200 && response.code <= 599) return response;
  spdlog::error("conn {}: rule '{}' answers {}, which is not a final status; answering 500", conn, ex.plan.rule,
                response.code);
  faults::Status status;
  status.code = 500;
  status.reason = "InternalError";
  status.message = "faultline-proxy: rule '" + ex.plan.rule + "' answers " + std::to_string(response.code) +
                   ", which is not a final HTTP status";
  return faults::status_response(status);
}

void note_stale_read(ExchangeCore& ex, const effect::ReadAsOf& read) {
  audit::StaleRead stale;
  stale.requested = faults::actions::query_parameter(ex.request.target, "resourceVersion").value_or("");
  stale.served = read.served;
  ex.record.stale_read = std::move(stale);
  if (read.target.empty())
    spdlog::warn("rule '{}' (stale-read) has no resourceVersion recorded: {} {} goes as it is", ex.plan.rule,
                 ex.request.method, path_only(ex.request.target));
}

void finish_exchange(Server::Impl& server, ExchangeCore& ex, std::uint64_t conn) {
  // kube-apiserver answers a read at a compacted resourceVersion with 410 Expired.
  if (ex.record.stale_read && ex.record.upstream_status == 410) {
    ex.record.stale_read->expired = true;
    spdlog::warn("conn {}: rule '{}' (stale-read): resourceVersion {} is compacted; kube-apiserver's 410 relayed", conn,
                 ex.plan.rule, ex.record.stale_read->served);
  }
  ex.record.duration =
      std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::steady_clock::now() - ex.started);
  if (ex.watch_filter && ex.watch_filter->holds_events()) {
    const auto counts = ex.watch_filter->counts();
    ex.record.events_delayed = counts.delayed;
    ex.record.events_withheld = counts.withheld;
  }
  if (ex.watch_filter && !ex.watch_filter->acted()) {
    spdlog::warn("conn {}: rule '{}' ({}) planned but the watch stream ended before it acted", conn, ex.plan.rule,
                 ex.record.action.value_or(""));
  }
  spdlog::debug("conn {}: {} {} -> {} ({} us, {})", conn, ex.record.method, path_only(ex.record.path), ex.record.status,
                ex.record.duration.count(), ex.record.proto);
  if (server.observer) server.observer->exchange_done(ex.record, ex.upstream_latency);
}

}  // namespace faultline::proxy
