#pragma once
// The per-request steps both protocols share: an HTTP/1.1 request (http1_session.cpp) and an HTTP/2
// stream (http2_session.cpp) are classified, matched, decided, counted and audited by these same
// functions; only carrying out the effects of a fault differs.

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "faultline/audit/record.hpp"
#include "faultline/faults/request.hpp"
#include "faultline/faults/status.hpp"
#include "faultline/proxy/effects.hpp"
#include "faultline/proxy/observer.hpp"
#include "server_impl.hpp"

namespace faultline::proxy {

// One request/response (or stream) as the fault engine and the audit see it.
struct ExchangeCore {
  faults::Request request;
  faults::Plan plan;
  Effects effects;  // of the plan's action (none when no rule fires)
  // Set by the effect filter_watch: acts on the watch stream's events; json_upstream: upstream is
  // asked for JSON (the filter needs its framing).
  std::unique_ptr<WatchFilter> watch_filter;
  bool json_upstream = false;
  audit::Record record;
  std::chrono::steady_clock::time_point started;
  std::optional<std::chrono::nanoseconds> upstream_latency;  // request sent -> response header
};

// A header the engine may match on (Authorization and Proxy-Authorization are never offered).
void add_matchable_header(std::vector<faults::Header>& out, std::string_view name, std::string_view value);

// Classifies the request, asks the engine for its plan and turns it into effects; fills the
// record's classification and, when a rule fires, its rule and action (and logs it).
void begin_exchange(Server::Impl& server, ExchangeCore& ex, std::uint64_t conn, const std::string& peer,
                    std::string_view proto, std::string_view method, std::string_view target,
                    std::vector<faults::Header> headers);

// stale-read: the audit record says which resourceVersion the client asked for and which one the
// answer is read at (finish_exchange adds whether kube-apiserver found it compacted).
void note_stale_read(ExchangeCore& ex, const effect::ReadAsOf& read);

// The exchange is over (answered, cut, or its stream ended): duration, log, observer.
void finish_exchange(Server::Impl& server, ExchangeCore& ex, std::uint64_t conn);

// What the proxy answers in the apiserver's place, as Kubernetes Status responses:
// 503 when upstream could not be reached (`failure` names the step), 502 when it sent an invalid
// response. The messages name the upstream address, never a credential.
faults::HttpResponse upstream_unreachable_response(const ServerOptions& options, const std::string& failure);
faults::HttpResponse bad_gateway_response(const ServerOptions& options, const std::string& why);
// 503 with Retry-After: 1 when the proxy's memory is past --max-memory (`resident`: bytes).
faults::HttpResponse memory_refused_response(const ServerOptions& options, std::uint64_t resident);
// The answer of a `respond` rule: `response` itself, or, when its code is not a final status (an
// interim 1xx cannot end an exchange), a 500 Status naming the rule (logged as an error).
faults::HttpResponse final_local_response(const ExchangeCore& ex, const faults::HttpResponse& response,
                                          std::uint64_t conn);

// The path part of a target, for logs (a query may carry anything).
inline std::string_view path_only(std::string_view target) { return target.substr(0, target.find('?')); }

}  // namespace faultline::proxy
