// `faultline-harness explore report`: exploration directories (shards) merged into explore.json,
// junit.xml and a self-contained explore.html; and the reading of a reference run's audit log.
#include "faultline/harness/explore_report.hpp"

#include <fmt/format.h>
#include <boost/json.hpp>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <stdexcept>
#include <tuple>

#include "faultline/faults/file.hpp"
#include "faultline/harness/report_read.hpp"
#include "faultline/harness/sweep.hpp"
#include "faultline/net/certs.hpp"
#include "faultline/version.hpp"
#include "markup.hpp"

namespace faultline::harness::explore {
namespace {

namespace json = boost::json;
namespace fs = std::filesystem;
using detail::escape_markup;
using detail::num;

constexpr std::size_t kMaxPlanBytes = 16 * 1024 * 1024;
constexpr std::size_t kMaxDirs = 1000;

std::string string_at(const json::object& o, std::string_view key) {
  const json::value* v = o.if_contains(key);
  return v != nullptr && v->is_string() ? std::string(v->as_string()) : std::string();
}

std::uint64_t uint_at(const json::object& o, std::string_view key, std::uint64_t fallback) {
  const json::value* v = o.if_contains(key);
  if (v == nullptr || !v->is_number()) return fallback;
  return v->to_number<std::uint64_t>();
}

std::vector<std::string> strings_at(const json::object& o, std::string_view key) {
  std::vector<std::string> out;
  const json::value* v = o.if_contains(key);
  if (v == nullptr || !v->is_array()) return out;
  for (const auto& s : v->as_array())
    if (s.is_string()) out.emplace_back(s.as_string());
  return out;
}

bool is_write(const audit::Record& r) {
  return r.verb == "create" || r.verb == "update" || r.verb == "patch" || r.verb == "delete" ||
         r.verb == "deletecollection";
}

std::string join(const std::vector<std::string>& v, std::string_view sep = ", ") {
  std::string out;
  for (const auto& s : v) out += (out.empty() ? "" : std::string(sep)) + s;
  return out;
}

json::value opt_json(const std::optional<double>& v) { return v ? json::value(*v) : json::value(nullptr); }

std::string rate_text(const PlanResult& p) {
  if (!p.rate) return "-";
  return fmt::format("{:.0f}% ({}/{})", *p.rate * 100, p.found, p.counted);
}

const char* verdict_colour(std::string_view v) {
  if (v == "found") return "#b22222";
  if (v == "pass") return "#2a7d2a";
  if (v == "error") return "#d2691e";
  return "#888888";  // inconclusive, missing
}

std::map<std::string, std::uint64_t> verdict_counts(const Exploration& e) {
  std::map<std::string, std::uint64_t> counts{
      {"found", 0}, {"pass", 0}, {"inconclusive", 0}, {"error", 0}, {"missing", 0}};
  for (const auto& p : e.plans) ++counts[p.verdict];
  return counts;
}

// A plan's first fault on the reference timeline: the first run that injected one.
std::optional<double> injection_seconds(const Exploration& e, const PlanResult& p) {
  if (!e.reference_armed_offset) return std::nullopt;
  for (const auto& r : p.runs)
    if (r.first_fault) return *e.reference_armed_offset + *r.first_fault;
  return std::nullopt;
}

// Writes (top) and watches (bottom) per time bucket of the reference run, each plan's first fault
// as a tick coloured by its verdict.
std::string timeline_svg(const Exploration& e) {
  double end = 1;
  for (const auto& ev : e.reference) end = std::max(end, ev.seconds);
  for (const auto& p : e.plans)
    if (auto s = injection_seconds(e, p)) end = std::max(end, *s);
  // At most 200 bars, none shorter than 0.1 s.
  const std::size_t buckets = std::clamp<std::size_t>(static_cast<std::size_t>(std::ceil(end * 10)), 1, 200);
  const double bucket_seconds = end / static_cast<double>(buckets);
  std::vector<std::uint64_t> writes(buckets, 0), watches(buckets, 0);
  for (const auto& ev : e.reference) {
    auto b = std::min(buckets - 1, static_cast<std::size_t>(ev.seconds / bucket_seconds));
    ++(ev.watch ? watches : writes)[b];
  }
  const std::uint64_t max_writes = std::max<std::uint64_t>(1, *std::max_element(writes.begin(), writes.end()));
  const std::uint64_t max_watches = std::max<std::uint64_t>(1, *std::max_element(watches.begin(), watches.end()));
  const double left = 130, right = 20, width = 1000, lane = 70, marks = 40;
  const double top_writes = 20, top_watches = top_writes + lane + 10, top_marks = top_watches + lane + 10;
  const double axis_y = top_marks + marks + 4, height = axis_y + 30;
  const double plot = width - left - right;
  auto x = [&](double s) { return left + plot * s / end; };
  std::ostringstream svg;
  svg << "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" << num(width) << "\" height=\"" << num(height)
      << "\" viewBox=\"0 0 " << num(width) << " " << num(height)
      << "\" role=\"img\" aria-label=\"the reference run's writes and watches, and where each plan injected its "
         "fault\">\n";
  const double bw = plot / static_cast<double>(buckets);
  auto bars = [&](const std::vector<std::uint64_t>& counts, std::uint64_t max, double top, const char* colour,
                  const char* label) {
    svg << "<text x=\"4\" y=\"" << num(top + lane / 2) << "\">" << label << "</text>\n"
        << "<text x=\"4\" y=\"" << num(top + lane / 2 + 16) << "\" class=\"sub\">max " << max << " per "
        << fmt::format("{:.3g}", bucket_seconds) << " s</text>\n"
        << "<line x1=\"" << num(left) << "\" x2=\"" << num(width - right) << "\" y1=\"" << num(top + lane) << "\" y2=\""
        << num(top + lane) << "\" stroke=\"#ccc\"/>\n";
    for (std::size_t b = 0; b < counts.size(); ++b) {
      if (counts[b] == 0) continue;
      const double h = lane * static_cast<double>(counts[b]) / static_cast<double>(max);
      svg << "<rect x=\"" << num(left + bw * static_cast<double>(b)) << "\" y=\"" << num(top + lane - h)
          << "\" width=\"" << num(std::max(bw - 0.5, 0.5)) << "\" height=\"" << num(h) << "\" fill=\"" << colour
          << "\"><title>" << counts[b] << " at " << fmt::format("{:.3g}", bucket_seconds * static_cast<double>(b))
          << " s</title></rect>\n";
    }
  };
  bars(writes, max_writes, top_writes, "#4a6fa5", "writes");
  bars(watches, max_watches, top_watches, "#8e6c8a", "watches");
  svg << "<text x=\"4\" y=\"" << num(top_marks + marks / 2 + 4) << "\">faults</text>\n";
  for (const auto& p : e.plans) {
    auto s = injection_seconds(e, p);
    if (!s) continue;
    svg << "<line x1=\"" << num(x(*s)) << "\" x2=\"" << num(x(*s)) << "\" y1=\"" << num(top_marks) << "\" y2=\""
        << num(top_marks + marks) << "\" stroke=\"" << verdict_colour(p.verdict) << "\" stroke-width=\"2\"><title>"
        << escape_markup(p.id + ": " + p.verdict + " (" + p.site + ")") << "</title></line>\n";
  }
  for (int t = 0; t <= 5; ++t) {
    const double s = end * t / 5;
    svg << "<text x=\"" << num(x(s)) << "\" y=\"" << num(axis_y + 14) << "\" text-anchor=\"middle\">"
        << fmt::format("{:.3g} s", s) << "</text>\n";
  }
  svg << "</svg>\n";
  return svg.str();
}

}  // namespace

std::vector<audit::Record> read_audit_file(const fs::path& file, std::size_t max_records) {
  std::error_code ec;
  if (!fs::is_regular_file(file, ec)) throw std::runtime_error(file.string() + ": not a regular file");
  std::ifstream in(file, std::ios::binary);
  if (!in) throw std::runtime_error(file.string() + ": cannot be read");
  std::vector<audit::Record> out;
  std::string line;
  std::uint64_t number = 0;
  while (std::getline(in, line)) {
    ++number;
    if (line.size() > max_audit_line_bytes)
      throw std::runtime_error(fmt::format("{}:{}: a line over {} bytes", file.string(), number, max_audit_line_bytes));
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    if (out.size() >= max_records)
      throw std::runtime_error(fmt::format("{}:{}: more than {} audit records", file.string(), number, max_records));
    boost::system::error_code jec;
    json::value v = json::parse(line, jec);
    if (jec) throw std::runtime_error(fmt::format("{}:{}: not JSON: {}", file.string(), number, jec.message()));
    try {
      out.push_back(audit::from_json(v));
    } catch (const std::exception& e) {
      throw std::runtime_error(fmt::format("{}:{}: {}", file.string(), number, e.what()));
    }
  }
  return out;
}

PlanRun classify_run(std::string_view report_json, std::uint64_t run) {
  const RunReport report = read_run_report(report_json);
  PlanRun r;
  r.run = run;
  if (!report.object) {
    r.verdict = r.outcome = "error";
    r.error = "report.json is not a JSON object";
    return r;
  }
  r.verdict = report.verdict;
  r.error = report.error;
  r.violated = report.violated;
  r.fired = report.all_fired();
  r.first_fault = report.first_fault_seconds;
  if (r.verdict == "fail" || r.verdict == "reproduced") {
    r.outcome = r.violated.empty() ? "error" : "found";  // fail without a violation: checks without data
    if (r.violated.empty() && r.error.empty()) r.error = "checks without data";
  } else if (r.verdict == "pass") {
    r.outcome = "pass";
  } else if (report.never_fired) {
    r.outcome = "inconclusive";
  } else {
    if (r.verdict.empty()) r.verdict = "error";
    r.outcome = "error";
  }
  return r;
}

std::string plan_verdict(const std::vector<PlanRun>& runs) {
  auto any = [&](std::string_view outcome) {
    return std::any_of(runs.begin(), runs.end(), [&](const PlanRun& r) { return r.outcome == outcome; });
  };
  for (const char* v : {"found", "pass", "inconclusive", "error"})
    if (any(v)) return v;
  return "missing";
}

std::vector<TimelineEvent> audit_timeline(const std::vector<audit::Record>& records) {
  std::vector<TimelineEvent> out;
  if (records.empty()) return out;
  auto first = records.front().ts;
  for (const auto& r : records) first = std::min(first, r.ts);
  for (const auto& r : records) {
    const bool watch = r.watch || r.verb == "watch";
    if (!watch && !is_write(r)) continue;
    std::string what = r.verb + " " + r.resource + (r.subresource.empty() ? "" : "/" + r.subresource);
    out.push_back({std::chrono::duration<double>(r.ts - first).count(), watch, std::move(what)});
  }
  std::stable_sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.seconds < b.seconds; });
  return out;
}

