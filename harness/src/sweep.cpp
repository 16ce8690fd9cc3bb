// A matrix sweep's plan and results: plan.json, per cell rates and medians, soak.json, soak.tsv,
// junit.xml, soak.html and soak.svg.
#include "faultline/harness/sweep.hpp"

#include <fmt/format.h>
#include <boost/json.hpp>

#include <algorithm>
#include <cmath>
#include <sstream>

#include "faultline/faults/file.hpp"
#include "faultline/harness/report_read.hpp"
#include "faultline/net/certs.hpp"
#include "faultline/version.hpp"
#include "markup.hpp"

namespace faultline::harness {
namespace {

namespace json = boost::json;
namespace fs = std::filesystem;
using detail::escape_markup;
using detail::num;
using detail::row;
using detail::text_width;

constexpr std::size_t kMaxPlanBytes = 16 * 1024 * 1024;
constexpr std::size_t kMaxStackNoteBytes = 4096;

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
      << "\" viewBox=\"0 0 " << num(width) << " " << num(height) << "\" role=\"img\" aria-label=\""
      << escape_markup(label) << "\">\n";
  if (standalone)
    svg << "<style>text{font-family:sans-serif;font-size:12px}text.axis{font-weight:bold}"
           "text.title{font-size:15px;font-weight:bold}text.sub{fill:#555}</style>\n"
           "<rect width=\"100%\" height=\"100%\" fill=\"#fff\"/>\n";
}

constexpr double kFont = 12, kTitleFont = 15, kMargin = 12;

std::string chart_title(const SweepPlan& p) { return "Reproduction rate: " + p.name; }

std::string chart_subtitle(const SweepPlan& p) {
  return p.scheduler + (p.yunikorn.empty() ? "" : " " + p.yunikorn) + ", " + std::to_string(p.runs) +
         " runs per cell; error runs not counted";
}

// The title and subtitle lines; returns their width.
double chart_heading(std::ostringstream& svg, const SweepPlan& p) {
  svg << "<text x=\"" << num(kMargin) << "\" y=\"22\" class=\"title\">" << escape_markup(chart_title(p)) << "</text>\n"
      << "<text x=\"" << num(kMargin) << "\" y=\"40\" class=\"sub\">" << escape_markup(chart_subtitle(p))
      << "</text>\n";
  return kMargin + std::max(text_width(chart_title(p), kTitleFont, true), text_width(chart_subtitle(p), kFont));
}

// An axis name over several lines, broken after its commas (a linked axis names every path).
std::vector<std::string> axis_lines(const std::string& name, double max_width) {
  std::vector<std::string> lines{""};
  std::size_t from = 0;
  while (from < name.size()) {
    std::size_t comma = name.find(", ", from);
    const std::string part = name.substr(from, comma == std::string::npos ? std::string::npos : comma + 2 - from);
    if (!lines.back().empty() && text_width(lines.back() + part, kFont, true) > max_width) lines.emplace_back();
    lines.back() += part;
    from = comma == std::string::npos ? name.size() : comma + 2;
  }
  for (auto& l : lines)
    while (!l.empty() && l.back() == ' ') l.pop_back();
  return lines;
}

// Two axes: rows by the first, columns by the second, each cell coloured by its rate. Widths come
// from the labels: the row labels' column is as wide as its values and the row axis's name (broken
// after commas), each column as wide as its header and its cell text.
std::string heatmap_svg(const SweepSummary& s, bool standalone) {
  const auto& rows = s.plan->axes[0];
  const auto& cols = s.plan->axes[1];
  const std::vector<std::string> row_axis = axis_lines(rows.name + " \u2193", 300);
  double left = 40;
  for (const auto& v : rows.values) left = std::max(left, text_width(v, kFont) + 16);
  for (const auto& l : row_axis) left = std::max(left, text_width(l, kFont, true) + 24);
  left += kMargin;
  double cw = std::max(
      96.0, text_width("100% (" + std::to_string(s.plan->runs) + "/" + std::to_string(s.plan->runs) + ")", kFont) + 16);
  for (const auto& v : cols.values) cw = std::max(cw, text_width(v, kFont) + 16);
  const double ch = 36;
  // Heading (title, subtitle), then the column axis's name over the grid, then the row axis's name
  // left of the grid, its last line on the column headers' line.
  const double col_axis_y = 64;
  const double top = col_axis_y + 16 * static_cast<double>(row_axis.size()) + 8;
  const double grid_right = left + cw * static_cast<double>(cols.values.size());
  const double grid_bottom = top + ch * static_cast<double>(rows.values.size());
  const double legend_y = grid_bottom + 22, ramp_width = 200;
  const std::string col_axis = cols.name + " \u2192";
  double width = std::max(grid_right, left + text_width(col_axis, kFont, true)) + kMargin;
  const double height = legend_y + 36;

  std::ostringstream body;
  width = std::max(width, chart_heading(body, *s.plan) + kMargin);
  body << "<text x=\"" << num(left) << "\" y=\"" << num(col_axis_y) << "\" class=\"axis\">" << escape_markup(col_axis)
       << "</text>\n";
  for (std::size_t i = 0; i < row_axis.size(); ++i)
    body << "<text x=\"" << num(kMargin) << "\" y=\""
         << num(top - 8 - 16 * static_cast<double>(row_axis.size() - 1 - i)) << "\" class=\"axis\">"
         << escape_markup(row_axis[i]) << "</text>\n";
  for (std::size_t c = 0; c < cols.values.size(); ++c)
    body << "<text x=\"" << num(left + cw * (static_cast<double>(c) + 0.5)) << "\" y=\"" << num(top - 8)
         << "\" text-anchor=\"middle\">" << escape_markup(cols.values[c]) << "</text>\n";
  for (std::size_t r = 0; r < rows.values.size(); ++r) {
    const double y = top + ch * static_cast<double>(r);
    body << "<text x=\"" << num(left - 8) << "\" y=\"" << num(y + ch / 2 + 4) << "\" text-anchor=\"end\">"
         << escape_markup(rows.values[r]) << "</text>\n";
    for (std::size_t c = 0; c < cols.values.size(); ++c) {
      const double x = left + cw * static_cast<double>(c);
      const CellSummary* cell = find_cell(s, {rows.values[r], cols.values[c]});
      const bool data = cell != nullptr && cell->rate.has_value();
      const double rate = data ? *cell->rate : 0;
      body << "<rect x=\"" << num(x) << "\" y=\"" << num(y) << "\" width=\"" << num(cw - 2) << "\" height=\""
           << num(ch - 2) << "\" fill=\"" << (data ? heat_colour(rate) : std::string("#dddddd")) << "\"><title>"
           << escape_markup(rows.name + "=" + rows.values[r] + ", " + cols.name + "=" + cols.values[c]) << ": "
           << (data ? std::to_string(cell->reproduced) + "/" + std::to_string(cell->counted) : std::string("no runs"))
           << "</title></rect>\n";
      body << "<text x=\"" << num(x + cw / 2 - 1) << "\" y=\"" << num(y + ch / 2 + 3)
           << "\" text-anchor=\"middle\" fill=\"" << (rate > 0.55 ? "#fff" : "#000") << "\">"
           << (data ? percent(cell->rate) + " (" + std::to_string(cell->reproduced) + "/" +
                          std::to_string(cell->counted) + ")"
                    : std::string("-"))
           << "</text>\n";
    }
  }
  // Legend: the colour ramp from 0% to 100%, and the grey of a cell without counted runs.
  body << "<defs><linearGradient id=\"heat-ramp\"><stop offset=\"0\" stop-color=\"" << heat_colour(0)
       << "\"/><stop offset=\"1\" stop-color=\"" << heat_colour(1) << "\"/></linearGradient></defs>\n";
  const double ramp_x = kMargin + text_width("rate", kFont) + 8;
  body << "<text x=\"" << num(kMargin) << "\" y=\"" << num(legend_y + 10) << "\">rate</text>\n"
       << "<rect x=\"" << num(ramp_x) << "\" y=\"" << num(legend_y) << "\" width=\"" << num(ramp_width)
       << "\" height=\"12\" fill=\"url(#heat-ramp)\" stroke=\"#999\"/>\n";
  for (double t : {0.0, 0.5, 1.0})
    body << "<text x=\"" << num(ramp_x + ramp_width * t) << "\" y=\"" << num(legend_y + 26)
         << "\" text-anchor=\"middle\">" << percent(t) << "</text>\n";
  const double grey_x = ramp_x + ramp_width + 30;
  body << "<rect x=\"" << num(grey_x) << "\" y=\"" << num(legend_y) << "\" width=\"18\" height=\"12\" "
       << "fill=\"#dddddd\" stroke=\"#999\"/><text x=\"" << num(grey_x + 24) << "\" y=\"" << num(legend_y + 10)
       << "\">no runs counted</text>\n";
  const double key_x = grey_x + 24 + text_width("no runs counted", kFont) + 24;
  body << "<text x=\"" << num(key_x) << "\" y=\"" << num(legend_y + 10)
       << "\" class=\"sub\">cell: rate (reproduced/counted)</text>\n";
  width = std::max(width, key_x + text_width("cell: rate (reproduced/counted)", kFont) + kMargin);

  std::ostringstream svg;
  open_svg(svg, width, height, "reproduction rate by " + rows.name + " and " + cols.name, standalone);
  svg << body.str() << "</svg>\n";
  return svg.str();
}

std::string line_chart_svg(const SweepSummary& s, bool standalone) {
  const auto& axis = s.plan->axes[0];
  const double left = 60, right = 20, top = 60, bottom = 50;
  const std::size_t n = axis.values.size();
  double step = 60;
  for (const auto& v : axis.values) step = std::max(step, text_width(v, kFont) + 16);
  double width = std::max(760.0, left + right + step * static_cast<double>(n));
  const double height = top + 230 + bottom;
  auto x = [&](std::size_t i) {
    return n == 1 ? (left + width - right) / 2
                  : left + (width - left - right) * static_cast<double>(i) / static_cast<double>(n - 1);
  };
  auto y = [&](double v) { return height - bottom - v * (height - top - bottom); };
  std::ostringstream body;
  width = std::max(width, chart_heading(body, *s.plan) + kMargin);
  for (double t : {0.0, 0.25, 0.5, 0.75, 1.0})
    body << "<line x1=\"" << num(left) << "\" x2=\"" << num(width - right) << "\" y1=\"" << num(y(t)) << "\" y2=\""
         << num(y(t)) << "\" stroke=\"#eee\"/><text x=\"" << num(left - 6) << "\" y=\"" << num(y(t) + 4)
         << "\" text-anchor=\"end\">" << percent(t) << "</text>\n";
  std::string points;
  for (std::size_t i = 0; i < n; ++i) {
    body << "<text x=\"" << num(x(i)) << "\" y=\"" << num(height - bottom + 20) << "\" text-anchor=\"middle\">"
         << escape_markup(axis.values[i]) << "</text>\n";
    const CellSummary* cell = find_cell(s, {axis.values[i]});
    if (cell == nullptr || !cell->rate) continue;
    body << "<line x1=\"" << num(x(i)) << "\" x2=\"" << num(x(i)) << "\" y1=\"" << num(y(cell->interval.low))
         << "\" y2=\"" << num(y(cell->interval.high)) << "\" stroke=\"#b2182b\" stroke-width=\"2\"/>\n";
    body << "<circle cx=\"" << num(x(i)) << "\" cy=\"" << num(y(*cell->rate)) << "\" r=\"4\" fill=\"#b2182b\"><title>"
         << escape_markup(axis.name + "=" + axis.values[i]) << ": " << cell->reproduced << "/" << cell->counted
         << "</title></circle>\n";
    points += num(x(i)) + "," + num(y(*cell->rate)) + " ";
  }
  body << "<polyline fill=\"none\" stroke=\"#b2182b\" points=\"" << points << "\"/>\n";
  body << "<text x=\"" << num((left + width - right) / 2) << "\" y=\"" << num(height - 12)
       << "\" text-anchor=\"middle\" class=\"axis\">" << escape_markup(axis.name) << "</text>\n<text x=\""
       << num(width - right) << "\" y=\"" << num(top - 6)
       << "\" text-anchor=\"end\" class=\"sub\">dot: rate; bar: 95% Wilson interval</text>\n";
  std::ostringstream svg;
  open_svg(svg, width, height, "reproduction rate by " + axis.name, standalone);
  svg << body.str() << "</svg>\n";
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

std::string cluster_key(const schema::ClusterSettings& c) {
  std::string out;
  auto add = [&out](const std::string& part) { out += (out.empty() ? "" : " ") + part; };
  if (c.max_requests_inflight) add("maxRequestsInflight=" + std::to_string(*c.max_requests_inflight));
  if (c.max_mutating_requests_inflight)
    add("maxMutatingRequestsInflight=" + std::to_string(*c.max_mutating_requests_inflight));
  if (c.exempt_scheduler) add("exemptScheduler=true");
  return out;
}

std::vector<std::string> cluster_stack_args(const schema::ClusterSettings& c) {
  std::vector<std::string> out;
  if (c.max_requests_inflight)
    out.insert(out.end(), {"--max-requests-inflight", std::to_string(*c.max_requests_inflight)});
  if (c.max_mutating_requests_inflight)
    out.insert(out.end(), {"--max-mutating-requests-inflight", std::to_string(*c.max_mutating_requests_inflight)});
  if (c.exempt_scheduler) out.emplace_back("--exempt-scheduler");
  return out;
}

SweepPlan plan_of(const schema::Matrix& m) {
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
        {c.id, c.values, cluster_key(c.cluster), cluster_stack_args(c.cluster), c.expected_verdict, {}, 0, ""});
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
    json::object cell{{"id", c.id},
                      {"values", std::move(values)},
                      {"cluster", c.cluster},
                      {"stackArgs", json::value_from(c.stack_args)},
                      {"expected", c.expected}};
    if (c.runs_wanted != 0) cell["runs"] = c.runs_wanted;
    if (!c.dir.empty()) cell["dir"] = c.dir;
    cells.push_back(std::move(cell));
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
      if (const json::value* r = c.as_object().if_contains("runs")) cell.runs_wanted = r->to_number<std::uint64_t>();
      if (const json::value* d = c.as_object().if_contains("dir")) cell.dir = d->as_string();
      if (cell.runs_wanted > 100) throw std::runtime_error("cell " + cell.id + ": runs over 100");
      if (cell.dir.starts_with('/') || ("/" + cell.dir + "/").find("/../") != std::string::npos)
        throw std::runtime_error("cell " + cell.id + ": dir '" + cell.dir + "' is not inside the sweep directory");
      plan.cells.push_back(std::move(cell));
    }
    return plan;
  } catch (const std::exception& e) {
    throw std::runtime_error(std::string("plan.json: ") + e.what());
  }
}

