// A matrix sweep's results: Wilson intervals, the per-cell figures from real report.json text, and
// soak.json / soak.tsv / junit.xml / soak.html as a reader parses them.
#include "faultline/harness/sweep.hpp"

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>

#include <boost/json.hpp>

#include "faultline/harness/report.hpp"
#include "files.hpp"

namespace faultline::harness {
namespace {

namespace json = boost::json;

// Newcombe (1998), "Two-sided confidence intervals for the single proportion", Statistics in
// Medicine 17:857-872, Table I, method 3 (Wilson score interval without continuity correction).
TEST(Wilson, MatchesPublishedIntervals) {
  struct Known {
    std::uint64_t k, n;
    double low, high;
  };
  for (const Known& c : {Known{81, 263, 0.2553, 0.3662}, Known{15, 148, 0.0624, 0.1605}, Known{0, 20, 0.0, 0.1611},
                         Known{1, 29, 0.0061, 0.1718}}) {
    const Interval i = wilson_interval(c.k, c.n);
    EXPECT_NEAR(i.low, c.low, 0.00005) << c.k << "/" << c.n;
    EXPECT_NEAR(i.high, c.high, 0.00005) << c.k << "/" << c.n;
  }
  const Interval all = wilson_interval(3, 3);
  EXPECT_NEAR(all.low, 0.4385, 0.00005);
  EXPECT_DOUBLE_EQ(all.high, 1.0);
  const Interval none = wilson_interval(0, 0);
  EXPECT_EQ(none.low, 0.0);
  EXPECT_EQ(none.high, 1.0);
}

TEST(Median, OddEvenAndEmpty) {
  EXPECT_EQ(median({5, 1, 3}), 3.0);
  EXPECT_EQ(median({4, 1, 3, 10}), 3.5);
  EXPECT_FALSE(median({}).has_value());
}

// A report.json as faultline-harness run writes it (render_json of a Report).
std::string report(Verdict verdict, std::int64_t stranded, std::optional<std::int64_t> phantom, int fault_after_ms) {
  Report r;
  r.scenario = "s";
  r.verdict = verdict;
  r.started = WallTime{} + std::chrono::hours(1000);
  r.finished = r.started + std::chrono::seconds(90);
  r.armed = r.started + std::chrono::seconds(5);
  r.stats.stranded_pods = stranded;
  r.stats.phantom_allocations = phantom;
  r.fault_windows.push_back({"late", "reset", *r.armed + std::chrono::milliseconds(fault_after_ms + 500),
                             *r.armed + std::chrono::seconds(20), 3});
  r.fault_windows.push_back({"outage", "outage", *r.armed + std::chrono::milliseconds(fault_after_ms),
                             *r.armed + std::chrono::seconds(20), 9});
  if (verdict == Verdict::error) r.error = "a fault never fired";
  return render_json(r);
}

TEST(SweepRun, FiguresComeFromTheReport) {
  const SweepRun r = parse_run_report(report(Verdict::reproduced, 42, 7, 1500), 3);
  EXPECT_EQ(r.run, 3u);
  EXPECT_EQ(r.verdict, "reproduced");
  EXPECT_EQ(r.stranded, 42.0);
  EXPECT_EQ(r.phantom, 7.0);
  ASSERT_TRUE(r.first_fault_seconds.has_value());
  EXPECT_NEAR(*r.first_fault_seconds, 1.5, 0.002);  // the earliest window, from the arming
  EXPECT_NEAR(r.seconds.value_or(0), 90.0, 0.002);
  EXPECT_EQ(parse_run_report("not json", 1).verdict, "error");
}

SweepPlan two_by_two() {
  SweepPlan p;
  p.name = "window";
  p.scenario = "yunikorn-3355-outage.yaml";
  p.scheduler = "yunikorn";
  p.runs = 3;
  p.axes = {{"faults[0].when.afterMatches", {"0", "300"}}, {"faults[0].when.for", {"2s", "10s"}}};
  const char* ids[] = {"c001", "c002", "c003", "c004"};
  for (int i = 0; i < 4; ++i)
    p.cells.push_back(
        {ids[i],
         {{"faults[0].when.afterMatches", p.axes[0].values[i / 2]}, {"faults[0].when.for", p.axes[1].values[i % 2]}},
         "",
         {},
         "reproduced",
         {},
         0,
         ""});
  auto run = [](std::uint64_t n, Verdict v, std::int64_t stranded, int ms, const char* stack = "reused") {
    SweepRun r = parse_run_report(report(v, stranded, stranded / 2, ms), n);
    r.stack = stack;
    return r;
  };
  // c001: 3/3 reproduced; c002: 1 of 2 counted (one error); c003: none; c004: two runs missing.
  p.cells[0].runs = {run(1, Verdict::reproduced, 10, 1000, "fresh"), run(2, Verdict::reproduced, 30, 3000),
                     run(3, Verdict::reproduced, 20, 2000)};
  p.cells[1].runs = {run(1, Verdict::reproduced, 8, 1000), run(2, Verdict::fail, 0, 1000),
                     run(3, Verdict::error, 0, 1000, "fresh after unhealthy: scheduler not healthy")};
  p.cells[2].runs = {run(1, Verdict::fail, 0, 500), run(2, Verdict::fail, 0, 500), run(3, Verdict::fail, 0, 500)};
  SweepRun missing;
  missing.verdict = "missing";
  missing.run = 2;
  p.cells[3].runs = {run(1, Verdict::reproduced, 4, 100), missing, missing};
  p.cells[3].runs[2].run = 3;
  return p;
}

TEST(SweepSummary, RatesIntervalsMediansAndExpectations) {
  const SweepPlan plan = two_by_two();
  const SweepSummary s = summarize(plan);
  ASSERT_EQ(s.cells.size(), 4u);
  EXPECT_EQ(s.runs_total, 12u);
  EXPECT_EQ(s.runs_done, 10u);
  const CellSummary& a = s.cells[0];
  EXPECT_EQ(a.reproduced, 3u);
  EXPECT_EQ(a.counted, 3u);
  EXPECT_EQ(a.rate, 1.0);
  EXPECT_NEAR(a.interval.low, 0.4385, 0.00005);
  EXPECT_EQ(a.median_stranded, 20.0);
  EXPECT_EQ(a.median_phantom, 10.0);
  EXPECT_NEAR(a.median_first_fault_seconds.value_or(0), 2.0, 0.002);
  EXPECT_TRUE(a.as_expected);
  const CellSummary& b = s.cells[1];
  EXPECT_EQ(b.counted, 2u);  // the error run is not counted
  EXPECT_EQ(b.reproduced, 1u);
  EXPECT_EQ(b.rate, 0.5);
  EXPECT_EQ(b.fresh_stacks, 1u);
  EXPECT_FALSE(b.as_expected);
  EXPECT_EQ(s.cells[2].rate, 0.0);
  EXPECT_FALSE(s.cells[3].as_expected);  // runs missing
  EXPECT_EQ(s.cells[3].done, 1u);
}

TEST(SweepSummary, AControlCountsViolationsAsReproductions) {
  SweepPlan plan = two_by_two();
  for (auto& c : plan.cells) c.expected = "pass";
  const SweepSummary s = summarize(plan);
  EXPECT_EQ(s.cells[2].reproduced, 3u);  // three fail verdicts: invariants broke in a control
  EXPECT_EQ(s.cells[0].reproduced, 0u);
  EXPECT_FALSE(s.cells[0].as_expected);
}

TEST(SweepReports, JsonTsvJunitAndHtmlSayTheSame) {
  const SweepPlan plan = two_by_two();
  const SweepSummary s = summarize(plan);
  const json::object o = json::parse(render_sweep_json(s)).as_object();
  EXPECT_EQ(o.at("runsDone").to_number<std::uint64_t>(), 10u);
  const json::array& cells = o.at("cells").as_array();
  ASSERT_EQ(cells.size(), 4u);
  EXPECT_EQ(cells[1].at("rate").as_double(), 0.5);
  EXPECT_EQ(cells[1].at("runs").as_array()[2].at("stack").as_string(), "fresh after unhealthy: scheduler not healthy");
  EXPECT_EQ(cells[1].at("values").at("faults[0].when.for").as_string(), "10s");

  const std::string tsv = render_sweep_tsv(s);
  EXPECT_NE(tsv.find("c002\t0\t10s\t-\treproduced\t2\t1\t0.500\t0.095\t0.905\t"), std::string::npos) << tsv;

  const std::string junit = render_sweep_junit(s);
  EXPECT_NE(junit.find("tests=\"4\" failures=\"3\""), std::string::npos) << junit;
  EXPECT_NE(junit.find("<testcase classname=\"window\" name=\"c001 faults[0].when.afterMatches=0, "
                       "faults[0].when.for=2s\" time=\"270\"/>"),
            std::string::npos)
      << junit;
  EXPECT_NE(junit.find("expected reproduced in every one of 3 runs, got error x1, fail x1, reproduced x1"),
            std::string::npos)
      << junit;

  const std::string html = render_sweep_html(s);
  EXPECT_NE(html.find("<svg"), std::string::npos);
  EXPECT_EQ(html.find("<script"), std::string::npos);
  EXPECT_EQ(html.find("src="), std::string::npos);
  EXPECT_NE(html.find(">100% (3/3)</text>"), std::string::npos);  // heatmap cell c001
  EXPECT_NE(html.find(">50% (1/2)</text>"), std::string::npos);   // c002

  // soak.svg: the same heatmap, standalone (its own style), as a file of the sweep's directory.
  faultline::testing::TempDir dir{"sweep-svg"};
  write_sweep_reports(s, dir.path());
  std::ifstream in(dir.path() / "soak.svg");
  const std::string svg{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
  EXPECT_EQ(svg.rfind("<svg xmlns=\"http://www.w3.org/2000/svg\"", 0), 0u) << svg;
  EXPECT_NE(svg.find("<style>"), std::string::npos) << svg;
  EXPECT_LT(svg.find("<rect width=\"100%\" height=\"100%\" fill=\"#fff\"/>"), svg.find("<text")) << svg;
  // Embedded in soak.html, the page gives the chart its style and ground.
  EXPECT_EQ(html.find("<rect width=\"100%\""), std::string::npos);
  EXPECT_NE(svg.find(">100% (3/3)</text>"), std::string::npos) << svg;
  EXPECT_NE(svg.find(">50% (1/2)</text>"), std::string::npos) << svg;
  EXPECT_EQ(svg.substr(svg.size() - 7), "</svg>\n");
}

TEST(SweepReports, OneAxisIsALineChart) {
  SweepPlan plan = two_by_two();
  plan.axes.pop_back();
  plan.cells.resize(2);
  plan.cells[1].values[0].second = "300";
  for (auto& c : plan.cells) c.values.pop_back();
  const std::string html = render_sweep_html(summarize(plan));
  EXPECT_NE(html.find("<polyline"), std::string::npos);
  EXPECT_NE(html.find("<title>faults[0].when.afterMatches=0: 3/3</title></circle>"), std::string::npos) << html;
}

TEST(SweepPlan, JsonRoundTrip) {
  SweepPlan plan = two_by_two();
  plan.cells[0].cluster = "maxRequestsInflight=400";
  plan.cells[0].stack_args = {"--max-requests-inflight", "400"};
  for (auto& c : plan.cells) c.runs.clear();
  const SweepPlan back = parse_plan_json(plan_json(plan));
  EXPECT_EQ(plan_json(back), plan_json(plan));
  EXPECT_EQ(back.cells[0].stack_args, plan.cells[0].stack_args);
  EXPECT_EQ(back.axes[1].values, plan.axes[1].values);
  EXPECT_THROW(parse_plan_json("{}"), std::runtime_error);
}

// harness/matrices/<name>.svg (in docs/benchmarks.md) are the soak.svg of the measured sweeps kept in
// tests/data/harness/sweeps: drawn by this code from those results. FAULTLINE_UPDATE_CHARTS=1 rewrites
// them after a change to the charts.
TEST(SweepCharts, CommittedChartsAreCurrent) {
  namespace fs = std::filesystem;
  for (const std::string name : {"yunikorn-3355-window", "yunikorn-3355-window-paced"}) {
    const SweepPlan plan = read_sweep(fs::path(FAULTLINE_TEST_DATA_DIR) / "harness" / "sweeps" / name);
    const auto svg = render_sweep_svg(summarize(plan));
    ASSERT_TRUE(svg.has_value()) << name;
    const fs::path committed = fs::path(FAULTLINE_SOURCE_DIR) / "harness" / "matrices" / (name + ".svg");
    if (const char* update = std::getenv("FAULTLINE_UPDATE_CHARTS"); update != nullptr && std::string(update) == "1")
      std::ofstream(committed, std::ios::binary) << *svg;
    EXPECT_EQ(faultline::testing::slurp(committed), *svg)
        << committed << " is not what the chart code draws; FAULTLINE_UPDATE_CHARTS=1 ctest -R "
        << "unit.SweepCharts rewrites it";
  }
}

// The heatmap's layout comes from its labels: the row axis's name (two linked paths) is broken
// after its comma and kept left of the first column, whose header it used to be drawn over.
TEST(SweepCharts, HeatmapHasATitleALegendAndRoomForTheRowAxisName) {
  const SweepPlan plan =
      read_sweep(std::filesystem::path(FAULTLINE_TEST_DATA_DIR) / "harness" / "sweeps" / "yunikorn-3355-window");
  const std::string svg = render_sweep_svg(summarize(plan)).value();
  EXPECT_NE(svg.find("class=\"title\">Reproduction rate: yunikorn-3355-window</text>"), std::string::npos) << svg;
  EXPECT_NE(svg.find("fill=\"url(#heat-ramp)\""), std::string::npos) << svg;
  EXPECT_NE(svg.find(">no runs counted</text>"), std::string::npos) << svg;
  // x of the first column's header (centred) minus half its width stays right of the axis name's lines.
  const auto header = svg.find(">2s</text>");
  ASSERT_NE(header, std::string::npos);
  const auto x_at = svg.rfind("<text x=\"", header) + 9;
  const double header_left = std::stod(svg.substr(x_at)) - 10;
  const auto name_line = svg.find(">faults[0].when.afterMatches,</text>");
  ASSERT_NE(name_line, std::string::npos) << svg;
  EXPECT_NE(svg.find(">faults[1].when.afterMatches \u2193</text>"), std::string::npos) << svg;
  const double name_left = std::stod(svg.substr(svg.rfind("<text x=\"", name_line) + 9));
  EXPECT_LT(name_left + 29 * 12 * 0.65, header_left) << svg;  // 29 characters, bold 12px
}

}  // namespace
}  // namespace faultline::harness
