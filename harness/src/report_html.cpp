// report.html: self-contained (inline CSS, SVG and a small script; a Content-Security-Policy that
// forbids loading anything). The first screen says what happened: the verdict and what it rests on,
// the numbers that matter (stranded pods, phantom allocations, faults fired, versions), then the
// timeline with each fault's window as a labelled band. Below: checks, run details, the YuniKorn
// build, faults, steps, quiet points, resources, and the evidence, one expandable block per check
// with a filter over its lines (the page reads the same without the script, every block closed).
#include <fmt/format.h>
#include <algorithm>
#include <boost/json.hpp>
#include <map>
#include <optional>
#include <sstream>

#include "faultline/faults/printable.hpp"
#include "faultline/harness/metrics_scrape.hpp"
#include "faultline/harness/report.hpp"
#include "faultline/net/rfc3339.hpp"
#include "markup.hpp"

namespace faultline::harness {
namespace {

namespace json = boost::json;
using detail::escape_markup;
using detail::num;
using detail::row;
using detail::text_width;

constexpr double kWidth = 1000, kPlotHeight = 260, kLeft = 60, kRight = 20, kBottom = 40;
constexpr double kLaneHeight = 15, kLabelFont = 11;
constexpr std::size_t kMaxLanes = 12;  // more labels than lanes: the band keeps its tooltip

// One colour per fault rule (by the order the windows opened), dark enough for its label.
constexpr const char* kFaultColours[] = {"#d62728", "#9c5a00", "#c2185b", "#6d4c41", "#b8860b", "#e65100"};
constexpr const char* kStepColour = "#7b52ab";

struct Scale {
  double t0, t1, ymax, top;
  double x(double s) const { return kLeft + (s - t0) / (t1 - t0) * (kWidth - kLeft - kRight); }
  double y(double v) const { return top + kPlotHeight - v / ymax * kPlotHeight; }
  double bottom() const { return top + kPlotHeight; }
};

std::string polyline(const Report& r, const Scale& sc, std::int64_t TimelinePoint::*field, const char* colour) {
  std::string pts;
  for (const auto& p : r.timeline) pts += num(sc.x(p.seconds)) + "," + num(sc.y(static_cast<double>(p.*field))) + " ";
  return "<polyline fill=\"none\" stroke=\"" + std::string(colour) + "\" stroke-width=\"2\" points=\"" + pts + "\"/>\n";
}

// A shaded span of the timeline (a fault's window or a step) and its label above the plot.
struct Band {
  std::string css_class;  // fault | step
  std::string colour;
  double x0 = 0, x1 = 0;
  std::string label, title;
  double label_x = 0;
  std::size_t lane = 0;
  bool labelled = true;
};

// Labels go into lanes above the plot, left to right: each into the first lane where it clears the
// label before it, so that windows seconds apart do not print their names over each other.
std::size_t assign_lanes(std::vector<Band>& bands) {
  std::vector<std::size_t> order(bands.size());
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return bands[a].x0 < bands[b].x0; });
  std::vector<double> lane_end;
  for (std::size_t i : order) {
    Band& b = bands[i];
    const double w = text_width(b.label, kLabelFont);
    b.label_x = std::max(kLeft, std::min(b.x0, kWidth - kRight - w));
    std::size_t lane = 0;
    while (lane < lane_end.size() && lane_end[lane] + 8 > b.label_x) ++lane;
    if (lane == kMaxLanes) {
      b.labelled = false;
      continue;
    }
    if (lane == lane_end.size()) lane_end.push_back(0);
    lane_end[lane] = b.label_x + w;
    b.lane = lane;
  }
  return lane_end.size();
}