SweepRun parse_run_report(std::string_view report_json, std::uint64_t run) {
  const RunReport report = read_run_report(report_json);
  SweepRun r;
  r.run = run;
  if (!report.object) {
    r.verdict = "error";
    r.error = "report.json is not a JSON object";
    return r;
  }
  r.verdict = report.verdict.empty() ? "error" : report.verdict;
  r.error = report.error;
  r.seconds = report.seconds;
  r.stranded = report.stranded;
  r.phantom = report.phantom;
  r.first_fault_seconds = report.first_fault_seconds;
  return r;
}

SweepSummary summarize(const SweepPlan& plan) {
  SweepSummary s;
  s.plan = &plan;
  for (const auto& cell : plan.cells) {
    CellSummary c;
    c.cell = &cell;
    s.runs_total += runs_of(plan, cell);
    std::vector<double> stranded, phantom, first_fault;
    bool all_expected = cell.runs.size() == runs_of(plan, cell);
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
  json::object o{{"faultline", json::object{{"version", faultline::version()}, {"commit", faultline::git_commit()}}},
                 {"name", s.plan->name},
                 {"scenario", s.plan->scenario},
                 {"scheduler", s.plan->scheduler},
                 {"yunikorn", s.plan->yunikorn},
                 {"runsPerCell", s.plan->runs},
                 {"runsDone", s.runs_done},
                 {"runsTotal", s.runs_total},
                 {"axes", std::move(axes)},
                 {"cells", std::move(cells)}};
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
  std::size_t as_expected = 0;
  std::uint64_t reproduced = 0, counted = 0;
  for (const auto& c : s.cells) {
    as_expected += c.as_expected ? 1 : 0;
    reproduced += c.reproduced;
    counted += c.counted;
  }
  const bool all = as_expected == s.cells.size();
  h << "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
    << "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'; "
       "script-src 'unsafe-inline'\">\n"
    << "<title>faultline sweep: " << escape_markup(p.name) << "</title>\n<style>\n"
    << "body{font-family:system-ui,sans-serif;margin:1.2em 2em;max-width:1100px;color:#222}"
       "h1{font-size:1.1em;font-weight:normal;color:#555;margin:0 0 .6em}"
       "table{border-collapse:collapse;margin:1em 0;display:block;max-width:100%;overflow-x:auto}"
       "td,th{border:1px solid #ccc;padding:4px 8px;text-align:left;vertical-align:top}th{background:#f4f4f4}"
       "table.kv th{white-space:nowrap;font-weight:normal}svg{max-width:100%;height:auto}"
       "svg text{font-size:12px;font-family:system-ui,sans-serif}svg text.axis{font-weight:bold}"
       "svg text.title{font-size:15px;font-weight:bold}svg text.sub{fill:#555}.no{color:#b22222}"
       ".hero{padding:.8em 1em;border-radius:8px;background:#f4f4f4;border-left:10px solid #888}"
       ".hero.yes{border-color:#2a7d2a}.hero.no{border-color:#b22222}"
       ".verdict{font-size:2.2em;font-weight:bold}.verdict.yes{color:#2a7d2a}.verdict.no{color:#b22222}"
       ".meta{color:#555;margin-top:.2em}.cards{display:flex;flex-wrap:wrap;gap:.8em;margin:.8em 0}"
       ".card{flex:1 1 180px;border:1px solid #ddd;border-radius:8px;padding:.5em .8em}"
       ".card .label{color:#555;font-size:.9em}.big{font-size:2.2em;font-weight:bold;line-height:1.1}"
       ".sub{color:#555;font-size:.9em}footer{color:#777;margin-top:2em}\n</style>\n</head>\n<body>\n";
  const char* cls = all ? "yes" : "no";
  h << "<h1>faultline sweep</h1>\n<header class=\"hero " << cls << "\"><div class=\"verdict " << cls
    << "\" id=\"verdict\">" << as_expected << " of " << s.cells.size() << " cells as expected</div>"
    << "<div class=\"meta\"><b>" << escape_markup(p.name) << "</b>: " << escape_markup(p.scenario) << " on "
    << escape_markup(p.scheduler + (p.yunikorn.empty() ? "" : " " + p.yunikorn)) << "</div></header>\n"
    << "<section class=\"cards\"><div class=\"card\"><div class=\"label\">runs done</div><div class=\"big\">"
    << s.runs_done << " of " << s.runs_total << "</div><div class=\"sub\">" << p.runs
    << " per cell</div></div><div class=\"card\"><div class=\"label\">runs that reproduced</div><div class=\"big\">"
    << reproduced << " of " << counted << "</div><div class=\"sub\">of the runs with a verdict (not error)</div></div>"
    << "<div class=\"card\"><div class=\"label\">cells</div><div class=\"big\">" << s.cells.size()
    << "</div><div class=\"sub\">";
  for (const auto& a : p.axes) h << escape_markup(a.name) << ": " << a.values.size() << " values<br>";
  h << "</div></div></section>\n";
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
  h << "</table>\n<footer>written by faultline-harness " << escape_markup(faultline::version()) << " (commit "
    << escape_markup(faultline::git_commit()) << ")</footer>\n</body>\n</html>\n";
  return h.str();
}

fs::path run_dir(const fs::path& dir, const std::string& cell, std::uint64_t run) {
  return dir / "cells" / cell / fmt::format("run-{:02d}", run);
}

std::uint64_t runs_of(const SweepPlan& plan, const SweepCell& cell) {
  return cell.runs_wanted != 0 ? cell.runs_wanted : plan.runs;
}

SweepPlan read_sweep(const fs::path& dir) {
  SweepPlan plan = parse_plan_json(faults::read_regular_file(dir / "plan.json", kMaxPlanBytes, "a sweep plan"));
  for (auto& cell : plan.cells) {
    for (std::uint64_t run = 1; run <= runs_of(plan, cell); ++run) {
      const fs::path rd =
          cell.dir.empty() ? run_dir(dir, cell.id, run) : dir / cell.dir / fmt::format("run-{:02d}", run);
      std::error_code ec;
      SweepRun r;
      if (fs::exists(rd / "report.json", ec)) {
        r = parse_run_report(faults::read_regular_file(rd / "report.json", max_report_bytes, "a report"), run);
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
