// report.html and soak.html as a person opens them: headless Chromium (scripts/install-deps) loads
// each page at 1280x800, takes a screenshot and dumps the DOM after a probe script has measured it.
// The probe (added to a copy of the page) records JavaScript errors, console errors and
// Content-Security-Policy violations, where the verdict is, SVG labels that overlap or stick out of
// their chart, lines wider than the page, table labels that wrap, resources the page loaded, and
// what the evidence filter shows. No cluster: the report is built here like a `make chaos` run's,
// the sweep pages from the measured sweeps in tests/data/harness/sweeps.
// FAULTLINE_REPORT_PAGES_DIR=DIR keeps the pages and screenshots in DIR (else they go, unless a test
// fails). FAULTLINE_CHROMIUM names another Chromium binary.
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <boost/json.hpp>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>

#include "faultline/harness/report.hpp"
#include "faultline/harness/sweep.hpp"
#include "faultline/net/certs.hpp"
#include "files.hpp"

namespace faultline::harness {
namespace {

namespace fs = std::filesystem;
namespace json = boost::json;

// Errors of any kind the page raises, collected from its first moment.
constexpr const char* kErrorHook =
    "<script>window.__errors=[];window.addEventListener('error',function(e){__errors.push('error: '+"
    "(e.message||e.type)+' '+(e.filename||(e.target&&(e.target.src||e.target.href))||'')+':'+(e.lineno||''))},true);"
    "window.addEventListener('unhandledrejection',function(e){__errors.push('rejection: '+e.reason)});"
    "document.addEventListener('securitypolicyviolation',function(e){__errors.push('csp: '+e.violatedDirective+' '+"
    "e.blockedURI)});var __ce=console.error;console.error=function(){__errors.push('console.error: '+"
    "Array.prototype.join.call(arguments,' '));__ce.apply(console,arguments)};</script>";

// Runs after the page's own script, at the end of <body>; writes its findings as JSON into
// <pre id="faultline-probe">.
constexpr const char* kProbe = R"JS(<script>(function(){
var out={errors:window.__errors,width:innerWidth,height:innerHeight};
var v=document.getElementById('verdict');
if(v){var r=v.getBoundingClientRect(),cs=getComputedStyle(v);out.verdict={text:v.textContent,top:r.top,bottom:r.bottom,
 left:r.left,right:r.right,fontPx:parseFloat(cs.fontSize),shown:cs.display!=='none'&&cs.visibility!=='hidden'};}
out.cards={};document.querySelectorAll('.card').forEach(function(c){var r=c.getBoundingClientRect();
 out.cards[c.id||c.textContent.slice(0,20)]={bottom:r.bottom,text:c.textContent};});
out.overlaps=[];out.outside=[];
document.querySelectorAll('svg').forEach(function(svg){var box=svg.getBoundingClientRect();
 var t=Array.prototype.map.call(svg.querySelectorAll('text'),function(e){return {e:e,r:e.getBoundingClientRect()};});
 t.forEach(function(a,i){if(a.r.left<box.left-0.5||a.r.right>box.right+0.5||a.r.top<box.top-0.5||a.r.bottom>box.bottom+0.5)
   out.outside.push(a.e.textContent);
  for(var j=i+1;j<t.length;j++){var b=t[j];
   if(a.r.left<b.r.right-1&&b.r.left<a.r.right-1&&a.r.top<b.r.bottom-1&&b.r.top<a.r.bottom-1)
    out.overlaps.push(a.e.textContent+' / '+b.e.textContent);}});});
out.faultLabels=Array.prototype.map.call(document.querySelectorAll('text.faultlabel'),function(e){return e.firstChild.textContent;});
out.scrollWidth=document.documentElement.scrollWidth;out.clientWidth=document.documentElement.clientWidth;
out.thLines=0;out.thWrapped=[];document.querySelectorAll('table.kv th').forEach(function(th){var g=document.createRange();
 g.selectNodeContents(th);var n=g.getClientRects().length;if(n>out.thLines)out.thLines=n;if(n>1)out.thWrapped.push(th.textContent);});
out.resources=performance.getEntriesByType('resource').map(function(e){return e.name;});
var f=document.getElementById('evidence-filter');
if(f){var ds=document.querySelectorAll('details.evidence');
 ds.forEach(function(d){d.open=true;});out.wideLines=[];out.evLines=0;
 document.querySelectorAll('.ev').forEach(function(l){out.evLines++;
  if(l.getBoundingClientRect().right>document.documentElement.clientWidth+0.5||l.scrollWidth>l.clientWidth+1)
   out.wideLines.push(l.textContent.slice(0,60));});
 ds.forEach(function(d){d.open=false;});
 f.value='burst-02977';f.dispatchEvent(new Event('input'));
 out.filter={shown:Array.prototype.filter.call(document.querySelectorAll('.ev'),function(l){return l.offsetParent!==null;})
  .map(function(l){return l.textContent;}),open:Array.prototype.filter.call(ds,function(d){return d.open;})
  .map(function(d){return d.id;}),count:document.getElementById('evidence-count').textContent};
 f.value='';f.dispatchEvent(new Event('input'));ds.forEach(function(d){d.open=false;});
 out.afterClear=document.getElementById('evidence-count').textContent;}
var p=document.createElement('pre');p.id='faultline-probe';p.textContent=JSON.stringify(out);document.body.appendChild(p);
})();</script>)JS";

