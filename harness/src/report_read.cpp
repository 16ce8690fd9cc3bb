// A run's report.json, read once for sweeps, soaks and explorations.
#include "faultline/harness/report_read.hpp"

#include <boost/json.hpp>

#include "faultline/net/rfc3339.hpp"

namespace faultline::harness {
namespace {

namespace json = boost::json;

std::string string_at(const json::object& o, std::string_view key) {
  const json::value* v = o.if_contains(key);
  return v != nullptr && v->is_string() ? std::string(v->as_string()) : std::string();
}

std::optional<double> number_at(const json::object& o, std::string_view key) {
  const json::value* v = o.if_contains(key);
  if (v == nullptr) return std::nullopt;
  if (v->is_int64()) return static_cast<double>(v->as_int64());
  if (v->is_uint64()) return static_cast<double>(v->as_uint64());
  if (v->is_double()) return v->as_double();
  return std::nullopt;
}

// A count: 0 when missing, negative or not a number.
std::int64_t count_at(const json::object& o, std::string_view key) {
  const auto n = number_at(o, key);
  return n && *n > 0 && *n < 9e18 ? static_cast<std::int64_t>(*n) : 0;
}

void read_checks(const json::object& o, RunReport& r) {
  const json::value* checks = o.if_contains("checks");
  if (checks == nullptr || !checks->is_array()) {
    if (r.malformed.empty()) r.malformed = "\"checks\" missing or not a list";
    return;
  }
  for (const auto& c : checks->as_array()) {
    if (!c.is_object()) {
      if (r.malformed.empty()) r.malformed = "\"checks\": an item is not an object";
      continue;
    }
    const auto& co = c.as_object();
    const json::value* name = co.if_contains("name");
    const json::value* status = co.if_contains("status");
    if ((name == nullptr || !name->is_string() || status == nullptr || !status->is_string()) && r.malformed.empty())
      r.malformed = "\"checks\": an item without a \"name\" or \"status\" string";
    ReportCheck check{string_at(co, "name"), string_at(co, "status"), string_at(co, "expected")};
    if (check.status == "violated")
      (check.expected == "violated" ? r.expected_violated : r.violated).push_back(check.name);
    r.checks.push_back(std::move(check));
  }
}

void read_faults(const json::object& o, RunReport& r) {
  if (const json::value* faults = o.if_contains("faults"); faults != nullptr && faults->is_array()) {
    for (const auto& f : faults->as_array()) {
      if (!f.is_object()) continue;
      const auto& fo = f.as_object();
      FaultCounter fault{string_at(fo, "rule"), count_at(fo, "matched"), count_at(fo, "fired")};
      if (fault.fired == 0) r.unfired.push_back(fault.rule);
      r.faults.push_back(std::move(fault));
    }
  }
  r.never_fired = r.error.find("never fired") != std::string::npos;
  const json::value* windows = o.if_contains("faultWindows");
  if (!r.armed || windows == nullptr || !windows->is_array()) return;
  std::optional<std::chrono::system_clock::time_point> first;
  for (const auto& w : windows->as_array()) {
    if (!w.is_object()) continue;
    const auto t = net::parse_rfc3339(string_at(w.as_object(), "first"));
    if (t && (!first || *t < *first)) first = t;
  }
  if (first) r.first_fault_seconds = std::chrono::duration<double>(*first - *r.armed).count();
}

}  // namespace

RunReport read_run_report(std::string_view report_json) {
  RunReport r;
  if (report_json.size() > max_report_bytes) {
    r.malformed = "larger than " + std::to_string(max_report_bytes) + " bytes";
    return r;
  }
  boost::system::error_code ec;
  const json::value doc = json::parse(report_json, ec);
  if (ec) {
    r.malformed = "not JSON: " + ec.message();
    return r;
  }
  if (!doc.is_object()) {
    r.malformed = "not a JSON object";
    return r;
  }
  r.object = true;
  const json::object& o = doc.as_object();
  if (const json::value* v = o.if_contains("verdict"); v == nullptr || !v->is_string()) {
    r.malformed = "\"verdict\" missing or not a string";
  } else {
    r.verdict = std::string(v->as_string());
    if (r.verdict != "pass" && r.verdict != "fail" && r.verdict != "reproduced" && r.verdict != "error")
      r.malformed = "\"verdict\": unknown verdict \"" + r.verdict + "\"";
  }
  r.error = string_at(o, "error");
  read_checks(o, r);
  r.armed = net::parse_rfc3339(string_at(o, "armed"));
  r.finished = net::parse_rfc3339(string_at(o, "finished"));
  read_faults(o, r);
  r.seconds = number_at(o, "durationSeconds");
  if (const json::value* stats = o.if_contains("stats"); stats != nullptr && stats->is_object()) {
    r.stranded = number_at(stats->as_object(), "strandedPods");
    r.phantom = number_at(stats->as_object(), "phantomAllocations");
  }
  return r;
}

}  // namespace faultline::harness