std::string timeline_svg(const Report& r) {
  if (r.timeline.empty()) return "<p>No pod events were observed, so there is no timeline.</p>\n";
  auto secs = [&](WallTime t) { return std::chrono::duration<double>(t - r.started).count(); };
  Scale sc{r.timeline.front().seconds, r.timeline.back().seconds, 1, 0};
  for (const auto& w : r.fault_windows) {
    sc.t0 = std::min(sc.t0, secs(w.first));
    sc.t1 = std::max(sc.t1, secs(w.last));
  }
  for (const auto& st : r.steps) {
    sc.t0 = std::min(sc.t0, secs(st.started));
    sc.t1 = std::max(sc.t1, secs(st.recovered.value_or(st.started)));
  }
  if (sc.t1 - sc.t0 < 1) sc.t1 = sc.t0 + 1;
  for (const auto& p : r.timeline)
    sc.ymax = std::max<double>({sc.ymax, double(p.created), double(p.bound), double(p.running)});

  std::vector<Band> bands;
  for (std::size_t i = 0; i < r.fault_windows.size(); ++i) {
    const auto& w = r.fault_windows[i];
    Band b;
    b.css_class = "fault";
    b.colour = kFaultColours[i % std::size(kFaultColours)];
    b.x0 = sc.x(secs(w.first));
    b.x1 = std::max(sc.x(secs(w.last)), b.x0 + 2);
    b.label = w.rule;
    b.title = w.rule + " (" + w.action + "): " + std::to_string(w.requests) +
              (w.requests == 1 ? " request" : " requests") + ", +" + num(secs(w.first)) + " s to +" +
              num(secs(w.last)) + " s";
    bands.push_back(std::move(b));
  }
  for (const auto& st : r.steps) {
    Band b;
    b.css_class = "step";
    b.colour = kStepColour;
    b.x0 = sc.x(secs(st.started));
    b.x1 = std::max(sc.x(secs(st.recovered.value_or(st.started))), b.x0 + 2);
    b.label = st.name;
    b.title = st.name + " (" + st.kind + " " + st.target + ")";
    bands.push_back(std::move(b));
  }
  const std::size_t lanes = assign_lanes(bands);
  sc.top = 10 + kLaneHeight * static_cast<double>(lanes) + (lanes > 0 ? 6 : 0);
  const double height = sc.bottom() + kBottom;

  std::ostringstream s;
  s << "<svg class=\"timeline\" xmlns=\"http://www.w3.org/2000/svg\" width=\"" << num(kWidth) << "\" height=\""
    << num(height) << "\" viewBox=\"0 0 " << num(kWidth) << " " << num(height)
    << "\" role=\"img\" aria-label=\"pods created, bound and running over time, with the faults' windows\">\n";
  for (const auto& b : bands) {
    s << "<rect class=\"" << b.css_class << "\" x=\"" << num(b.x0) << "\" y=\"" << num(sc.top) << "\" width=\""
      << num(b.x1 - b.x0) << "\" height=\"" << num(kPlotHeight) << "\" fill=\"" << b.colour << "\"><title>"
      << escape_markup(b.title) << "</title></rect>\n";
    if (!b.labelled) continue;
    const double baseline = 10 + kLaneHeight * (static_cast<double>(b.lane) + 1) - 4;
    s << "<line class=\"leader\" x1=\"" << num(b.x0) << "\" y1=\"" << num(baseline + 3) << "\" x2=\"" << num(b.x0)
      << "\" y2=\"" << num(sc.top) << "\" stroke=\"" << b.colour << "\"/>\n";
    s << "<text class=\"" << b.css_class << "label\" x=\"" << num(b.label_x) << "\" y=\"" << num(baseline)
      << "\" fill=\"" << b.colour << "\">" << escape_markup(b.label) << "<title>" << escape_markup(b.title)
      << "</title></text>\n";
  }
  for (const auto& q : r.quiet_points) {
    const bool ok = std::none_of(q.checks.begin(), q.checks.end(), [](const CheckResult& c) { return c.failed(); });
    const double x = sc.x(std::clamp(secs(q.at), sc.t0, sc.t1));
    s << "<line class=\"" << (ok ? "quiet" : "quietbad") << "\" x1=\"" << num(x) << "\" y1=\"" << num(sc.top)
      << "\" x2=\"" << num(x) << "\" y2=\"" << num(sc.bottom()) << "\"><title>"
      << escape_markup("quiet point after " + q.after + (ok ? ": invariants held" : ": VIOLATED"))
      << "</title></line>\n";
  }
  s << "<line x1=\"" << num(kLeft) << "\" y1=\"" << num(sc.bottom()) << "\" x2=\"" << num(kWidth - kRight) << "\" y2=\""
    << num(sc.bottom()) << "\" stroke=\"#444\"/>\n";
  s << "<line x1=\"" << num(kLeft) << "\" y1=\"" << num(sc.top) << "\" x2=\"" << num(kLeft) << "\" y2=\""
    << num(sc.bottom()) << "\" stroke=\"#444\"/>\n";
  for (int i = 0; i <= 5; ++i) {
    double t = sc.t0 + (sc.t1 - sc.t0) * i / 5, v = sc.ymax * i / 5;
    s << "<text x=\"" << num(sc.x(t)) << "\" y=\"" << num(sc.bottom() + 20) << "\" text-anchor=\"middle\">" << num(t)
      << "s</text>\n";
    s << "<text x=\"" << num(kLeft - 6) << "\" y=\"" << num(sc.y(v) + 4) << "\" text-anchor=\"end\">"
      << static_cast<long long>(v) << "</text>\n";
  }
  s << polyline(r, sc, &TimelinePoint::created, "#1f77b4") << polyline(r, sc, &TimelinePoint::bound, "#ff7f0e")
    << polyline(r, sc, &TimelinePoint::running, "#2ca02c");
  s << "</svg>\n<p class=\"legend\"><span style=\"color:#1f77b4\">&#9632; created</span> "
       "<span style=\"color:#ff7f0e\">&#9632; bound</span> <span style=\"color:#2ca02c\">&#9632; running</span> "
       "<span class=\"faultkey\">&#9632; a fault's window (named above it)</span>"
    << (r.steps.empty() ? "" : " <span class=\"stepkey\">&#9632; node flap or component fault</span>")
    << (r.quiet_points.empty() ? ""
                               : " <span style=\"color:#2a7d2a\">| quiet point, invariants held</span> <span "
                                 "style=\"color:#b22222\">| quiet point, violated</span>")
    << " (seconds since the run started)</p>\n";
  return s.str();
}