std::optional<fs::path> find_chromium() {
  if (const char* env = std::getenv("FAULTLINE_CHROMIUM"); env != nullptr && *env != '\0') return fs::path(env);
  const char* path = std::getenv("PATH");
  std::string dirs = path != nullptr ? path : "/usr/bin:/bin";
  for (std::size_t from = 0; from <= dirs.size();) {
    const std::size_t colon = std::min(dirs.find(':', from), dirs.size());
    for (const char* name : {"chromium", "chromium-browser"}) {
      const fs::path candidate = fs::path(dirs.substr(from, colon - from)) / name;
      if (::access(candidate.c_str(), X_OK) == 0) return candidate;
    }
    from = colon + 1;
  }
  return std::nullopt;
}

struct Rendered {
  json::object probe;
  fs::path screenshot;
  std::string dom;
};

// The page with the error hook first in <head> and the probe last in <body>, loaded by Chromium.
Rendered render_in_chromium(const std::string& html, const fs::path& dir, const std::string& name) {
  const auto chromium = find_chromium();
  if (!chromium) throw std::runtime_error("chromium is not installed (scripts/install-deps installs it)");
  std::string page = html;
  const auto head = page.find("<head>");
  const auto body_end = page.rfind("</body>");
  if (head == std::string::npos || body_end == std::string::npos)
    throw std::runtime_error(name + ": no <head> or </body>");
  page.insert(body_end, kProbe);
  page.insert(head + 6, kErrorHook);
  net::write_file(dir / (name + ".html"), html);
  net::write_file(dir / (name + ".probed.html"), page);
  Rendered out;
  out.screenshot = dir / (name + ".png");
  const fs::path dom = dir / (name + ".dom.html"), log = dir / (name + ".chromium.log");
  const std::string cmd = "timeout 60 '" + chromium->string() +
                          "' --headless --no-sandbox --disable-gpu --no-first-run --disable-extensions "
                          "--disable-dev-shm-usage --disable-background-networking --disable-component-update "
                          "--hide-scrollbars --user-data-dir='" +
                          (dir / (name + ".profile")).string() + "' --window-size=1280,800 --screenshot='" +
                          out.screenshot.string() + "' --dump-dom 'file://" + (dir / (name + ".probed.html")).string() +
                          "' >'" + dom.string() + "' 2>'" + log.string() + "'";
  const int status = std::system(cmd.c_str());
  if (status != 0)
    throw std::runtime_error(name + ": chromium exited with status " + std::to_string(WEXITSTATUS(status)) + "; " +
                             faultline::testing::slurp(log));
  out.dom = faultline::testing::slurp(dom);
  const std::string open_tag = "<pre id=\"faultline-probe\">";
  const auto at = out.dom.find(open_tag);
  if (at == std::string::npos)
    throw std::runtime_error(name + ": the probe did not run; the DOM is in " + dom.string());
  const auto end = out.dom.find("</pre>", at);
  std::string text = out.dom.substr(at + open_tag.size(), end - at - open_tag.size());
  for (auto [from, to] :
       {std::pair<std::string, std::string>{"&quot;", "\""}, {"&lt;", "<"}, {"&gt;", ">"}, {"&amp;", "&"}}) {
    for (std::size_t p = text.find(from); p != std::string::npos; p = text.find(from, p + to.size()))
      text.replace(p, from.size(), to);
  }
  out.probe = json::parse(text).as_object();
  return out;
}