Exploration read_exploration(const std::vector<fs::path>& dirs) {
  if (dirs.empty()) throw std::runtime_error("no exploration directory");
  if (dirs.size() > kMaxDirs) throw std::runtime_error(fmt::format("more than {} directories", kMaxDirs));
  Exploration e;
  std::map<std::string, std::string> seen;  // plan id -> directory
  for (const auto& dir : dirs) {
    const fs::path plan_file = dir / "plan.json";
    const std::string text = faults::read_regular_file(plan_file, kMaxPlanBytes, "an exploration plan");
    boost::system::error_code ec;
    json::value doc = json::parse(text, ec);
    if (ec || !doc.is_object()) throw std::runtime_error(plan_file.string() + ": not a JSON object");
    const json::object& o = doc.as_object();
    const json::value* explore = o.if_contains("explore");
    if (explore == nullptr || !explore->is_object())
      throw std::runtime_error(plan_file.string() + ": not an exploration's plan (no \"explore\")");
    const std::string name = string_at(o, "name");
    if (e.dirs.empty()) {
      e.name = name;
      e.scenario = string_at(o, "scenario");
      e.scheduler = string_at(o, "scheduler");
      e.plans_total = uint_at(explore->as_object(), "plans", 0);
    } else if (name != e.name || uint_at(explore->as_object(), "plans", 0) != e.plans_total) {
      throw std::runtime_error(plan_file.string() + ": a shard of another exploration ('" + name + "', not '" + e.name +
                               "')");
    }
    e.dirs.push_back(dir.string());
    e.shards.push_back(string_at(explore->as_object(), "shard"));
    const std::uint64_t runs = uint_at(o, "runs", 1);
    const json::value* cells = o.if_contains("cells");
    if (cells == nullptr || !cells->is_array()) throw std::runtime_error(plan_file.string() + ": no cells");
    for (const auto& c : cells->as_array()) {
      if (!c.is_object()) throw std::runtime_error(plan_file.string() + ": a cell is not an object");
      const json::object& co = c.as_object();
      PlanResult p;
      p.id = string_at(co, "id");
      if (p.id.empty() || p.id.find('/') != std::string::npos || p.id.starts_with("."))
        throw std::runtime_error(plan_file.string() + ": a cell id '" + p.id + "' that is not a plain name");
      if (auto [it, fresh] = seen.emplace(p.id, dir.string()); !fresh)
        throw std::runtime_error("plan " + p.id + " is in both " + it->second + " and " + dir.string());
      p.index = uint_at(co, "index", 0);
      p.kind = string_at(co, "kind");
      p.site = string_at(co, "site");
      p.source = string_at(co, "source");
      p.faults = strings_at(co, "faults");
      p.shard = dir.string();
      const std::string cell_dir = co.contains("dir") ? string_at(co, "dir") : "cells/" + p.id;
      if (cell_dir.starts_with('/') || ("/" + cell_dir + "/").find("/../") != std::string::npos)
        throw std::runtime_error(plan_file.string() + ": cell " + p.id + ": dir outside the exploration");
      p.scenario_file = (dir / cell_dir / "scenario.yaml").string();
      const std::uint64_t n = std::min<std::uint64_t>(uint_at(co, "runs", runs), 100);
      std::set<std::string> violated;
      for (std::uint64_t r = 1; r <= n; ++r) {
        const fs::path report = dir / cell_dir / fmt::format("run-{:02d}", r) / "report.json";
        std::error_code fec;
        PlanRun run;
        if (fs::exists(report, fec)) {
          run = classify_run(faults::read_regular_file(report, max_report_bytes, "a report"), r);
        } else {
          run.run = r;
          run.verdict = run.outcome = "missing";
        }
        if (run.fired) p.fired = true;
        if (run.outcome == "found" || run.outcome == "pass") ++p.counted;
        if (run.outcome == "found") ++p.found;
        violated.insert(run.violated.begin(), run.violated.end());
        p.runs.push_back(std::move(run));
      }
      p.violated.assign(violated.begin(), violated.end());
      p.verdict = plan_verdict(p.runs);
      if (p.counted > 0) p.rate = static_cast<double>(p.found) / static_cast<double>(p.counted);
      std::error_code mec;
      if (const fs::path m = dir / "minimize" / p.id / "minimized.yaml"; fs::exists(m, mec)) p.minimized = m.string();
      e.plans.push_back(std::move(p));
    }
    // The reference run: its audit log (the timeline) and when it armed the proxy.
    const fs::path ref = dir / "reference" / "run-01";
    std::error_code rec;
    if (e.reference_dir.empty() && fs::exists(ref / "logs" / "proxy-audit.jsonl", rec)) {
      const auto records = read_audit_file(ref / "logs" / "proxy-audit.jsonl");
      e.reference = audit_timeline(records);
      e.reference_dir = ref.string();
      if (!records.empty() && fs::exists(ref / "report.json", rec)) {
        auto first = records.front().ts;
        for (const auto& r : records) first = std::min(first, r.ts);
        const RunReport report =
            read_run_report(faults::read_regular_file(ref / "report.json", max_report_bytes, "a report"));
        if (report.armed) e.reference_armed_offset = std::chrono::duration<double>(*report.armed - first).count();
      }
    }
  }
  if (e.reference_dir.empty())
    e.reference_note = "no reference run's audit log (reference/run-01/logs/proxy-audit.jsonl)";
  std::sort(e.plans.begin(), e.plans.end(),
            [](const PlanResult& a, const PlanResult& b) { return std::tie(a.index, a.id) < std::tie(b.index, b.id); });
  return e;
}

