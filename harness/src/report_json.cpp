#include <boost/json.hpp>
#include <fstream>

#include "faultline/harness/report.hpp"
#include "faultline/harness/time_format.hpp"

namespace faultline::harness {
namespace json = boost::json;
namespace {

json::value optional_int(const std::optional<std::int64_t>& v) {
    return v ? json::value(*v) : json::value(nullptr);
}

json::object check_json(const CheckResult& c) {
    json::array evidence;
    for (const auto& e : c.evidence) evidence.emplace_back(e);
    return {{"name", c.name},
            {"ok", !c.failed()},
            {"status", to_string(c.status)},
            {"expected", c.expectedViolated ? "violated" : "ok"},
            {"count", c.count},
            {"summary", c.summary},
            {"evidence", std::move(evidence)}};
}

}  // namespace

std::string render_json(const Report& r) {
    json::object versions;
    for (const auto& [k, v] : r.versions) versions[k] = v;
    json::object retries;
    for (const auto& [k, v] : r.clientRetries) retries[k] = v;
    json::array faults;
    for (const auto& f : r.faults) faults.push_back(json::object{{"rule", f.rule}, {"matched", f.matched}, {"injected", f.injected}});
    json::array windows;
    for (const auto& w : r.faultWindows) {
        windows.push_back(json::object{{"rule", w.rule}, {"action", w.action}, {"first", format_time(w.first)},
                                       {"last", format_time(w.last)}, {"requests", w.requests}});
    }
    json::array checks;
    for (const auto& c : r.checks) checks.push_back(check_json(c));
    json::array timeline;
    for (const auto& p : r.timeline) timeline.push_back(json::array{p.seconds, p.created, p.bound, p.running});
    json::array notes;
    for (const auto& n : r.notes) notes.emplace_back(n);
    double duration = std::chrono::duration<double>(r.finished - r.started).count();
    json::object cluster{{"scheduler", r.scheduler}, {"versions", std::move(versions)}};
    if (!r.yunikornBuild.empty()) cluster["yunikornBuild"] = json::parse(r.yunikornBuild);
    json::object doc{
        {"scenario", r.scenario},
        {"scenarioFile", r.scenarioFile},
        {"seed", r.seed},
        {"verdict", to_string(r.verdict)},
        {"error", r.error.empty() ? json::value(nullptr) : json::value(r.error)},
        {"started", format_time(r.started)},
        {"finished", format_time(r.finished)},
        {"durationSeconds", duration},
        {"cluster", std::move(cluster)},
        {"workload", json::object{{"nodes", r.nodes}, {"podsCreated", r.podsCreated},
                                  {"createRateAchieved", r.createRateAchieved}}},
        {"clientRetries", std::move(retries)},
        {"faults", std::move(faults)},
        {"faultWindows", std::move(windows)},
        {"checks", std::move(checks)},
        {"stats", json::object{{"pods", r.stats.pods},
                               {"boundPods", r.stats.boundPods},
                               {"runningPods", r.stats.runningPods},
                               {"strandedPods", r.stats.strandedPods},
                               {"deletedPods", r.stats.deletedPods},
                               {"queueAllocatedPods", optional_int(r.stats.queueAllocatedPods)},
                               {"phantomAllocations", optional_int(r.stats.phantomAllocations)},
                               {"bindsSucceeded", optional_int(r.stats.bindsSucceeded)},
                               {"bindsFailed", optional_int(r.stats.bindsFailed)}}},
        {"timeline", json::object{{"columns", json::array{"seconds", "created", "bound", "running"}},
                                  {"points", std::move(timeline)}}},
        {"notes", std::move(notes)},
    };
    return json::serialize(doc) + "\n";
}

namespace {
void write_file(const std::filesystem::path& path, const std::string& text) {
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out << text;
    out.close();
    if (!out) throw std::runtime_error("cannot write " + path.string());
}
}  // namespace

void write_reports(const Report& r, const std::filesystem::path& dir) {
    std::filesystem::create_directories(dir);
    write_file(dir / "report.json", render_json(r));
    write_file(dir / "junit.xml", render_junit(r));
    write_file(dir / "report.html", render_html(r));
}

}  // namespace faultline::harness
