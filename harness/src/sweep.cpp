// A matrix sweep's plan and results: plan.json, per cell rates and medians, soak.json, soak.tsv,
// junit.xml, soak.html and soak.svg.
#include "faultline/harness/sweep.hpp"

#include <fmt/format.h>
#include <boost/json.hpp>

#include <algorithm>
#include <cmath>
#include <sstream>

#include "faultline/faults/file.hpp"
#include "faultline/net/certs.hpp"
#include "faultline/net/rfc3339.hpp"
#include "markup.hpp"

namespace faultline::harness {
namespace {

namespace json = boost::json;
namespace fs = std::filesystem;
using detail::escape_markup;
using detail::num;
using detail::row;

constexpr std::size_t kMaxPlanBytes = 16 * 1024 * 1024;
constexpr std::size_t kMaxReportBytes = 64 * 1024 * 1024;
constexpr std::size_t kMaxStackNoteBytes = 4096;

std::optional<double> number_at(const json::object& o, std::string_view key) {
  const json::value* v = o.if_contains(key);
  if (v == nullptr) return std::nullopt;
  if (v->is_int64()) return static_cast<double>(v->as_int64());
  if (v->is_uint64()) return static_cast<double>(v->as_uint64());
  if (v->is_double()) return v->as_double();
  return std::nullopt;
}

std::string string_at(const json::object& o, std::string_view key) {
  const json::value* v = o.if_contains(key);
  return v != nullptr && v->is_string() ? std::string(v->as_string()) : std::string();
}

std::string opt(const std::optional<double>& v, const char* format = "{:g}") {
  return v ? fmt::format(fmt::runtime(format), *v) : std::string("-");
}

std::string percent(const std::optional<double>& v) { return v ? fmt::format("{:.0f}%", *v * 100) : "-"; }

const CellSummary* find_cell(const SweepSummary& s, const std::vector<std::string>& values) {
  for (const auto& c : s.cells) {
    bool match = c.cell->values.size() >= values.size();
    for (std::size_t i = 0; match && i < values.size(); ++i) match = c.cell->values[i].second == values[i];
    if (match) return &c;
  }
  return nullptr;
}

// White (0) to dark red (1).
std::string heat_colour(double rate) {
  auto lerp = [rate](int a, int b) { return static_cast<int>(std::lround(a + (b - a) * rate)); };
  return fmt::format("#{:02x}{:02x}{:02x}", lerp(0xff, 0xb2), lerp(0xf5, 0x18), lerp(0xf0, 0x2b));
}

// The opening <svg> tag. A standalone chart (soak.svg, to put into a document) carries its own
// fonts and a white ground, which soak.html's page gives the embedded one.
void open_svg(std::ostringstream& svg, double width, double height, const std::string& label, bool standalone) {
  svg << "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" << num(width) << "\" height=\"" << num(height)
      << "\" role=\"img\" aria-label=\"" << escape_markup(label) << "\">\n";
  if (standalone)
    svg << "<style>text{font-family:sans-serif;font-size:12px}text.axis{font-weight:bold}</style>\n"
           "<rect width=\"100%\" height=\"100%\" fill=\"#fff\"/>\n";
}

std::string heatmap_svg(const SweepSummary& s, bool standalone) {
  const auto& rows = s.plan->axes[0];
  const auto& cols = s.plan->axes[1];
  const double cw = 110, ch = 44, left = 170, top = 50;
  const double width = left + cw * static_cast<double>(cols.values.size()) + 20;
  const double height = top + ch * static_cast<double>(rows.values.size()) + 20;
  std::ostringstream svg;
  open_svg(svg, width, height, "reproduction rate by " + rows.name + " and " + cols.name, standalone);
  svg << "<text x=\"" << num(left) << "\" y=\"16\" class=\"axis\">" << escape_markup(cols.name) << " &#8594;</text>\n";
  svg << "<text x=\"4\" y=\"" << num(top - 8) << "\" class=\"axis\">" << escape_markup(rows.name)
      << " &#8595;</text>\n";
  for (std::size_t c = 0; c < cols.values.size(); ++c)
    svg << "<text x=\"" << num(left + cw * (static_cast<double>(c) + 0.5)) << "\" y=\"" << num(top - 8)
        << "\" text-anchor=\"middle\">" << escape_markup(cols.values[c]) << "</text>\n";
  for (std::size_t r = 0; r < rows.values.size(); ++r) {
    const double y = top + ch * static_cast<double>(r);
    svg << "<text x=\"" << num(left - 8) << "\" y=\"" << num(y + ch / 2 + 4) << "\" text-anchor=\"end\">"
        << escape_markup(rows.values[r]) << "</text>\n";
    for (std::size_t c = 0; c < cols.values.size(); ++c) {
      const double x = left + cw * static_cast<double>(c);
      const CellSummary* cell = find_cell(s, {rows.values[r], cols.values[c]});
      const bool data = cell != nullptr && cell->rate.has_value();
      const double rate = data ? *cell->rate : 0;
      svg << "<rect x=\"" << num(x) << "\" y=\"" << num(y) << "\" width=\"" << num(cw - 2) << "\" height=\""
          << num(ch - 2) << "\" fill=\"" << (data ? heat_colour(rate) : std::string("#dddddd")) << "\"><title>"
          << escape_markup(rows.name + "=" + rows.values[r] + ", " + cols.name + "=" + cols.values[c]) << ": "
          << (data ? std::to_string(cell->reproduced) + "/" + std::to_string(cell->counted) : std::string("no runs"))
          << "</title></rect>\n";
      svg << "<text x=\"" << num(x + cw / 2) << "\" y=\"" << num(y + ch / 2 + 4) << "\" text-anchor=\"middle\" fill=\""
          << (rate > 0.55 ? "#fff" : "#000") << "\">"
          << (data ? percent(cell->rate) + " (" + std::to_string(cell->reproduced) + "/" +
                         std::to_string(cell->counted) + ")"
                   : std::string("-"))
          << "</text>\n";
    }
  }
  svg << "</svg>\n";
  return svg.str();
}

std::string line_chart_svg(const SweepSummary& s, bool standalone) {
  const auto& axis = s.plan->axes[0];
  const double width = 760, height = 300, left = 60, right = 20, top = 20, bottom = 50;
  const std::size_t n = axis.values.size();
  auto x = [&](std::size_t i) {
    return n == 1 ? (left + width - right) / 2
                  : left + (width - left - right) * static_cast<double>(i) / static_cast<double>(n - 1);
  };
  auto y = [&](double v) { return height - bottom - v * (height - top - bottom); };
  std::ostringstream svg;
  open_svg(svg, width, height, "reproduction rate by " + axis.name, standalone);
  for (double t : {0.0, 0.25, 0.5, 0.75, 1.0})
    svg << "<line x1=\"" << num(left) << "\" x2=\"" << num(width - right) << "\" y1=\"" << num(y(t)) << "\" y2=\""
        << num(y(t)) << "\" stroke=\"#eee\"/><text x=\"" << num(left - 6) << "\" y=\"" << num(y(t) + 4)
        << "\" text-anchor=\"end\">" << percent(t) << "</text>\n";
  std::string points;
  for (std::size_t i = 0; i < n; ++i) {
    svg << "<text x=\"" << num(x(i)) << "\" y=\"" << num(height - bottom + 16) << "\" text-anchor=\"middle\">"
        << escape_markup(axis.values[i]) << "</text>\n";
    const CellSummary* cell = find_cell(s, {axis.values[i]});
    if (cell == nullptr || !cell->rate) continue;
    svg << "<line x1=\"" << num(x(i)) << "\" x2=\"" << num(x(i)) << "\" y1=\"" << num(y(cell->interval.low))
        << "\" y2=\"" << num(y(cell->interval.high)) << "\" stroke=\"#b2182b\" stroke-width=\"2\"/>\n";
    svg << "<circle cx=\"" << num(x(i)) << "\" cy=\"" << num(y(*cell->rate)) << "\" r=\"4\" fill=\"#b2182b\"><title>"
        << escape_markup(axis.name + "=" + axis.values[i]) << ": " << cell->reproduced << "/" << cell->counted
        << "</title></circle>\n";
    points += num(x(i)) + "," + num(y(*cell->rate)) + " ";
  }
  svg << "<polyline fill=\"none\" stroke=\"#b2182b\" points=\"" << points << "\"/>\n";
  svg << "<text x=\"" << num((left + width - right) / 2) << "\" y=\"" << num(height - 10)
      << "\" text-anchor=\"middle\" class=\"axis\">" << escape_markup(axis.name) << "</text>\n</svg>\n";
  return svg.str();
}

std::string values_label(const SweepCell& c) {
  std::string out;
  for (const auto& [axis, value] : c.values) out += (out.empty() ? "" : ", ") + axis + "=" + value;
  return out.empty() ? "(no axes)" : out;
}

std::string verdict_counts(const CellSummary& c) {
  std::string out;
  for (const auto& [verdict, n] : c.verdicts) out += (out.empty() ? "" : ", ") + verdict + " x" + std::to_string(n);
  return out;
}

json::value opt_json(const std::optional<double>& v) { return v ? json::value(*v) : json::value(nullptr); }

}  // namespace

Interval wilson_interval(std::uint64_t k, std::uint64_t n, double z) {
  if (n == 0) return {0, 1};
  const double nn = static_cast<double>(n);
  const double p = static_cast<double>(k) / nn;
  const double z2 = z * z;
  const double denominator = 1 + z2 / nn;
  const double centre = (p + z2 / (2 * nn)) / denominator;
  const double half = z / denominator * std::sqrt(p * (1 - p) / nn + z2 / (4 * nn * nn));
  return {std::max(0.0, centre - half), std::min(1.0, centre + half)};
}

std::optional<double> median(std::vector<double> values) {
  if (values.empty()) return std::nullopt;
  std::sort(values.begin(), values.end());
  const std::size_t mid = values.size() / 2;
  return values.size() % 2 == 1 ? values[mid] : (values[mid - 1] + values[mid]) / 2;
}

std::string cluster_key(const faults::ClusterSettings& c) {
  std::string out;
  auto add = [&out](const std::string& part) { out += (out.empty() ? "" : " ") + part; };
  if (c.max_requests_inflight) add("maxRequestsInflight=" + std::to_string(*c.max_requests_inflight));
  if (c.max_mutating_requests_inflight)
    add("maxMutatingRequestsInflight=" + std::to_string(*c.max_mutating_requests_inflight));
  if (c.exempt_scheduler) add("exemptScheduler=true");
  return out;
}

std::vector<std::string> cluster_stack_args(const faults::ClusterSettings& c) {
  std::vector<std::string> out;
  if (c.max_requests_inflight)
    out.insert(out.end(), {"--max-requests-inflight", std::to_string(*c.max_requests_inflight)});
  if (c.max_mutating_requests_inflight)
    out.insert(out.end(), {"--max-mutating-requests-inflight", std::to_string(*c.max_mutating_requests_inflight)});
  if (c.exempt_scheduler) out.emplace_back("--exempt-scheduler");
  return out;
}

SweepPlan plan_of(const faults::Matrix& m) {
  SweepPlan plan;
  plan.name = m.name;
  std::error_code ec;  // the same plan whichever directory the matrix was named from (resuming compares plans)
  const fs::path scenario = fs::weakly_canonical(m.scenario_file, ec);
  plan.scenario = (ec ? m.scenario_file : scenario).string();
  plan.scheduler = m.scheduler;
  plan.yunikorn = m.yunikorn;
  plan.runs = m.runs;
  for (const auto& a : m.axes) {
    std::string name;
    for (const auto& p : a.paths) name += (name.empty() ? "" : ", ") + p;
    plan.axes.push_back({name, a.values});
  }
  for (const auto& c : m.cells)
    plan.cells.push_back(
        {c.id, c.values, cluster_key(c.cluster), cluster_stack_args(c.cluster), c.expected_verdict, {}});
  return plan;
}

std::string plan_json(const SweepPlan& plan) {
  json::array axes;
  for (const auto& a : plan.axes)
    axes.push_back(json::object{{"name", a.name}, {"values", json::value_from(a.values)}});
  json::array cells;
  for (const auto& c : plan.cells) {
    json::array values;
    for (const auto& [axis, value] : c.values) values.push_back(json::array{json::value(axis), json::value(value)});
    cells.push_back(json::object{{"id", c.id},
                                 {"values", std::move(values)},
                                 {"cluster", c.cluster},
                                 {"stackArgs", json::value_from(c.stack_args)},
                                 {"expected", c.expected}});
  }
  json::object o{{"name", plan.name},         {"scenario", plan.scenario}, {"scheduler", plan.scheduler},
                 {"yunikorn", plan.yunikorn}, {"runs", plan.runs},         {"axes", std::move(axes)},
                 {"cells", std::move(cells)}};
  return json::serialize(o) + "\n";
}

SweepPlan parse_plan_json(std::string_view text) {
  try {
    const json::object o = json::parse(text).as_object();
    SweepPlan plan;
    plan.name = string_at(o, "name");
    plan.scenario = string_at(o, "scenario");
    plan.scheduler = string_at(o, "scheduler");
    plan.yunikorn = string_at(o, "yunikorn");
    plan.runs = o.at("runs").to_number<std::uint64_t>();
    for (const auto& a : o.at("axes").as_array()) {
      SweepAxis axis{std::string(a.at("name").as_string()), {}};
      for (const auto& v : a.at("values").as_array()) axis.values.emplace_back(v.as_string());
      plan.axes.push_back(std::move(axis));
    }
    for (const auto& c : o.at("cells").as_array()) {
      SweepCell cell;
      cell.id = c.at("id").as_string();
      for (const auto& pair : c.at("values").as_array())
        cell.values.emplace_back(pair.as_array().at(0).as_string(), pair.as_array().at(1).as_string());
      cell.cluster = c.at("cluster").as_string();
      for (const auto& arg : c.at("stackArgs").as_array()) cell.stack_args.emplace_back(arg.as_string());
      cell.expected = c.at("expected").as_string();
      plan.cells.push_back(std::move(cell));
    }
    return plan;
  } catch (const std::exception& e) {
    throw std::runtime_error(std::string("plan.json: ") + e.what());
  }
}

SweepRun parse_run_report(std::string_view report_json, std::uint64_t run) {
  SweepRun r;
  r.run = run;
  boost::system::error_code ec;
  json::value doc = json::parse(report_json, ec);
  if (ec || !doc.is_object()) {
    r.verdict = "error";
    r.error = "report.json is not a JSON object";
    return r;
  }
  const json::object& o = doc.as_object();
  r.verdict = string_at(o, "verdict");
  if (r.verdict.empty()) r.verdict = "error";
  r.error = string_at(o, "error");
  r.seconds = number_at(o, "durationSeconds");
  if (const json::value* stats = o.if_contains("stats"); stats != nullptr && stats->is_object()) {
    r.stranded = number_at(stats->as_object(), "strandedPods");
    r.phantom = number_at(stats->as_object(), "phantomAllocations");
  }
  const auto armed = net::parse_rfc3339(string_at(o, "armed"));
  const json::value* windows = o.if_contains("faultWindows");
  if (armed && windows != nullptr && windows->is_array()) {
    std::optional<std::chrono::system_clock::time_point> first;
    for (const auto& w : windows->as_array()) {
      if (!w.is_object()) continue;
      auto t = net::parse_rfc3339(string_at(w.as_object(), "first"));
      if (t && (!first || *t < *first)) first = t;
    }
    if (first) r.first_fault_seconds = std::chrono::duration<double>(*first - *armed).count();
  }
  return r;
}

SweepSummary summarize(const SweepPlan& plan) {
  SweepSummary s;
  s.plan = &plan;
  s.runs_total = plan.cells.size() * plan.runs;
  for (const auto& cell : plan.cells) {
    CellSummary c;
    c.cell = &cell;
    std::vector<double> stranded, phantom, first_fault;
    bool all_expected = cell.runs.size() == plan.runs;
    for (const auto& r : cell.runs) {
      ++c.verdicts[r.verdict];
      if (r.verdict == "missing") {
        all_expected = false;
        continue;
      }
      ++c.done;
      if (r.stack.starts_with("fresh after")) ++c.fresh_stacks;
      if (r.verdict != cell.expected) all_expected = false;
      if (r.verdict == "error") continue;
      ++c.counted;
      const std::string hit = cell.expected == "reproduced" ? "reproduced" : "fail";
      if (r.verdict == hit) ++c.reproduced;
      if (r.stranded) stranded.push_back(*r.stranded);
      if (r.phantom) phantom.push_back(*r.phantom);
      if (r.first_fault_seconds) first_fault.push_back(*r.first_fault_seconds);
    }
    if (c.counted > 0) c.rate = static_cast<double>(c.reproduced) / static_cast<double>(c.counted);
    c.interval = wilson_interval(c.reproduced, c.counted);
    c.median_stranded = median(stranded);
    c.median_phantom = median(phantom);
    c.median_first_fault_seconds = median(first_fault);
    c.as_expected = all_expected;
    s.runs_done += c.done;
    s.cells.push_back(std::move(c));
  }
  return s;
}

std::string render_sweep_json(const SweepSummary& s) {
  json::array cells;
  for (const auto& c : s.cells) {
    json::object values;
    for (const auto& [axis, value] : c.cell->values) values[axis] = value;
    json::array runs;
    for (const auto& r : c.cell->runs)
      runs.push_back(json::object{{"run", r.run},
                                  {"verdict", r.verdict},
                                  {"strandedPods", opt_json(r.stranded)},
                                  {"phantomAllocations", opt_json(r.phantom)},
                                  {"firstFaultSeconds", opt_json(r.first_fault_seconds)},
                                  {"seconds", opt_json(r.seconds)},
                                  {"stack", r.stack},
                                  {"error", r.error.empty() ? json::value(nullptr) : json::value(r.error)}});
    json::object verdicts;
    for (const auto& [v, n] : c.verdicts) verdicts[v] = n;
    cells.push_back(json::object{{"id", c.cell->id},
                                 {"values", std::move(values)},
                                 {"cluster", c.cell->cluster},
                                 {"expected", c.cell->expected},
                                 {"asExpected", c.as_expected},
                                 {"runsDone", c.done},
                                 {"runsCounted", c.counted},
                                 {"reproduced", c.reproduced},
                                 {"rate", opt_json(c.rate)},
                                 {"wilson95", json::array{c.interval.low, c.interval.high}},
                                 {"medianStrandedPods", opt_json(c.median_stranded)},
                                 {"medianPhantomAllocations", opt_json(c.median_phantom)},
                                 {"medianFirstFaultSeconds", opt_json(c.median_first_fault_seconds)},
                                 {"verdicts", std::move(verdicts)},
                                 {"freshStacksAfterUnhealthy", c.fresh_stacks},
                                 {"runs", std::move(runs)}});
  }
  json::array axes;
  for (const auto& a : s.plan->axes)
    axes.push_back(json::object{{"name", a.name}, {"values", json::value_from(a.values)}});
  json::object o{{"name", s.plan->name},         {"scenario", s.plan->scenario}, {"scheduler", s.plan->scheduler},
                 {"yunikorn", s.plan->yunikorn}, {"runsPerCell", s.plan->runs},  {"runsDone", s.runs_done},
                 {"runsTotal", s.runs_total},    {"axes", std::move(axes)},      {"cells", std::move(cells)}};
  return json::serialize(o) + "\n";
}

std::string render_sweep_tsv(const SweepSummary& s) {
  std::ostringstream t;
  t << "cell";
  for (const auto& a : s.plan->axes) t << "\t" << a.name;
  t << "\tcluster\texpected\truns\treproduced\trate\twilson95Low\twilson95High\tmedianStranded\tmedianPhantom"
       "\tmedianFirstFaultSeconds\tverdicts\tasExpected\n";
  for (const auto& c : s.cells) {
    t << c.cell->id;
    for (const auto& [axis, value] : c.cell->values) t << "\t" << value;
    t << "\t" << (c.cell->cluster.empty() ? "-" : c.cell->cluster) << "\t" << c.cell->expected << "\t" << c.counted
      << "\t" << c.reproduced << "\t" << opt(c.rate, "{:.3f}") << "\t" << fmt::format("{:.3f}", c.interval.low) << "\t"
      << fmt::format("{:.3f}", c.interval.high) << "\t" << opt(c.median_stranded) << "\t" << opt(c.median_phantom)
      << "\t" << opt(c.median_first_fault_seconds, "{:.1f}") << "\t" << verdict_counts(c) << "\t"
      << (c.as_expected ? "yes" : "no") << "\n";
  }
  return t.str();
}

std::string render_sweep_junit(const SweepSummary& s) {
  std::size_t failures = 0;
  for (const auto& c : s.cells) failures += c.as_expected ? 0 : 1;
  std::ostringstream x;
  const std::string name = escape_markup(s.plan->name);
  x << "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuites name=\"faultline-sweep\" tests=\"" << s.cells.size()
    << "\" failures=\"" << failures << "\">\n  <testsuite name=\"" << name << "\" tests=\"" << s.cells.size()
    << "\" failures=\"" << failures << "\">\n";
  for (const auto& c : s.cells) {
    double seconds = 0;
    for (const auto& r : c.cell->runs) seconds += r.seconds.value_or(0);
    x << "    <testcase classname=\"" << name << "\" name=\"" << escape_markup(c.cell->id + " " + values_label(*c.cell))
      << "\" time=\"" << seconds << "\"";
    if (c.as_expected) {
      x << "/>\n";
      continue;
    }
    const std::string message = "expected " + c.cell->expected + " in every one of " + std::to_string(s.plan->runs) +
                                " runs, got " + verdict_counts(c);
    x << ">\n      <failure message=\"" << escape_markup(message) << "\">";
    for (const auto& r : c.cell->runs)
      x << escape_markup("run " + std::to_string(r.run) + ": " + r.verdict + (r.error.empty() ? "" : ": " + r.error))
        << "\n";
    x << "</failure>\n    </testcase>\n";
  }
  x << "  </testsuite>\n</testsuites>\n";
  return x.str();
}

std::string render_sweep_html(const SweepSummary& s) {
  const SweepPlan& p = *s.plan;
  std::ostringstream h;
  h << "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<title>faultline sweep: "
    << escape_markup(p.name) << "</title>\n<style>\n"
    << "body{font-family:sans-serif;margin:2em;max-width:1100px}table{border-collapse:collapse;margin:1em 0}"
       "td,th{border:1px solid #ccc;padding:4px 8px;text-align:left;vertical-align:top}svg text{font-size:12px}"
       "svg text.axis{font-weight:bold}.no{color:#b22222}\n</style>\n</head>\n<body>\n";
  h << "<h1>faultline sweep: " << escape_markup(p.name) << "</h1>\n<table>\n"
    << row({"scenario", p.scenario}) << row({"scheduler", p.scheduler + (p.yunikorn.empty() ? "" : " " + p.yunikorn)})
    << row({"runs per cell", std::to_string(p.runs)})
    << row({"runs done", std::to_string(s.runs_done) + " of " + std::to_string(s.runs_total)}) << "</table>\n";
  const std::string what =
      "rate: runs that reproduced (verdict reproduced; for a scenario that expects no violation, runs that violated "
      "an invariant) of the runs that ended with a verdict (error runs are not counted), with its 95% Wilson "
      "interval";
  if (p.axes.size() == 2) {
    h << "<h2>Reproduction rate</h2>\n" << heatmap_svg(s, false) << "<p>" << escape_markup(what) << "</p>\n";
  } else if (p.axes.size() == 1) {
    h << "<h2>Reproduction rate</h2>\n" << line_chart_svg(s, false) << "<p>" << escape_markup(what) << "</p>\n";
  } else {
    h << "<p>" << escape_markup(what) << " (a chart needs one or two axes; this sweep has " << p.axes.size()
      << ")</p>\n";
  }
  h << "<h2>Cells</h2>\n<table>\n<tr><th>cell</th>";
  for (const auto& a : p.axes) h << "<th>" << escape_markup(a.name) << "</th>";
  h << "<th>cluster</th><th>rate</th><th>95% interval</th><th>median stranded</th><th>median phantom</th><th>median "
       "s to first fault</th><th>verdicts</th><th>as expected</th></tr>\n";
  for (const auto& c : s.cells) {
    h << "<tr><td>" << escape_markup(c.cell->id) << "</td>";
    for (const auto& [axis, value] : c.cell->values) h << "<td>" << escape_markup(value) << "</td>";
    h << "<td>" << escape_markup(c.cell->cluster.empty() ? "-" : c.cell->cluster) << "</td><td>"
      << (c.rate ? percent(c.rate) + " (" + std::to_string(c.reproduced) + "/" + std::to_string(c.counted) + ")"
                 : std::string("-"))
      << "</td><td>" << fmt::format("{:.0f}%&#8211;{:.0f}%", c.interval.low * 100, c.interval.high * 100) << "</td><td>"
      << opt(c.median_stranded) << "</td><td>" << opt(c.median_phantom) << "</td><td>"
      << opt(c.median_first_fault_seconds, "{:.1f}") << "</td><td>" << escape_markup(verdict_counts(c))
      << "</td><td class=\"" << (c.as_expected ? "yes" : "no") << "\">" << (c.as_expected ? "yes" : "no")
      << "</td></tr>\n";
  }
  h << "</table>\n</body>\n</html>\n";
  return h.str();
}

fs::path run_dir(const fs::path& dir, const std::string& cell, std::uint64_t run) {
  return dir / "cells" / cell / fmt::format("run-{:02d}", run);
}

SweepPlan read_sweep(const fs::path& dir) {
  SweepPlan plan = parse_plan_json(faults::read_regular_file(dir / "plan.json", kMaxPlanBytes, "a sweep plan"));
  for (auto& cell : plan.cells) {
    for (std::uint64_t run = 1; run <= plan.runs; ++run) {
      const fs::path rd = run_dir(dir, cell.id, run);
      std::error_code ec;
      SweepRun r;
      if (fs::exists(rd / "report.json", ec)) {
        r = parse_run_report(faults::read_regular_file(rd / "report.json", kMaxReportBytes, "a report"), run);
      } else {
        r.run = run;
        r.verdict = "missing";
      }
      if (fs::exists(rd / "stack.txt", ec)) {
        r.stack = faults::read_regular_file(rd / "stack.txt", kMaxStackNoteBytes, "a stack note");
        while (!r.stack.empty() && (r.stack.back() == '\n' || r.stack.back() == '\r')) r.stack.pop_back();
      }
      cell.runs.push_back(std::move(r));
    }
  }
  return plan;
}

std::optional<std::string> render_sweep_svg(const SweepSummary& s) {
  const std::size_t axes = s.plan->axes.size();
  if (axes != 1 && axes != 2) return std::nullopt;
  return axes == 2 ? heatmap_svg(s, true) : line_chart_svg(s, true);
}

void write_sweep_reports(const SweepSummary& s, const fs::path& dir) {
  net::write_file(dir / "soak.json", render_sweep_json(s));
  net::write_file(dir / "soak.tsv", render_sweep_tsv(s));
  net::write_file(dir / "junit.xml", render_sweep_junit(s));
  net::write_file(dir / "soak.html", render_sweep_html(s));
  if (auto svg = render_sweep_svg(s)) net::write_file(dir / "soak.svg", *svg);
}

}  // namespace faultline::harness
