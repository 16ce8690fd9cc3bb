#pragma once
// What the admin HTTP server needs from the running proxy. The proxy implements this; the server
// only translates HTTP to these calls and their results back to HTTP. Every call runs on the
// admin io_context's threads, concurrently with the relay, so implementations must be
// thread-safe with respect to the relay (e.g. swap scenario snapshots atomically).

#include "faultline/admin/audit_log.hpp"
#include "faultline/faults/actions/outage.hpp"
#include "faultline/faults/duration.hpp"

#include <boost/json/object.hpp>
#include <boost/json/value.hpp>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace faultline::admin {

using OutageMode = faults::actions::Outage::Mode;
// "reset", "refuse", "blackhole" (the scenario file's spelling); nullopt for anything else.
std::optional<OutageMode> parse_outage_mode(std::string_view text);

// POST /v1/outage, ready for faults::Engine::start_outage(mode, duration, now).
struct OutageRequest {
  faults::Duration duration{0};  // > 0
  OutageMode mode = OutageMode::reset;
};

enum class ScenarioFormat { yaml, json };

struct ScenarioDocument {
  std::string body;
  ScenarioFormat format = ScenarioFormat::yaml;  // what `body` is, sets the Content-Type
};

struct ScenarioReplaceResult {
  // "file:line:col: message" per problem. Empty: the scenario was accepted and is now running.
  // Non-empty: nothing changed, the previous scenario keeps running.
  std::vector<std::string> errors;
  // Optional details of the accepted scenario for the 200 answer (e.g. name, rule count).
  boost::json::object info;
};

// Throw from a backend call to answer with a specific status and message, e.g.
// AdminError(409, "no scenario loaded: nothing to arm"). Other exceptions become 500.
class AdminError : public std::runtime_error {
 public:
  AdminError(int status, const std::string& message) : std::runtime_error(message), status_(status) {}
  int status() const noexcept { return status_; }

 private:
  int status_;
};

class AdminBackend {
 public:
  virtual ~AdminBackend() = default;

  // GET /v1/scenario. `preferred` follows ?format= or the Accept header. Returning YAML is
  // always fine: the server converts it when JSON was asked for. nullopt: no scenario is
  // loaded (answered 404).
  virtual std::optional<ScenarioDocument> scenario(ScenarioFormat preferred) = 0;
  // PUT /v1/scenario with the YAML (or JSON) body: validate, and swap the snapshot only if valid.
  virtual ScenarioReplaceResult replace_scenario(std::string_view yaml) = 0;
  // POST /v1/arm: set the schedule's time zero to now. The returned JSON is the answer body.
  virtual boost::json::value arm() = 0;
  // POST /v1/disarm: stop firing time-based faults. The returned JSON is the answer body.
  virtual boost::json::value disarm() = 0;
  // POST /v1/outage: an ad-hoc outage starting now. The returned JSON is the answer body.
  virtual boost::json::value outage(const OutageRequest& request) = 0;
  // GET /v1/rules: per-rule counters, e.g. {"rules":[{"name":..,"matched":..,"fired":..}]}.
  virtual boost::json::value rules() = 0;
  // GET /v1/audit: records with seq > *since (all retained ones when since is nullopt), at
  // most `limit`. Typically `since ? log.since(*since, limit) : log.retained(limit)`.
  virtual AuditSince audit_since(std::optional<std::uint64_t> since, std::size_t limit) = 0;
  // GET /metrics: Prometheus text, typically ProxyMetrics::render().
  virtual std::string metrics_text() = 0;
  // GET /healthz: an empty string means healthy; otherwise the reason (answered 503).
  virtual std::string health_problem() { return {}; }
  // Admin connections (for metrics; from any admin thread): one opened, one closed, one refused
  // (closed right after accept: AdminServerOptions::max_connections were open).
  virtual void admin_connection_opened() {}
  virtual void admin_connection_closed() {}
  virtual void admin_connection_refused() {}
};

}  // namespace faultline::admin