std::string opt(const std::optional<std::int64_t>& v) { return v ? std::to_string(*v) : "n/a"; }

// What the verdict rests on, in a sentence.
std::string verdict_reason(const Report& r) {
  if (r.verdict == Verdict::error) return r.error.empty() ? "The run did not complete." : "The run failed: " + r.error;
  std::vector<std::string> expected, unexpected, missing, no_data;
  for (const auto& c : r.checks) {
    if (c.status == CheckStatus::no_data) no_data.push_back(c.name);
    if (c.status == CheckStatus::violated) (c.expected_violated ? expected : unexpected).push_back(c.name);
    if (c.expected_violated && c.status == CheckStatus::passed) missing.push_back(c.name);
  }
  auto list = [](const std::vector<std::string>& names) {
    std::string out;
    for (const auto& n : names) out += (out.empty() ? "" : ", ") + n;
    return out;
  };
  std::string out;
  if (r.verdict == Verdict::pass) out = "Every invariant held.";
  if (r.verdict == Verdict::reproduced) out = "The expected violations appeared: " + list(expected) + ".";
  if (!unexpected.empty()) out += " Violated, not expected: " + list(unexpected) + ".";
  if (!missing.empty()) out += " Expected to be violated, held: " + list(missing) + ".";
  if (!no_data.empty()) out += " No data for: " + list(no_data) + ".";
  if (out.empty()) out = "Checks: see below.";
  return out.front() == ' ' ? out.substr(1) : out;
}

std::string duration_text(double seconds) {
  if (seconds < 120) return fmt::format("{:.0f} s", seconds);
  const auto total = static_cast<long long>(seconds + 0.5);
  return fmt::format("{}m {:02d}s", total / 60, static_cast<int>(total % 60));
}

std::string card(const std::string& id, const std::string& label, const std::string& value, const std::string& sub,
                 bool bad) {
  return "<div class=\"card\" id=\"" + id + "\"><div class=\"label\">" + escape_markup(label) +
         "</div><div class=\"big" + (bad ? " bad" : "") + "\">" + escape_markup(value) + "</div><div class=\"sub\">" +
         sub + "</div></div>\n";
}

