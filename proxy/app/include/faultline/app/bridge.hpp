#pragma once
// Glue between the relay (faultline::proxy) and the admin side (faultline::proxy_admin): the audit
// log and metrics observe the relay; the admin API drives the engine and, through a callback, the
// relay server. Only the relay's Observer interface is used here, so this glue (and what tests or
// fuzzes it) links without the relay.

#include <functional>
#include <memory>
#include <mutex>
#include <string>

#include "faultline/admin/admin_backend.hpp"
#include "faultline/admin/audit_log.hpp"
#include "faultline/admin/proxy_metrics.hpp"
#include "faultline/faults/engine.hpp"
#include "faultline/proxy/observer.hpp"

namespace faultline::app {

// Every finished request becomes one audit record and a few metric updates.
class AuditingObserver final : public proxy::Observer {
 public:
  AuditingObserver(admin::AuditLog& audit, admin::ProxyMetrics& metrics) : audit_(audit), metrics_(metrics) {}
  void connection_opened() override { metrics_.open_connections.inc(); }
  void connection_closed() override { metrics_.open_connections.dec(); }
  void connection_rejected() override { metrics_.connections_rejected.inc(); }
  void memory_refused(std::string_view reason) override { metrics_.memory_refused(reason); }
  void memory_sampled(std::uint64_t bytes) override { metrics_.memory_bytes.set(static_cast<std::int64_t>(bytes)); }
  void watch_opened() override { metrics_.open_watches.inc(); }
  void watch_closed() override { metrics_.open_watches.dec(); }
  void exchange_done(const audit::Record& record, std::optional<std::chrono::nanoseconds> upstream_latency) override;

 private:
  admin::AuditLog& audit_;
  admin::ProxyMetrics& metrics_;
};

// faultline_rule_matched_total: every time the engine counts a match for a rule (the rule's match
// selected a request while its window was open, whether or not every/limit/probability let it
// fire), the metric of that rule goes up. Fired faults are counted by AuditingObserver.
void count_rule_matches(faults::Engine& engine, admin::ProxyMetrics& metrics);

// What the proxy tells about the sections of a loaded scenario it did not check (those only
// faultline-harness reads): "" when there are none, else "; not checked here (faultline-harness
// reads them): workload, checks", for the log line that reports the load.
std::string unchecked_sections_note(const faults::Scenario& scenario);

// The running scenario as the admin API sees it: the snapshot in the engine plus its YAML text.
class AdminBridge final : public admin::AdminBackend {
 public:
  AdminBridge(faults::Engine& engine, const faults::Clock& clock, admin::AuditLog& audit, admin::ProxyMetrics& metrics)
      : engine_(engine), clock_(clock), audit_(audit), metrics_(metrics) {}

  // Applies the engine's outage to the relay (faultline-proxy passes proxy::Server::enforce_outage),
  // called after a scenario swap, a disarm and an outage. The server is created after the bridge
  // (it needs the observer); set it before serving.
  void set_outage_enforcer(std::function<void()> enforce_outage) { enforce_outage_ = std::move(enforce_outage); }
  void set_scenario_text(std::string text);

  std::optional<admin::ScenarioDocument> scenario(admin::ScenarioFormat preferred) override;
  admin::ScenarioReplaceResult replace_scenario(std::string_view yaml) override;
  boost::json::value arm() override;
  boost::json::value disarm() override;
  boost::json::value outage(const admin::OutageRequest& request) override;
  boost::json::value rules() override;
  admin::AuditSince audit_since(std::optional<std::uint64_t> since, std::size_t limit) override;
  std::string metrics_text() override { return metrics_.render(); }
  void admin_connection_opened() override { metrics_.admin_connections.inc(); }
  void admin_connection_closed() override { metrics_.admin_connections.dec(); }
  void admin_connection_refused() override { metrics_.admin_connections_rejected.inc(); }
  // Unhealthy while audit records do not reach the --audit-log file.
  std::string health_problem() override { return audit_.write_problem(); }

 private:
  faults::Engine& engine_;
  const faults::Clock& clock_;
  admin::AuditLog& audit_;
  admin::ProxyMetrics& metrics_;
  std::function<void()> enforce_outage_;
  std::mutex mutex_;
  std::string scenario_text_;
};

}  // namespace faultline::app