std::vector<Finding> findings(const Exploration& e) {
  // The signature is the first violating run's: more runs do not move a plan to another group.
  std::map<std::vector<std::string>, std::vector<const PlanResult*>> groups;
  for (const auto& p : e.plans) {
    const auto run = std::find_if(p.runs.begin(), p.runs.end(), [](const PlanRun& r) { return r.outcome == "found"; });
    if (run == p.runs.end()) continue;
    std::vector<std::string> signature = run->violated;
    std::sort(signature.begin(), signature.end());
    groups[signature].push_back(&p);
  }
  auto smaller = [](const PlanResult* a, const PlanResult* b) {
    return std::make_tuple(a->faults.size(), a->index, a->id) < std::make_tuple(b->faults.size(), b->index, b->id);
  };
  std::vector<std::pair<std::vector<std::string>, std::vector<const PlanResult*>>> ordered;
  for (auto& [signature, plans] : groups) {
    std::sort(plans.begin(), plans.end(), smaller);
    ordered.emplace_back(signature, plans);
  }
  std::sort(ordered.begin(), ordered.end(), [&](const auto& a, const auto& b) {
    if (a.second.size() != b.second.size()) return a.second.size() < b.second.size();
    return smaller(a.second.front(), b.second.front());
  });
  std::vector<Finding> out;
  for (const auto& [signature, plans] : ordered) out.push_back({plans.front()->id, signature, true});
  for (const auto& [signature, plans] : ordered)
    for (std::size_t i = 1; i < plans.size(); ++i) out.push_back({plans[i]->id, signature, false});
  return out;
}