// yunikorn-build.json as key/value rows; nested objects as dotted keys, arrays joined.
void flatten(const json::value& v, const std::string& key, std::vector<std::pair<std::string, std::string>>& out) {
  if (v.is_object()) {
    for (const auto& [k, child] : v.as_object())
      flatten(child, key.empty() ? std::string(k) : key + "." + std::string(k), out);
    return;
  }
  std::string text;
  if (v.is_string()) {
    text = v.as_string();
  } else if (v.is_array()) {
    for (const auto& item : v.as_array())
      text += (text.empty() ? "" : ", ") + (item.is_string() ? std::string(item.as_string()) : json::serialize(item));
    if (text.empty()) text = "(none)";
  } else if (v.is_null()) {
    text = "-";
  } else {
    text = json::serialize(v);
  }
  out.emplace_back(key, text);
}

std::vector<std::pair<std::string, std::string>> build_rows(const std::string& build) {
  std::vector<std::pair<std::string, std::string>> rows;
  boost::system::error_code ec;
  const json::value doc = json::parse(build, ec);
  if (ec || !doc.is_object()) return {{"(not a JSON object)", build}};
  flatten(doc, "", rows);
  return rows;
}

std::string versions_card(const Report& r) {
  std::string lines = "faultline " + escape_markup(r.faultline_version) + " <span class=\"commit\">" +
                      escape_markup(r.faultline_commit) + "</span>";
  for (const auto& [k, v] : r.versions) lines += "<br>" + escape_markup(k + " " + v);
  if (!r.yunikorn_build.empty()) {
    std::string yunikorn, version;
    for (const auto& [k, v] : build_rows(r.yunikorn_build)) {
      if (k == "yunikorn") yunikorn = v;
      if (k == "version") version = v;
    }
    std::string what = yunikorn.empty() ? version : yunikorn;
    if (!version.empty() && what != version) what += " (" + version + ")";
    if (!what.empty()) lines += "<br>YuniKorn " + escape_markup(what);
  }
  return "<div class=\"card wide\" id=\"versions\"><div class=\"label\">versions</div><div class=\"mid\">" + lines +
         "</div></div>\n";
}

std::string first_screen(const Report& r) {
  const std::string verdict = to_string(r.verdict);
  std::ostringstream h;
  h << "<header class=\"hero " << verdict << "\">\n<div class=\"verdict " << verdict << "\" id=\"verdict\">" << verdict
    << "</div>\n<div class=\"headline\"><div class=\"scenario\">" << escape_markup(r.scenario) << "</div>"
    << "<div class=\"reason\" id=\"verdict-reason\">" << escape_markup(verdict_reason(r)) << "</div>"
    << "<div class=\"meta\">" << escape_markup(r.scheduler) << ", seed " << r.seed << ", started "
    << escape_markup(net::format_rfc3339(r.started, 0)) << ", "
    << escape_markup(duration_text(std::chrono::duration<double>(r.finished - r.started).count())) << "</div></div>\n"
    << "</header>\n<section class=\"cards\">\n";
  const auto& st = r.stats;
  h << card("stranded", "stranded pods", std::to_string(st.stranded_pods),
            escape_markup(fmt::format("of {} created; {} bound, {} running, {} deleted", r.pods_created, st.bound_pods,
                                      st.running_pods, st.deleted_pods)),
            st.stranded_pods > 0);
  h << card("phantom", "phantom allocations", opt(st.phantom_allocations),
            st.queue_allocated_pods
                ? escape_markup("the queue books " + std::to_string(*st.queue_allocated_pods) + " pods")
                : std::string("no YuniKorn queue data"),
            st.phantom_allocations.value_or(0) > 0);
  std::int64_t rules_fired = 0, requests = 0;
  std::string fired;
  constexpr std::size_t kRulesListed = 4;  // the rest in the Faults table
  for (std::size_t i = 0; i < r.faults.size(); ++i) {
    const auto& f = r.faults[i];
    if (f.fired > 0) ++rules_fired;
    requests += f.fired;
    if (i < kRulesListed)
      fired += (fired.empty() ? "" : "<br>") + escape_markup(f.rule) + " &#215;" + std::to_string(f.fired);
  }
  if (r.faults.size() > kRulesListed)
    fired += fmt::format("<br><a href=\"#faults\">{} more rules</a>", r.faults.size() - kRulesListed);
  h << card("faults-fired", "fault rules fired",
            r.faults.empty() ? std::string("none") : fmt::format("{} of {}", rules_fired, r.faults.size()),
            r.faults.empty() ? std::string("the scenario has no proxy faults")
                             : fmt::format("{} requests faulted<br>", requests) + fired,
            false);
  h << versions_card(r) << "</section>\n";
  return h.str();
}

