#pragma once
// An AdminBackend over the real fault model (faults::Engine, scenario loader), the audit log and
// the proxy metrics: what the proxy's backend does minus the relay hooks (outage connection
// resets, listener refusal). The admin server tests run against it so scenario validation,
// arm/disarm, outage and rule counters are the real ones.

#include "faultline/admin/admin_backend.hpp"
#include "faultline/admin/audit_log.hpp"
#include "faultline/admin/proxy_metrics.hpp"
#include "faultline/faults/clock.hpp"
#include "faultline/faults/duration.hpp"
#include "faultline/faults/engine.hpp"
#include "faultline/faults/scenario.hpp"

#include <boost/json.hpp>

#include <mutex>

namespace faultline::admin::test {

class EngineBackend : public AdminBackend {
 public:
  EngineBackend(const faults::Clock& clock, AuditLog& audit, ProxyMetrics& metrics)
      : clock_(clock), audit_(audit), metrics_(metrics) {}

  faults::Engine engine;

  std::optional<ScenarioDocument> scenario(ScenarioFormat) override {
    std::lock_guard lock(mutex_);
    if (!engine.scenario()) return std::nullopt;
    return ScenarioDocument{text_, ScenarioFormat::yaml};  // as the user wrote it
  }

  ScenarioReplaceResult replace_scenario(std::string_view yaml) override {
    std::shared_ptr<const faults::Scenario> loaded;
    try {
      loaded = faults::load_scenario_text(yaml, "scenario.yaml");
    } catch (const faults::ScenarioError& e) {
      return {e.errors(), {}};
    }
    std::lock_guard lock(mutex_);
    engine.load(loaded);
    text_ = std::string(yaml);
    return {{}, {{"name", loaded->metadata.name}, {"rules", loaded->faults.size()}}};
  }

  boost::json::value arm() override {
    engine.arm(clock_.now());
    return {{"armed", true}};
  }

  boost::json::value disarm() override {
    engine.disarm();
    return {{"armed", false}};
  }

  boost::json::value outage(const OutageRequest& request) override {
    engine.start_outage(request.mode, request.duration, clock_.now());
    return {{"outage", faults::actions::to_string(request.mode)},
            {"duration", faults::format_duration(request.duration)}};
  }

  boost::json::value rules() override {
    boost::json::array rules;
    for (const auto& c : engine.counters()) {
      rules.push_back({{"name", c.name}, {"matched", c.matched}, {"fired", c.fired}});
    }
    return {{"armed", engine.armed()}, {"rules", std::move(rules)}};
  }

  AuditSince audit_since(std::optional<std::uint64_t> since, std::size_t limit) override {
    return since ? audit_.since(*since, limit) : audit_.retained(limit);
  }

  std::string metrics_text() override { return metrics_.render(); }

  std::string health_problem() override {
    return audit_.write_problem();
  }

 private:
  const faults::Clock& clock_;
  AuditLog& audit_;
  ProxyMetrics& metrics_;
  std::mutex mutex_;
  std::string text_;
};

}  // namespace faultline::admin::test