std::string render_explore_json(const Exploration& e) {
  json::array plans;
  for (const auto& p : e.plans) {
    json::array runs;
    for (const auto& r : p.runs)
      runs.push_back(json::object{{"run", r.run},
                                  {"verdict", r.verdict},
                                  {"outcome", r.outcome},
                                  {"violated", json::value_from(r.violated)},
                                  {"fired", r.fired},
                                  {"firstFaultSeconds", opt_json(r.first_fault)},
                                  {"error", r.error.empty() ? json::value(nullptr) : json::value(r.error)}});
    const Interval w = wilson_interval(p.found, p.counted);
    plans.push_back(json::object{{"id", p.id},
                                 {"index", p.index},
                                 {"kind", p.kind},
                                 {"site", p.site},
                                 {"source", p.source},
                                 {"faults", json::value_from(p.faults)},
                                 {"shard", p.shard},
                                 {"scenario", p.scenario_file},
                                 {"verdict", p.verdict},
                                 {"fired", p.fired},
                                 {"found", p.found},
                                 {"counted", p.counted},
                                 {"rate", opt_json(p.rate)},
                                 {"wilson95", json::array{w.low, w.high}},
                                 {"violated", json::value_from(p.violated)},
                                 {"minimized", p.minimized.empty() ? json::value(nullptr) : json::value(p.minimized)},
                                 {"runs", std::move(runs)}});
  }
  json::object counts;
  for (const auto& [v, n] : verdict_counts(e)) counts[v] = n;
  std::uint64_t writes = 0, watches = 0;
  for (const auto& ev : e.reference) ++(ev.watch ? watches : writes);
  json::object doc{
      {"faultline", json::object{{"version", faultline::version()}, {"commit", faultline::git_commit()}}},
      {"name", e.name},
      {"scenario", e.scenario},
      {"scheduler", e.scheduler},
      {"dirs", json::value_from(e.dirs)},
      {"shards", json::value_from(e.shards)},
      {"plansTotal", e.plans_total},
      {"plansRead", e.plans.size()},
      {"verdicts", std::move(counts)},
      {"reference", json::object{{"dir", e.reference_dir.empty() ? json::value(nullptr) : json::value(e.reference_dir)},
                                 {"writes", writes},
                                 {"watches", watches},
                                 {"note", e.reference_note}}},
      {"plans", std::move(plans)}};
  return json::serialize(doc) + "\n";
}