// Each check's evidence in a <details> block of one element per line (so a filter can hide lines);
// lines wrap at the page's width instead of running off it.
std::string evidence_html(const Report& r) {
  std::ostringstream h;
  h << "<h2 id=\"evidence\">Evidence</h2>\n<p class=\"filter\"><input type=\"search\" id=\"evidence-filter\" "
       "placeholder=\"filter evidence lines, e.g. a pod or node name\" aria-label=\"filter evidence lines\"> "
       "<span id=\"evidence-count\"></span></p>\n";
  for (const auto& c : r.checks) {
    h << "<details class=\"evidence\" id=\"" << escape_markup(c.name) << "\"><summary><b>" << escape_markup(c.name)
      << "</b> <span class=\"" << to_string(c.status) << "\">" << to_string(c.status) << " (" << c.count << ")</span> "
      << escape_markup(c.summary) << " <span class=\"hits\"></span></summary>\n<div class=\"lines\">";
    for (const auto& e : c.evidence) h << "<div class=\"ev\">" << escape_markup(e) << "</div>";
    if (c.evidence.empty()) h << "<div class=\"none\">no evidence lines</div>";
    h << "</div></details>\n";
  }
  return h.str();
}

constexpr const char* kStyle =
    "body{font-family:system-ui,sans-serif;margin:1.2em 2em;max-width:1100px;color:#222}"
    "h1{font-size:1.1em;font-weight:normal;color:#555;margin:0 0 .6em}h2{margin-top:1.6em}"
    "table{border-collapse:collapse;margin:1em 0;display:block;max-width:100%;overflow-x:auto}td,th{border:1px solid "
    "#ccc;padding:4px 8px;text-align:left;"
    "vertical-align:top}th{background:#f4f4f4}table.kv th{white-space:nowrap;font-weight:normal}"
    ".hero{display:flex;align-items:center;gap:1.2em;padding:.8em 1em;border-radius:8px;background:#f4f4f4;"
    "border-left:10px solid #888}.hero.pass,.hero.reproduced{border-color:#2a7d2a}"
    ".hero.fail,.hero.error{border-color:#b22222}"
    ".verdict{font-size:2.6em;font-weight:bold;text-transform:uppercase;letter-spacing:.03em}"
    ".scenario{font-size:1.3em;font-weight:bold}.reason{font-size:1.1em;margin:.2em 0}.meta{color:#555}"
    ".pass,.reproduced,.passed,.skipped{color:#2a7d2a}.fail,.error,.violated,.no-data{color:#b22222}"
    ".cards{display:flex;flex-wrap:wrap;gap:.8em;margin:.8em 0}.card{flex:1 1 180px;border:1px solid #ddd;"
    "border-radius:8px;padding:.5em .8em}.card.wide{flex:2 1 260px}.card .label{color:#555;font-size:.9em}"
    ".big{font-size:2.4em;font-weight:bold;line-height:1.1}.big.bad{color:#b22222}.mid{font-size:1.05em;"
    "line-height:1.5}.sub{color:#555;font-size:.9em}.commit{font-family:monospace;color:#555}"
    "svg.timeline{max-width:100%;height:auto}svg text{font-size:11px;font-family:system-ui,sans-serif}"
    "rect.fault{fill-opacity:.16}rect.step{fill-opacity:.16}line.leader{stroke-width:1;stroke-dasharray:2,2}"
    ".faultkey{color:#e8a0a0}.stepkey{color:#c9b3de}"
    "line.quiet{stroke:#2a7d2a;stroke-dasharray:3,3}line.quietbad{stroke:#b22222;stroke-width:2}"
    "details.evidence{border:1px solid #ddd;border-radius:6px;margin:.4em 0;padding:.3em .6em}"
    "details.evidence summary{cursor:pointer}.hits{color:#555;font-size:.9em}"
    ".lines{font-family:monospace;font-size:.9em;background:#f6f6f6;margin:.4em 0;padding:.4em}"
    ".ev{white-space:pre-wrap;overflow-wrap:anywhere;border-bottom:1px solid #eee;padding:1px 0}"
    ".none{color:#777}#evidence-filter{width:28em;max-width:100%;padding:4px}footer{color:#777;margin-top:2em}";

