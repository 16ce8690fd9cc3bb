#include "faultline/app/bridge.hpp"

#include <boost/json.hpp>

#include <spdlog/spdlog.h>

#include "faultline/faults/scenario.hpp"

namespace faultline::app {

void AuditingObserver::exchange_done(const audit::Record& record,
                                     std::optional<std::chrono::nanoseconds> upstream_latency) {
  metrics_.request_done(record.verb, record.resource, record.status);
  if (record.rule) metrics_.fault_fired(*record.rule, record.action.value_or(""));
  if (record.held) metrics_.request_held(record.rule.value_or(""), record.held->outcome);
  if (record.rule && (record.events_delayed || record.events_withheld))
    metrics_.watch_events_held(*record.rule, record.action.value_or(""), record.events_delayed.value_or(0),
                               record.events_withheld.value_or(0));
  if (record.rule && record.stale_read) {
    const auto& stale = *record.stale_read;
    const bool ok = record.upstream_status && *record.upstream_status / 100 == 2;
    metrics_.stale_read(*record.rule, stale.served.empty() ? "unrecorded"
                                      : stale.expired      ? "expired"
                                      : ok                 ? "served"
                                                           : "refused");
  }
  if (upstream_latency) metrics_.upstream_latency(*upstream_latency);
  audit_.append(record);
}

void count_rule_matches(faults::Engine& engine, admin::ProxyMetrics& metrics) {
  engine.set_match_listener([&metrics](std::string_view rule) { metrics.rule_matched(rule); });
}

void AdminBridge::set_scenario_text(std::string text) {
  std::lock_guard lock(mutex_);
  scenario_text_ = std::move(text);
}

std::optional<admin::ScenarioDocument> AdminBridge::scenario(admin::ScenarioFormat) {
  if (!engine_.scenario()) return std::nullopt;
  std::lock_guard lock(mutex_);
  return admin::ScenarioDocument{scenario_text_, admin::ScenarioFormat::yaml};
}

std::string unchecked_sections_note(const faults::Scenario& scenario) {
  std::string note;
  for (const auto& section : scenario.unread_sections)
    note += (note.empty() ? "; not checked here (faultline-harness reads them): " : ", ") + section;
  return note;
}

admin::ScenarioReplaceResult AdminBridge::replace_scenario(std::string_view yaml) {
  admin::ScenarioReplaceResult result;
  try {
    auto scenario = faults::load_scenario_text(yaml, "PUT /v1/scenario");
    engine_.load(scenario);
    set_scenario_text(std::string(yaml));
    if (enforce_outage_) enforce_outage_();  // a new scenario ends any outage
    result.info = {{"name", scenario->metadata.name}, {"rules", scenario->faults.size()}, {"armed", false}};
    if (!scenario->unread_sections.empty()) {
      boost::json::array unchecked;
      for (const auto& section : scenario->unread_sections) unchecked.emplace_back(section);
      result.info["unchecked"] = std::move(unchecked);
    }
    spdlog::info("scenario '{}' loaded from the admin API ({} rules, disarmed){}", scenario->metadata.name,
                 scenario->faults.size(), unchecked_sections_note(*scenario));
  } catch (const faults::ScenarioError& e) {
    result.errors = e.errors();
  }
  return result;
}

boost::json::value AdminBridge::arm() {
  auto scenario = engine_.scenario();
  if (!scenario) throw admin::AdminError(409, "no scenario loaded: nothing to arm");
  engine_.arm(clock_.now());
  spdlog::info("armed scenario '{}'", scenario->metadata.name);
  return {{"armed", true}, {"scenario", scenario->metadata.name}};
}

boost::json::value AdminBridge::disarm() {
  engine_.disarm();
  if (enforce_outage_) enforce_outage_();  // reopens the listener after a refuse outage
  spdlog::info("disarmed");
  return {{"armed", false}};
}

boost::json::value AdminBridge::outage(const admin::OutageRequest& request) {
  engine_.start_outage(request.mode, request.duration, clock_.now());
  if (enforce_outage_) enforce_outage_();
  return {{"outage", faults::actions::to_string(request.mode)}, {"durationMs", request.duration.count()}};
}

boost::json::value AdminBridge::rules() {
  boost::json::array rules;
  const auto now = clock_.now();
  for (const auto& c : engine_.counters(now)) {
    rules.push_back({{"name", c.name},
                     {"matched", c.matched},
                     {"fired", c.fired},
                     {"windowOpened", c.window_opened},
                     {"phase", faults::rule_phase_name(c.phase)}});
  }
  return {{"armed", engine_.armed()}, {"outage", engine_.outage(now).has_value()}, {"rules", std::move(rules)}};
}

admin::AuditSince AdminBridge::audit_since(std::optional<std::uint64_t> since, std::size_t limit) {
  return since ? audit_.since(*since, limit) : audit_.retained(limit);
}

}  // namespace faultline::app