std::string render_explore_junit(const Exploration& e) {
  const auto counts = verdict_counts(e);
  std::ostringstream x;
  x << "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuites>\n<testsuite name=\""
    << escape_markup("faultline explore " + e.name) << "\" tests=\"" << e.plans.size() << "\" failures=\""
    << counts.at("found") << "\" errors=\"" << counts.at("error") << "\" skipped=\""
    << counts.at("inconclusive") + counts.at("missing")
    << "\">\n<properties><property name=\"faultline.version\" value=\"" << escape_markup(faultline::version())
    << "\"/><property name=\"faultline.commit\" value=\"" << escape_markup(faultline::git_commit())
    << "\"/><property name=\"scheduler\" value=\"" << escape_markup(e.scheduler) << "\"/></properties>\n";
  for (const auto& p : e.plans) {
    x << "<testcase name=\"" << escape_markup(p.id) << "\" classname=\"" << escape_markup("explore." + p.kind) << "\">";
    const std::string detail = p.site + " (" + p.source + "); scenario " + p.scenario_file;
    if (p.verdict == "found") {
      x << "<failure message=\"" << escape_markup("violated " + join(p.violated) + " in " + rate_text(p)) << "\">"
        << escape_markup(detail + (p.minimized.empty() ? "" : "; minimized: " + p.minimized)) << "</failure>";
    } else if (p.verdict == "inconclusive") {
      x << "<skipped message=\"inconclusive: its faults never fired\"/>";
    } else if (p.verdict == "missing") {
      x << "<skipped message=\"not run\"/>";
    } else if (p.verdict == "error") {
      std::string why;
      for (const auto& r : p.runs)
        if (r.outcome == "error" && why.empty()) why = r.error;
      x << "<error message=\"" << escape_markup(why.empty() ? "the runs failed" : why) << "\">" << escape_markup(detail)
        << "</error>";
    }
    x << "</testcase>\n";
  }
  x << "</testsuite>\n</testsuites>\n";
  return x.str();
}