// The evidence filter, and a link to a check's evidence opening its block.
constexpr const char* kScript =
    "(function(){var f=document.getElementById('evidence-filter'),n=document.getElementById('evidence-count');"
    "function apply(){var q=f.value.trim().toLowerCase(),shown=0,total=0;"
    "document.querySelectorAll('details.evidence').forEach(function(d){var hit=0;"
    "d.querySelectorAll('.ev').forEach(function(l){total++;var m=!q||l.textContent.toLowerCase().indexOf(q)>=0;"
    "l.hidden=!m;if(m){hit++;shown++;}});if(q)d.open=hit>0;"
    "d.querySelector('.hits').textContent=q?hit+' matching':'';});"
    "n.textContent=q?shown+' of '+total+' lines match':total+' lines';}"
    "f.addEventListener('input',apply);apply();"
    "function openHash(){var id=decodeURIComponent(location.hash.slice(1)),t=id&&document.getElementById(id);"
    "if(t&&t.tagName==='DETAILS')t.open=true;}window.addEventListener('hashchange',openHash);openHash();})();";

// The listed series of the system's metrics, before the faults and after the last settle.
std::string metrics_html(const SystemRecord& sys) {
  std::ostringstream h;
  h << "<h2>Metrics of " << escape_markup(sys.name) << "</h2>\n<p>" << escape_markup(sys.metrics_url) << "</p>\n";
  // Every sample by its name and labels, in the order the endpoint served them.
  std::vector<std::string> keys;
  std::map<std::string, std::pair<std::optional<double>, std::optional<double>>> values;
  std::map<std::string, const MetricSample*> first;
  for (const auto* scrape : {&sys.metrics_before, &sys.metrics_after}) {
    if (!*scrape) continue;
    if (!(*scrape)->error.empty())
      h << "<p class=\"bad\">" << (scrape == &sys.metrics_before ? "before" : "after")
        << ": could not be read: " << escape_markup((*scrape)->error) << "</p>\n";
    for (const auto& sample : (*scrape)->samples) {
      const std::string key = sample_key(sample);
      if (first.emplace(key, &sample).second) keys.push_back(key);
      (scrape == &sys.metrics_before ? values[key].first : values[key].second) = sample.value;
    }
  }
  if (auto missing = missing_series(sys); !missing.empty()) {
    std::string names;
    for (const auto& n : missing) names += (names.empty() ? "" : ", ") + n;
    h << "<p class=\"bad\">listed series not served: " << escape_markup(names) << "</p>\n";
  }
  if (keys.empty()) return h.str();
  h << "<table>\n<tr><th>series</th><th>labels</th><th>before</th><th>after</th><th>delta</th></tr>\n";
  const auto text = [](const std::optional<double>& v) { return v ? format_sample_value(*v) : std::string("-"); };
  for (const auto& key : keys) {
    const MetricSample& sample = *first.at(key);
    std::string labels;
    for (const auto& [k, v] : sample.labels) labels += (labels.empty() ? "" : ", ") + k + "=" + v;
    const auto& [before, after] = values.at(key);
    std::string delta = before && after ? format_sample_value(*after - *before) : std::string("-");
    h << row({sample.name, labels, text(before), text(after), delta});
  }
  h << "</table>\n";
  return h.str();
}

}  // namespace