// What every page must pass: it rendered, raised no error, loaded nothing, fits the window's width,
// its SVG labels neither overlap nor stick out, its table labels do not wrap, and the verdict is
// on the first screen in large type.
void expect_readable(const Rendered& r, const std::string& verdict_text) {
  const json::object& p = r.probe;
  EXPECT_TRUE(p.at("errors").as_array().empty()) << json::serialize(p.at("errors"));
  EXPECT_TRUE(p.at("resources").as_array().empty()) << json::serialize(p.at("resources"));
  EXPECT_LE(p.at("scrollWidth").to_number<double>(), p.at("clientWidth").to_number<double>())
      << "the page is wider than the window";
  EXPECT_TRUE(p.at("overlaps").as_array().empty()) << json::serialize(p.at("overlaps"));
  EXPECT_TRUE(p.at("outside").as_array().empty()) << json::serialize(p.at("outside"));
  EXPECT_TRUE(p.at("thWrapped").as_array().empty()) << json::serialize(p.at("thWrapped"));
  ASSERT_TRUE(p.contains("verdict")) << "no #verdict element";
  const json::object& v = p.at("verdict").as_object();
  EXPECT_NE(std::string(v.at("text").as_string()).find(verdict_text), std::string::npos) << v.at("text");
  EXPECT_TRUE(v.at("shown").as_bool());
  EXPECT_GE(v.at("top").to_number<double>(), 0);
  EXPECT_LE(v.at("bottom").to_number<double>(), 800) << "the verdict is below the first screen";
  EXPECT_GE(v.at("fontPx").to_number<double>(), 28) << "the verdict is not in large type";
  std::ifstream png(r.screenshot, std::ios::binary);
  char magic[8] = {};
  png.read(magic, 8);
  EXPECT_EQ(std::string(magic + 1, 3), "PNG") << r.screenshot;
  EXPECT_GT(fs::file_size(r.screenshot), 20'000u) << "a screenshot of a blank page? " << r.screenshot;
}

class ReportPages : public ::testing::Test {
 protected:
  fs::path dir() {
    if (const char* keep = std::getenv("FAULTLINE_REPORT_PAGES_DIR"); keep != nullptr && *keep != '\0') {
      fs::create_directories(keep);
      return keep;
    }
    return tmp_.path();
  }
  faultline::testing::TempDir tmp_{"faultline-report-pages", faultline::testing::TempDir::Keep::on_failure};
};

// A report like `make chaos`'s (YUNIKORN-3355 reproduced): two fault windows 10 s apart, a
// YuniKorn build, long evidence lines.
Report chaos_like_report() {
  Report r;
  r.scenario = "yunikorn-3355-outage";
  r.scenario_file = "harness/scenarios/yunikorn-3355-outage.yaml";
  r.seed = 3355;
  r.scheduler = "yunikorn";
  r.verdict = Verdict::reproduced;
  r.versions = {{"kube-apiserver", "v1.33.5"}};
  r.yunikorn_build =
      R"({"yunikorn":"v1.9.0","module":"github.com/apache/yunikorn-k8shim","source":"module","version":"v1.9.0",)"
      R"("buildVersion":"v1.9.0-faultline","core":{"module":"github.com/apache/yunikorn-core","source":"module",)"
      R"("version":"v1.9.0"},"toolchain":"go1.24.4","binarySha256":)"
      R"("4f0c8e1d2b3a49e6c7d8f9a0b1c2d3e4f5a6b7c8d9e0f1a2b3c4d5e6f7a8b9c0"})";
  r.started = WallTime{} + std::chrono::hours(24 * 20000);
  r.finished = r.started + std::chrono::seconds(312);
  r.armed = r.started + std::chrono::seconds(6);
  r.nodes = 500;
  r.pods_created = 3050;
  r.create_rate_achieved = 1874.2;
  r.client_retries = {{"429", 12}};
  r.faults = {{"outage-mid-bind", 2950, 1210}, {"relist-after-outage", 3, 1}};
  r.fault_windows = {{"outage-mid-bind", "outage", r.started + std::chrono::milliseconds(8200),
                      r.started + std::chrono::milliseconds(18200), 1210},
                     {"relist-after-outage", "watch-gone", r.started + std::chrono::milliseconds(18300),
                      r.started + std::chrono::milliseconds(18300), 1}};
  for (int i = 0; i <= 200; ++i) {
    const double t = i * 1.5;
    const std::int64_t created = std::min<std::int64_t>(3050, static_cast<std::int64_t>(t * 400));
    const auto bound = std::min<std::int64_t>(created, t < 8     ? static_cast<std::int64_t>(t * 140)
                                                       : t < 140 ? 1150
                                                                 : 2150);
    r.timeline.push_back({t, created, bound, std::max<std::int64_t>(0, bound - 40)});
  }
  r.stats = {3050, 2150, 2110, 900, 0, 3050, 900, 1150, 1200};
  CheckResult bound{"pods-bound", CheckStatus::violated,
                    900,          "2150/3050 live pods bound and Running; 900 unbound, 0 bound but not Running",
                    {},           true};
  for (int i = 2000; i < 2049; ++i)
    bound.evidence.push_back("pod faultline/burst-0" + std::to_string(i + 977) +
                             " is Pending with empty spec.nodeName (uid 5b1c0c1e-" + std::to_string(i) +
                             "-4d6a-9a51-000000000001); its bind: POST "
                             "/api/v1/namespaces/faultline/pods/burst-0" +
                             std::to_string(i + 977) +
                             "/binding at 2026-12-06T20:41:08.412Z cut by the proxy (rule outage-mid-bind, connection "
                             "reset, no answer), never retried");
  bound.evidence.push_back("... (list capped at 50; count is exact)");
  CheckResult queue{"queue-accounting",
                    CheckStatus::violated,
                    900,
                    "root.default books 3050 pods, 2150 bound live pods: 900 phantom allocations",
                    {},
                    true};
  queue.evidence.push_back("queue root.default: allocatedResource.pods=3050, bound live pods=2150");
  queue.evidence.push_back(
      "phantom allocation burst-02977-allocation-key (pod faultline/burst-02977, app burst-1) "
      "on node kwok-node-417: the pod has no node");
  queue.evidence.push_back(
      "audit:{\"seq\":18422,\"ts\":\"2026-12-06T20:41:08.412Z\",\"rule\":\"outage-mid-bind\",\"action\":\"outage\","
      "\"verb\":\"create\",\"resource\":\"pods/binding\",\"path\":\"/api/v1/namespaces/faultline/pods/"
      "burst-02977/binding\",\"userAgent\":\"yunikorn-scheduler/v1.9.0\",\"bytesOut\":0,\"status\":null}");
  CheckResult orphans{
      "no-orphan-allocations", CheckStatus::passed, 0, "every allocation belongs to a live pod", {}, false};
  CheckResult deletes{
      "no-unexpected-deletes", CheckStatus::passed, 0, "no pod deleted by anyone but the harness", {}, false};
  r.checks = {bound, queue, orphans, deletes};
  r.notes = {"settle ended after 120 s with 900 pods still Pending"};
  return r;
}

TEST_F(ReportPages, ChaosReportAnswersWhatHappenedOnTheFirstScreen) {
  const Report report = chaos_like_report();
  const Rendered r = render_in_chromium(render_html(report), dir(), "report");
  expect_readable(r, "reproduced");
  const json::object& p = r.probe;
  // The numbers that matter, above the fold: stranded, phantom, faults fired, versions.
  for (const char* id : {"stranded", "phantom", "faults-fired", "versions"}) {
    ASSERT_TRUE(p.at("cards").as_object().contains(id)) << id;
    EXPECT_LE(p.at("cards").at(id).at("bottom").to_number<double>(), 800) << id << " is below the first screen";
  }
  EXPECT_NE(std::string(p.at("cards").at("stranded").at("text").as_string()).find("900"), std::string::npos);
  EXPECT_NE(std::string(p.at("cards").at("versions").at("text").as_string()).find("v1.33.5"), std::string::npos);
  // Both fault windows are named on the timeline (and, checked above, not over each other).
  EXPECT_EQ(json::serialize(p.at("faultLabels")), R"(["outage-mid-bind","relist-after-outage"])");
  // Evidence: every line within the page, and the filter finds one pod's lines and opens their blocks.
  EXPECT_EQ(p.at("evLines").to_number<int>(), 53);
  EXPECT_TRUE(p.at("wideLines").as_array().empty()) << json::serialize(p.at("wideLines"));
  const json::object& filter = p.at("filter").as_object();
  EXPECT_EQ(filter.at("shown").as_array().size(), 3u) << json::serialize(filter);
  EXPECT_EQ(json::serialize(filter.at("open")), R"(["pods-bound","queue-accounting"])");
  EXPECT_EQ(filter.at("count").as_string(), "3 of 53 lines match");
  EXPECT_EQ(p.at("afterClear").as_string(), "53 lines");
  // The YuniKorn build is a key/value table, not JSON.
  EXPECT_NE(r.dom.find("<th>core.version</th><td>v1.9.0</td>"), std::string::npos);
  EXPECT_EQ(r.dom.find("{&quot;yunikorn&quot;"), std::string::npos);
}

// A failed run with many fault windows close together, node flaps and quiet points: the labels
// take as many lanes as they need, the error text wraps, the verdict stays on the first screen.
TEST_F(ReportPages, ErrorReportWithCrowdedTimelineStaysReadable) {
  Report report = chaos_like_report();
  report.verdict = Verdict::error;
  report.error =
      "component fault apiserver-kill (kill kube-apiserver): kube-apiserver did not become healthy again within 60 s; "
      "its log ends: E1206 20:41:09.112 storage/cacher: failed to list *core.Pod: etcdserver: request timed out, "
      "possibly due to connection lost";
  report.fault_windows.clear();
  report.faults.clear();
  const char* rules[] = {"reset-binds",  "delay-lists", "drop-watch-events", "http-429-creates",
                         "stall-status", "goaway-h2",   "hang-node-updates", "respond-500-leases"};
  for (int i = 0; i < 8; ++i) {
    const auto first = report.started + std::chrono::milliseconds(20'000 + i * 1500);
    report.fault_windows.push_back({rules[i], "reset", first, first + std::chrono::seconds(4), 10 + i});
    report.faults.push_back({rules[i], 100, 10 + i});
  }
  report.steps = {{"flap", "nodeFlap", "kwok-node-3, kwok-node-7", report.started + std::chrono::seconds(21),
                   report.started + std::chrono::seconds(40), "deleted 2 of the 20 nodes asked for", ""},
                  {"apiserver-kill", "kill", "kube-apiserver", report.started + std::chrono::seconds(24), std::nullopt,
                   "", "kube-apiserver is not running"}};
  QuietPoint q;
  q.at = report.started + std::chrono::seconds(60);
  q.after = "the window of rule reset-binds";
  q.checks = {report.checks[0]};
  report.quiet_points = {q};
  const Rendered r = render_in_chromium(render_html(report), dir(), "error-report");
  expect_readable(r, "error");
  EXPECT_EQ(r.probe.at("faultLabels").as_array().size(), 8u);
}

TEST_F(ReportPages, SweepPagesShowTheHeatmapWithTitleAndLegend) {
  for (const char* name : {"yunikorn-3355-window", "yunikorn-3355-window-paced"}) {
    SCOPED_TRACE(name);
    const SweepPlan plan = read_sweep(fs::path(FAULTLINE_TEST_DATA_DIR) / "harness" / "sweeps" / name);
    const SweepSummary summary = summarize(plan);
    const Rendered r = render_in_chromium(render_sweep_html(summary), dir(), name);
    expect_readable(r, "cells as expected");
    EXPECT_NE(r.dom.find("Reproduction rate: " + std::string(name)), std::string::npos);
    EXPECT_NE(r.dom.find("url(#heat-ramp)"), std::string::npos);
  }
}

}  // namespace
}  // namespace faultline::harness
