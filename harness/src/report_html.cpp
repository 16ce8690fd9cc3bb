// report.html: self-contained (inline CSS and SVG, no scripts, no external resources).
#include <fmt/format.h>
#include <algorithm>
#include <map>
#include <sstream>

#include "faultline/faults/printable.hpp"
#include "faultline/harness/report.hpp"
#include "faultline/net/rfc3339.hpp"
#include "markup.hpp"

namespace faultline::harness {
namespace {

using detail::escape_markup;
using detail::num;
using detail::row;

constexpr double kWidth = 900, kHeight = 320, kLeft = 60, kRight = 20, kTop = 20, kBottom = 40;

struct Scale {
  double t0, t1, ymax;
  double x(double s) const { return kLeft + (s - t0) / (t1 - t0) * (kWidth - kLeft - kRight); }
  double y(double v) const { return kHeight - kBottom - v / ymax * (kHeight - kTop - kBottom); }
};

std::string polyline(const Report& r, const Scale& sc, std::int64_t TimelinePoint::*field, const char* colour) {
  std::string pts;
  for (const auto& p : r.timeline) pts += num(sc.x(p.seconds)) + "," + num(sc.y(static_cast<double>(p.*field))) + " ";
  return "<polyline fill=\"none\" stroke=\"" + std::string(colour) + "\" stroke-width=\"2\" points=\"" + pts + "\"/>\n";
}

std::string timeline_svg(const Report& r) {
  if (r.timeline.empty()) return "<p>No pod events were observed, so there is no timeline.</p>\n";
  auto secs = [&](WallTime t) { return std::chrono::duration<double>(t - r.started).count(); };
  Scale sc{r.timeline.front().seconds, r.timeline.back().seconds, 1};
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
  std::ostringstream s;
  s << "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" << kWidth << "\" height=\"" << kHeight
    << "\" role=\"img\" aria-label=\"pods created, bound and running over time\">\n";
  for (const auto& w : r.fault_windows) {
    double x0 = sc.x(secs(w.first)), x1 = std::max(sc.x(secs(w.last)), x0 + 2);
    s << "<rect class=\"fault\" x=\"" << num(x0) << "\" y=\"" << kTop << "\" width=\"" << num(x1 - x0) << "\" height=\""
      << kHeight - kTop - kBottom << "\"><title>"
      << escape_markup(w.rule + " (" + w.action + "): " + std::to_string(w.requests) + " requests")
      << "</title></rect>\n";
    s << "<text x=\"" << num(x0 + 2) << "\" y=\"" << kTop + 12 << "\" class=\"faultlabel\">" << escape_markup(w.rule)
      << "</text>\n";
  }
  for (const auto& st : r.steps) {
    double x0 = sc.x(secs(st.started)), x1 = std::max(sc.x(secs(st.recovered.value_or(st.started))), x0 + 2);
    s << "<rect class=\"step\" x=\"" << num(x0) << "\" y=\"" << kTop << "\" width=\"" << num(x1 - x0) << "\" height=\""
      << kHeight - kTop - kBottom << "\"><title>" << escape_markup(st.name + " (" + st.kind + " " + st.target + ")")
      << "</title></rect>\n";
    s << "<text x=\"" << num(x0 + 2) << "\" y=\"" << kTop + 24 << "\" class=\"steplabel\">" << escape_markup(st.name)
      << "</text>\n";
  }
  for (const auto& q : r.quiet_points) {
    const bool ok = std::none_of(q.checks.begin(), q.checks.end(), [](const CheckResult& c) { return c.failed(); });
    const double x = sc.x(std::clamp(secs(q.at), sc.t0, sc.t1));
    s << "<line class=\"" << (ok ? "quiet" : "quietbad") << "\" x1=\"" << num(x) << "\" y1=\"" << kTop << "\" x2=\""
      << num(x) << "\" y2=\"" << kHeight - kBottom << "\"><title>"
      << escape_markup("quiet point after " + q.after + (ok ? ": invariants held" : ": VIOLATED"))
      << "</title></line>\n";
  }
  s << "<line x1=\"" << kLeft << "\" y1=\"" << kHeight - kBottom << "\" x2=\"" << kWidth - kRight << "\" y2=\""
    << kHeight - kBottom << "\" stroke=\"#444\"/>\n";
  s << "<line x1=\"" << kLeft << "\" y1=\"" << kTop << "\" x2=\"" << kLeft << "\" y2=\"" << kHeight - kBottom
    << "\" stroke=\"#444\"/>\n";
  for (int i = 0; i <= 5; ++i) {
    double t = sc.t0 + (sc.t1 - sc.t0) * i / 5, v = sc.ymax * i / 5;
    s << "<text x=\"" << num(sc.x(t)) << "\" y=\"" << kHeight - kBottom + 16 << "\" text-anchor=\"middle\">" << num(t)
      << "s</text>\n";
    s << "<text x=\"" << kLeft - 6 << "\" y=\"" << num(sc.y(v) + 4) << "\" text-anchor=\"end\">"
      << static_cast<long long>(v) << "</text>\n";
  }
  s << polyline(r, sc, &TimelinePoint::created, "#1f77b4") << polyline(r, sc, &TimelinePoint::bound, "#ff7f0e")
    << polyline(r, sc, &TimelinePoint::running, "#2ca02c");
  s << "</svg>\n<p class=\"legend\"><span style=\"color:#1f77b4\">&#9632; created</span> "
       "<span style=\"color:#ff7f0e\">&#9632; bound</span> <span style=\"color:#2ca02c\">&#9632; running</span> "
       "<span class=\"faultkey\">&#9632; fault fired</span> <span class=\"stepkey\">&#9632; node flap or "
       "component fault</span>"
    << (r.quiet_points.empty() ? ""
                               : " <span style=\"color:#2a7d2a\">| quiet point, invariants held</span> <span "
                                 "style=\"color:#b22222\">| quiet point, violated</span>")
    << " (seconds since the run started)</p>\n";
  return s.str();
}

std::string opt(const std::optional<std::int64_t>& v) { return v ? std::to_string(*v) : "n/a"; }

}  // namespace

std::string render_html(const Report& r) {
  std::ostringstream h;
  h << "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<title>faultline: "
    << escape_markup(r.scenario) << " — " << to_string(r.verdict) << "</title>\n<style>\n"
    << "body{font-family:sans-serif;margin:2em;max-width:1100px}table{border-collapse:collapse;margin:1em 0}"
       "td,th{border:1px solid #ccc;padding:4px 8px;text-align:left;vertical-align:top}"
       ".verdict{font-size:1.4em;font-weight:bold}.pass,.reproduced,.passed,.skipped{color:#2a7d2a}"
       ".fail,.error,.violated,.no-data{color:#b22222}rect.fault{fill:#d62728;fill-opacity:.18}"
       ".faultlabel{font-size:11px;fill:#d62728}.faultkey{color:#f2b8b8}svg text{font-size:11px}"
       "rect.step{fill:#9467bd;fill-opacity:.18}.steplabel{font-size:11px;fill:#9467bd}.stepkey{color:#c9b3de}"
       "line.quiet{stroke:#2a7d2a;stroke-dasharray:3,3}line.quietbad{stroke:#b22222;stroke-width:2}"
       "pre{background:#f6f6f6;padding:.5em;overflow-x:auto}\n</style>\n</head>\n<body>\n";
  h << "<h1>faultline report: " << escape_markup(r.scenario) << "</h1>\n";
  h << "<p class=\"verdict " << to_string(r.verdict) << "\">verdict: " << to_string(r.verdict) << "</p>\n";
  if (!r.error.empty()) h << "<p class=\"error\">run failed: " << escape_markup(r.error) << "</p>\n";
  h << "<table>\n"
    << row({"scheduler", r.scheduler}) << row({"seed", std::to_string(r.seed)})
    << row({"started", net::format_rfc3339(r.started, 3)}) << row({"finished", net::format_rfc3339(r.finished, 3)})
    << row({"last fault ended", r.faults_ended ? net::format_rfc3339(*r.faults_ended, 3) : "-"})
    << row({"settling began", r.settle_started ? net::format_rfc3339(*r.settle_started, 3) : "-"})
    << row({"nodes", std::to_string(r.nodes)}) << row({"pods created", std::to_string(r.pods_created)})
    << row({"creation rate achieved (pods/s)", num(r.create_rate_achieved)})
    << row({"bound / running / stranded / deleted pods",
            std::to_string(r.stats.bound_pods) + " / " + std::to_string(r.stats.running_pods) + " / " +
                std::to_string(r.stats.stranded_pods) + " / " + std::to_string(r.stats.deleted_pods)})
    << row({"queue allocated pods (YuniKorn)", opt(r.stats.queue_allocated_pods)})
    << row({"phantom allocations", opt(r.stats.phantom_allocations)})
    << row({"binds through the proxy: succeeded / failed",
            opt(r.stats.binds_succeeded) + " / " + opt(r.stats.binds_failed)});
  for (const auto& [k, v] : r.versions) h << row({"version: " + k, v});
  if (!r.yunikorn_build.empty()) h << row({"YuniKorn build", r.yunikorn_build});
  for (const auto& [k, v] : r.client_retries) h << row({"harness retries: " + k, std::to_string(v)});
  h << "</table>\n<h2>Timeline</h2>\n" << timeline_svg(r);
  h << "<h2>Checks</h2>\n<table>\n<tr><th>check</th><th>expected</th><th>result</th><th>count</th><th>summary</th></"
       "tr>\n";
  for (const auto& c : r.checks) {
    h << "<tr><td><a href=\"#" << escape_markup(c.name) << "\">" << escape_markup(c.name) << "</a></td><td>"
      << (c.expected_violated ? "violated" : "ok") << "</td><td class=\"" << to_string(c.status) << "\">"
      << to_string(c.status) << "</td><td>" << c.count << "</td><td>" << escape_markup(c.summary) << "</td></tr>\n";
  }
  h << "</table>\n<h2>Faults</h2>\n<table>\n<tr><th>rule</th><th>matched</th><th>fired</th><th>fired "
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
  h << "<h2>Evidence</h2>\n";
  for (const auto& c : r.checks) {
    h << "<h3 id=\"" << escape_markup(c.name) << "\">" << escape_markup(c.name) << "</h3>\n<pre>"
      << escape_markup(c.summary);
    for (const auto& e : c.evidence) h << "\n" << escape_markup(e);
    h << "</pre>\n";
  }
  if (!r.notes.empty()) {
    h << "<h2>Notes</h2>\n<ul>\n";
    for (const auto& n : r.notes) h << "<li>" << escape_markup(n) << "</li>\n";
    h << "</ul>\n";
  }
  h << "</body>\n</html>\n";
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
  if (!r.error.empty()) out << "run failed: " << printable(r.error) << "\n";
  out << "verdict: " << to_string(r.verdict) << "\n";
}

}  // namespace faultline::harness