std::string render_html(const Report& r) {
  std::ostringstream h;
  h << "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
    << "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'; "
       "script-src 'unsafe-inline'\">\n<title>faultline: "
    << escape_markup(r.scenario) << " — " << to_string(r.verdict) << "</title>\n<style>\n"
    << kStyle << "\n</style>\n</head>\n<body>\n";
  h << "<h1>faultline report</h1>\n" << first_screen(r);
  h << "<h2>Timeline</h2>\n" << timeline_svg(r);
  h << "<h2>Checks</h2>\n<table>\n<tr><th>check</th><th>expected</th><th>result</th><th>count</th><th>summary</th></"
       "tr>\n";
  for (const auto& c : r.checks) {
    h << "<tr><td><a href=\"#" << escape_markup(c.name) << "\">" << escape_markup(c.name) << "</a></td><td>"
      << (c.expected_violated ? "violated" : "ok") << "</td><td class=\"" << to_string(c.status) << "\">"
      << to_string(c.status) << "</td><td>" << c.count << "</td><td>" << escape_markup(c.summary) << "</td></tr>\n";
  }
  h << "</table>\n";
  if (!r.error.empty()) h << "<p class=\"error\">run failed: " << escape_markup(r.error) << "</p>\n";
  auto kv = [](const std::string& k, const std::string& v) {
    return "<tr><th>" + escape_markup(k) + "</th><td>" + escape_markup(v) + "</td></tr>\n";
  };
  h << "<h2>Run</h2>\n<table class=\"kv\">\n"
    << kv("scenario", r.scenario) << kv("scenario file", r.scenario_file) << kv("scheduler", r.scheduler)
    << kv("seed", std::to_string(r.seed)) << kv("started", net::format_rfc3339(r.started, 3))
    << kv("finished", net::format_rfc3339(r.finished, 3))
    << kv("proxy armed", r.armed ? net::format_rfc3339(*r.armed, 3) : "never")
    << kv("last fault ended", r.faults_ended ? net::format_rfc3339(*r.faults_ended, 3) : "-")
    << kv("settling began", r.settle_started ? net::format_rfc3339(*r.settle_started, 3) : "-")
    << kv("nodes", std::to_string(r.nodes)) << kv("pods created", std::to_string(r.pods_created))
    << kv("creation rate achieved (pods/s)", num(r.create_rate_achieved))
    << kv("objects created", std::to_string(r.objects_created) + " (" + std::to_string(r.objects_failed) + " failed)")
    << kv("pods bound", std::to_string(r.stats.bound_pods)) << kv("pods running", std::to_string(r.stats.running_pods))
    << kv("pods stranded", std::to_string(r.stats.stranded_pods))
    << kv("pods deleted", std::to_string(r.stats.deleted_pods))
    << kv("queue allocated pods (YuniKorn)", opt(r.stats.queue_allocated_pods))
    << kv("phantom allocations", opt(r.stats.phantom_allocations))
    << kv("binds through the proxy: succeeded / failed",
          opt(r.stats.binds_succeeded) + " / " + opt(r.stats.binds_failed));
  for (const auto& [k, v] : r.versions) h << kv("version: " + k, v);
  h << kv("faultline-harness", r.faultline_version + " (commit " + r.faultline_commit + ")");
  for (const auto& [k, v] : r.client_retries) h << kv("harness retries: " + k, std::to_string(v));
  h << "</table>\n";
  if (!r.yunikorn_build.empty()) {
    h << "<h2>YuniKorn build</h2>\n<table class=\"kv\" id=\"yunikorn-build\">\n";
    for (const auto& [k, v] : build_rows(r.yunikorn_build)) h << kv(k, v);
    h << "</table>\n";
  }
  h << "<h2 id=\"faults\">Faults</h2>\n<table>\n<tr><th>rule</th><th>matched</th><th>fired</th><th>fired "
       "between</th></tr>\n";
  for (const auto& f : r.faults) {
    std::string window = "never";
    for (const auto& w : r.fault_windows) {
      if (w.rule == f.rule) window = net::format_rfc3339(w.first, 3) + " .. " + net::format_rfc3339(w.last, 3);
    }
    h << row({f.rule, std::to_string(f.matched), std::to_string(f.fired), window});
  }
  h << "</table>\n";
  if (!r.steps.empty()) {
    h << "<h2>Node flaps and component faults</h2>\n<table>\n<tr><th>name</th><th>what</th><th>target</th><th>"
         "started</th><th>recovered</th><th>detail</th></tr>\n";
    for (const auto& st : r.steps) {
      std::string detail =
          st.error.empty() ? st.detail : "FAILED: " + st.error + (st.detail.empty() ? "" : "; " + st.detail);
      h << row({st.name, st.kind, st.target, net::format_rfc3339(st.started, 3),
                st.recovered ? net::format_rfc3339(*st.recovered, 3) : "-", detail});
    }
    h << "</table>\n";
  }
  if (!r.quiet_points.empty()) {
    h << "<h2>Quiet points</h2>\n<table>\n<tr><th>at</th><th>seconds</th><th>after</th><th>checks</th></tr>\n";
    for (const auto& q : r.quiet_points) {
      std::string results;
      for (const auto& c : q.checks)
        results += c.name + " " + to_string(c.status) +
                   (c.failed() ? " (" + std::to_string(c.count) + "): " + c.summary : "") + "; ";
      h << row({net::format_rfc3339(q.at, 3), num(std::chrono::duration<double>(q.at - r.started).count()), q.after,
                results});
    }
    h << "</table>\n";
  }
  if (r.system && (r.system->metrics_before || r.system->metrics_after)) h << metrics_html(*r.system);
  if (!r.resources.empty()) {
    h << "<h2>Stack components: RSS and open descriptors</h2>\n<table>\n<tr><th>component</th><th>samples</th><th>"
         "RSS first / last / max (KiB)</th><th>fds first / last / max</th></tr>\n";
    std::map<std::string, std::vector<const ResourceSample*>> by_component;
    for (const auto& sample : r.resources) by_component[sample.component].push_back(&sample);
    for (const auto& [component, list] : by_component) {
      std::int64_t rss_max = 0, fd_max = 0;
      for (const auto* sample : list) {
        rss_max = std::max(rss_max, sample->rss_kib);
        fd_max = std::max(fd_max, sample->fds);
      }
      h << row({component, std::to_string(list.size()),
                fmt::format("{} / {} / {}", list.front()->rss_kib, list.back()->rss_kib, rss_max),
                fmt::format("{} / {} / {}", list.front()->fds, list.back()->fds, fd_max)});
    }
    h << "</table>\n";
  }
  h << evidence_html(r);
  if (!r.notes.empty()) {
    h << "<h2>Notes</h2>\n<ul>\n";
    for (const auto& n : r.notes) h << "<li>" << escape_markup(n) << "</li>\n";
    h << "</ul>\n";
  }
  h << "<footer>written by faultline-harness " << escape_markup(r.faultline_version) << " (commit "
    << escape_markup(r.faultline_commit) << ")</footer>\n<script>" << kScript << "</script>\n</body>\n</html>\n";
  return h.str();
}