std::string render_explore_html(const Exploration& e) {
  const auto counts = verdict_counts(e);
  const bool found = counts.at("found") > 0;
  std::ostringstream h;
  h << "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
    << "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'\">\n"
    << "<title>faultline explore: " << escape_markup(e.name) << "</title>\n<style>\n"
    << "body{font-family:system-ui,sans-serif;margin:1.2em 2em;max-width:1100px;color:#222}"
       "h1{font-size:1.1em;font-weight:normal;color:#555;margin:0 0 .6em}"
       "table{border-collapse:collapse;margin:1em 0;display:block;max-width:100%;overflow-x:auto}"
       "td,th{border:1px solid #ccc;padding:4px 8px;text-align:left;vertical-align:top}th{background:#f4f4f4}"
       "svg{max-width:100%;height:auto}svg text{font-size:12px;font-family:system-ui,sans-serif}"
       "svg text.sub{fill:#555}.hero{padding:.8em 1em;border-radius:8px;background:#f4f4f4;border-left:10px solid "
       "#888}.hero.yes{border-color:#b22222}.hero.no{border-color:#2a7d2a}.verdict{font-size:2.2em;font-weight:bold}"
       ".meta{color:#555;margin-top:.2em}td.found{color:#b22222;font-weight:bold}td.pass{color:#2a7d2a}"
       "td.inconclusive,td.missing{color:#777}td.error{color:#d2691e}code,pre{background:#f4f4f4;padding:2px 4px;"
       "overflow-wrap:anywhere;white-space:pre-wrap}.key span{display:inline-block;width:12px;height:12px;margin:0 4px "
       "0 12px;vertical-align:middle}footer{color:#777;margin-top:2em}\n</style>\n</head>\n<body>\n";
  h << "<h1>faultline explore</h1>\n<header class=\"hero " << (found ? "yes" : "no")
    << "\"><div class=\"verdict\" id=\"verdict\">" << counts.at("found") << " of " << e.plans.size()
    << " plans violated an invariant</div><div class=\"meta\"><b>" << escape_markup(e.name)
    << "</b>: " << escape_markup(e.scenario) << " on " << escape_markup(e.scheduler) << "; " << counts.at("pass")
    << " passed, " << counts.at("inconclusive") << " inconclusive (faults never fired), " << counts.at("error")
    << " error, " << counts.at("missing") << " not run; " << e.plans_total << " plans generated, " << e.dirs.size()
    << " director" << (e.dirs.size() == 1 ? "y" : "ies") << "</div></header>\n";
  h << "<h2>The reference run</h2>\n";
  if (!e.reference_dir.empty()) {
    h << "<p>The system's writes and watches in the reference run (" << escape_markup(e.reference_dir)
      << "), and where each plan's first fault fired in its first run, coloured by the plan's verdict:</p>\n"
      << timeline_svg(e) << "<p class=\"key\">";
    for (const char* v : {"found", "pass", "inconclusive", "error"})
      h << "<span style=\"background:" << verdict_colour(v) << "\"></span>" << v;
    h << "</p>\n";
  } else {
    h << "<p>" << escape_markup(e.reference_note) << "</p>\n";
  }
  h << "<h2>Plans</h2>\n<table id=\"plans\">\n<tr><th>plan</th><th>kind</th><th>source</th><th>site</th><th>fired</th>"
       "<th>verdict</th><th>rate</th><th>violated</th></tr>\n";
  for (const auto& p : e.plans) {
    h << "<tr><td>" << escape_markup(p.id) << "</td><td>" << escape_markup(p.kind) << "</td><td>"
      << escape_markup(p.source) << "</td><td>" << escape_markup(p.site) << "</td><td>" << (p.fired ? "yes" : "no")
      << "</td><td class=\"" << escape_markup(p.verdict) << "\">" << escape_markup(p.verdict) << "</td><td>"
      << escape_markup(rate_text(p)) << "</td><td>" << escape_markup(join(p.violated)) << "</td></tr>\n";
  }
  h << "</table>\n<p>verdict: <b>found</b> a run violated an invariant; <b>pass</b> the faults fired and every "
       "invariant held; <b>inconclusive</b> the faults never fired (the run did not test the plan); <b>error</b> the "
       "run failed. rate: runs that violated an invariant, of the runs that ended found or pass.</p>\n";
  h << "<h2>Minimized scenarios</h2>\n";
  bool any = false;
  for (const auto& p : e.plans) {
    if (p.minimized.empty()) continue;
    any = true;
    h << "<h3>" << escape_markup(p.id) << "</h3>\n<p>violates " << escape_markup(join(p.violated)) << "; "
      << escape_markup(p.minimized) << "</p>\n<pre>make chaos SCENARIO=" << escape_markup(p.minimized)
      << " SYSTEM=" << escape_markup(e.scheduler) << "</pre>\n";
  }
  if (!any) h << "<p>none" << (found ? " yet" : "") << "</p>\n";
  h << "<footer>written by faultline-harness " << escape_markup(faultline::version()) << " (commit "
    << escape_markup(faultline::git_commit()) << ")</footer>\n</body>\n</html>\n";
  return h.str();
}

void write_explore_reports(const Exploration& e, const fs::path& dir) {
  fs::create_directories(dir);
  net::write_file(dir / "explore.json", render_explore_json(e));
  net::write_file(dir / "junit.xml", render_explore_junit(e));
  net::write_file(dir / "explore.html", render_explore_html(e));
}

}  // namespace faultline::harness::explore