// Names from the scenario, pod names and errors from servers are escaped (faults::printable): each
// stays on its line and drives no terminal.
void print_summary(const Report& r, std::ostream& out) {
  using faults::printable;
  out << "\nfaultline: " << printable(r.scenario) << " on " << r.scheduler << " (seed " << r.seed << ")\n";
  out << fmt::format("{:<24} {:<9} {:<9} {:>7}  {}\n", "check", "expected", "result", "count", "summary");
  for (const auto& c : r.checks) {
    out << fmt::format("{:<24} {:<9} {:<9} {:>7}  {}\n", c.name, c.expected_violated ? "violated" : "ok",
                       to_string(c.status), c.count, printable(c.summary));
  }
  out << "pods: " << r.pods_created << " created at " << num(r.create_rate_achieved) << "/s, " << r.stats.bound_pods
      << " bound, " << r.stats.stranded_pods << " stranded";
  if (r.stats.queue_allocated_pods) out << ", queue books " << *r.stats.queue_allocated_pods;
  if (r.stats.phantom_allocations) out << ", " << *r.stats.phantom_allocations << " phantom allocations";
  out << "\n";
  for (const auto& st : r.steps) {
    out << "step " << printable(st.name) << " (" << st.kind << " " << printable(st.target) << ", +"
        << num(std::chrono::duration<double>(st.started - r.started).count())
        << "s): " << printable(st.error.empty() ? st.detail : "FAILED: " + st.error) << "\n";
  }
  if (r.system && r.system->metrics_after && r.system->metrics_after->error.empty())
    out << "metrics: " << r.system->metrics_after->samples.size() << " samples of " << r.system->metrics_series.size()
        << " listed series (report.html)\n";
  if (!r.error.empty()) out << "run failed: " << printable(r.error) << "\n";
  out << "verdict: " << to_string(r.verdict) << "\n";
}

}  // namespace faultline::harness
