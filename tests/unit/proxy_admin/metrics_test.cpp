#include "faultline/admin/metrics.hpp"
#include "faultline/admin/proxy_metrics.hpp"
#include "prometheus_text.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <thread>

namespace faultline::admin::metrics {
namespace {

using test::parse_exposition;
using L = std::map<std::string, std::string>;

TEST(Metrics, CountersRenderHelpTypeAndOneSamplePerLabelSet) {
  Registry r;
  auto& requests = r.counter("faultline_requests_total", "Requests.", {"verb", "code"});
  requests.with({"create", "201"}).inc();
  requests.with({"create", "201"}).inc(2);
  requests.with({"get", "200"}).inc();
  const auto text = r.render();
  const auto e = parse_exposition(text);
  EXPECT_EQ(e.type.at("faultline_requests_total"), "counter");
  EXPECT_EQ(e.help.at("faultline_requests_total"), "Requests.");
  EXPECT_EQ(e.samples.size(), 2u) << text;
  EXPECT_EQ(e.value("faultline_requests_total", L{{"verb", "create"}, {"code", "201"}}), 3);
  EXPECT_EQ(e.value("faultline_requests_total", L{{"verb", "get"}, {"code", "200"}}), 1);
}

TEST(Metrics, AFamilyWithNoSeriesYetStillHasHelpAndType) {
  Registry r;
  r.counter("faultline_faults_fired_total", "Faults.", {"rule"});
  EXPECT_EQ(r.render(), "# HELP faultline_faults_fired_total Faults.\n# TYPE faultline_faults_fired_total counter\n");
}

TEST(Metrics, LabelValuesAndHelpAreEscaped) {
  Registry r;
  const std::string nasty = "quote\" backslash\\ newline\n end";
  auto& c = r.counter("faultline_rule_matched_total", "Help with \\ and\nnewline.", {"rule"});
  c.with({nasty}).inc();
  const auto text = r.render();
  EXPECT_NE(text.find(R"(rule="quote\" backslash\\ newline\n end")"), std::string::npos) << text;
  const auto e = parse_exposition(text);
  EXPECT_EQ(e.value("faultline_rule_matched_total", L{{"rule", nasty}}), 1);
  EXPECT_EQ(e.help.at("faultline_rule_matched_total"), "Help with \\ and\nnewline.");
  EXPECT_EQ(escape_label_value("a\"b\\c\nd"), "a\\\"b\\\\c\\nd");
  EXPECT_EQ(escape_help("a\"b\\c\nd"), "a\"b\\\\c\\nd");  // quotes stay in HELP text
}

TEST(Metrics, GaugesGoUpDownAndNegative) {
  Registry r;
  Gauge& g = r.gauge("faultline_open_connections", "Open.").get();
  g.inc();
  g.inc(4);
  g.dec(2);
  EXPECT_EQ(parse_exposition(r.render()).value("faultline_open_connections"), 3);
  g.set(-7);
  const auto e = parse_exposition(r.render());
  EXPECT_EQ(e.type.at("faultline_open_connections"), "gauge");
  EXPECT_EQ(e.value("faultline_open_connections"), -7);
}

TEST(Metrics, HistogramBucketsAreCumulativeWithInfSumAndCount) {
  Registry r;
  Histogram& h = r.histogram("faultline_upstream_latency_seconds", "Latency.", {0.1, 1}).get();
  for (double v : {0.05, 0.1, 0.5, 5.0}) h.observe(v);  // 0.1 sits on a bound: le means <=
  const auto text = r.render();
  const auto e = parse_exposition(text);
  EXPECT_EQ(e.type.at("faultline_upstream_latency_seconds"), "histogram");
  EXPECT_EQ(e.value("faultline_upstream_latency_seconds_bucket", L{{"le", "0.1"}}), 2) << text;
  EXPECT_EQ(e.value("faultline_upstream_latency_seconds_bucket", L{{"le", "1"}}), 3);
  EXPECT_EQ(e.value("faultline_upstream_latency_seconds_bucket", L{{"le", "+Inf"}}), 4);
  EXPECT_DOUBLE_EQ(e.value("faultline_upstream_latency_seconds_sum"), 5.65);
  EXPECT_EQ(e.value("faultline_upstream_latency_seconds_count"), 4);
  // Bucket lines come in increasing le order, +Inf last, then _sum and _count.
  const auto inf = text.find("le=\"+Inf\"");
  EXPECT_LT(text.find("le=\"0.1\""), text.find("le=\"1\""));
  EXPECT_LT(text.find("le=\"1\""), inf);
  EXPECT_LT(inf, text.find("_sum"));
  EXPECT_LT(text.find("_sum"), text.find("_count"));
}

TEST(Metrics, HistogramLabelsComeBeforeLe) {
  Registry r;
  r.histogram("op_seconds", "Ops.", {1}, {"op"}).with({"bind"}).observe(NAN);
  const auto text = r.render();
  EXPECT_NE(text.find("op_seconds_bucket{op=\"bind\",le=\"1\"} 0\n"), std::string::npos) << text;
  // NaN counts in +Inf, as Prometheus' own client does.
  EXPECT_NE(text.find("op_seconds_bucket{op=\"bind\",le=\"+Inf\"} 1\n"), std::string::npos) << text;
  const auto e = parse_exposition(text);
  EXPECT_TRUE(std::isnan(e.value("op_seconds_sum", L{{"op", "bind"}})));
}

TEST(Metrics, BadNamesAndArityAreRejected) {
  Registry r;
  EXPECT_THROW(r.counter("1starts_with_digit", "x"), std::invalid_argument);
  EXPECT_THROW(r.counter("has-dash", "x"), std::invalid_argument);
  EXPECT_THROW(r.counter("ok_total", "x", {"__reserved"}), std::invalid_argument);
  EXPECT_THROW(r.counter("ok_total", "x", {"a", "a"}), std::invalid_argument);
  EXPECT_THROW(r.counter("ok_total", "x", {"bad:label"}), std::invalid_argument);
  EXPECT_THROW(r.histogram("h_seconds", "x", {1}, {"le"}), std::invalid_argument);
  EXPECT_THROW(r.histogram("h_seconds", "x", {}), std::invalid_argument);
  EXPECT_THROW(r.histogram("h_seconds", "x", {1, 1}), std::invalid_argument);
  EXPECT_THROW(r.histogram("h_seconds", "x", {1, INFINITY}), std::invalid_argument);
  auto& c = r.counter("ok_total", "x", {"a"});
  EXPECT_THROW(r.counter("ok_total", "again"), std::invalid_argument);
  EXPECT_THROW(c.with({}), std::invalid_argument);
  EXPECT_THROW(c.with({"1", "2"}), std::invalid_argument);
  EXPECT_TRUE(valid_metric_name("ns:sub_metric_total"));
}

TEST(Metrics, NumbersUsePrometheusSpelling) {
  EXPECT_EQ(format_value(0.005), "0.005");
  EXPECT_EQ(format_value(1), "1");
  EXPECT_EQ(format_value(2.5), "2.5");
  EXPECT_EQ(format_value(INFINITY), "+Inf");
  EXPECT_EQ(format_value(-INFINITY), "-Inf");
  EXPECT_EQ(format_value(NAN), "NaN");
}

TEST(Metrics, ConcurrentUpdatesAreAllCounted) {
  Registry r;
  auto& c = r.counter("c_total", "x", {"t"});
  Histogram& h = r.histogram("h", "x", {0.5}).get();
  constexpr int kThreads = 4;
  constexpr int kPerThread = 20000;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < kPerThread; ++i) {
        c.with({"shared"}).inc();
        c.with({std::to_string(t)}).inc();  // series created while others are looked up
        h.observe(i % 2 ? 1.0 : 0.25);
      }
    });
  }
  std::thread scraper([&] {
    for (int i = 0; i < 50; ++i) parse_exposition(r.render());  // scraping mid-update stays valid
  });
  for (auto& t : threads) t.join();
  scraper.join();
  const auto e = parse_exposition(r.render());
  EXPECT_EQ(e.value("c_total", L{{"t", "shared"}}), kThreads * kPerThread);
  for (int t = 0; t < kThreads; ++t) EXPECT_EQ(e.value("c_total", L{{"t", std::to_string(t)}}), kPerThread);
  EXPECT_EQ(e.value("h_count"), kThreads * kPerThread);
  EXPECT_EQ(e.value("h_bucket", L{{"le", "0.5"}}), kThreads * kPerThread / 2);
  EXPECT_DOUBLE_EQ(e.value("h_sum"), kThreads * kPerThread / 2 * 1.25);
}

TEST(ProxyMetrics, ExposesTheProxyMetricSet) {
  ProxyMetrics m;
  m.request_done("create", "pods/binding", 201);
  m.request_done("create", "pods/binding", 201);
  m.request_done("create", "pods/binding", 0);  // connection cut before any status
  m.rule_matched("outage-mid-bind");
  m.fault_fired("outage-mid-bind", "outage");
  m.upstream_latency(std::chrono::milliseconds(250));
  m.upstream_latency(std::chrono::microseconds(700));
  m.open_connections.inc();
  m.open_connections.inc();
  m.open_connections.dec();
  m.open_watches.inc();

  const auto e = parse_exposition(m.render());
  EXPECT_EQ(e.type.at("faultline_requests_total"), "counter");
  EXPECT_EQ(e.type.at("faultline_faults_fired_total"), "counter");
  EXPECT_EQ(e.type.at("faultline_rule_matched_total"), "counter");
  EXPECT_EQ(e.type.at("faultline_upstream_latency_seconds"), "histogram");
  EXPECT_EQ(e.type.at("faultline_open_connections"), "gauge");
  EXPECT_EQ(e.type.at("faultline_open_watches"), "gauge");

  EXPECT_EQ(e.value("faultline_requests_total", L{{"verb", "create"}, {"resource", "pods/binding"}, {"code", "201"}}),
            2);
  EXPECT_EQ(e.value("faultline_requests_total", L{{"verb", "create"}, {"resource", "pods/binding"}, {"code", "none"}}),
            1);
  EXPECT_EQ(e.value("faultline_rule_matched_total", L{{"rule", "outage-mid-bind"}}), 1);
  EXPECT_EQ(e.value("faultline_faults_fired_total", L{{"rule", "outage-mid-bind"}, {"action", "outage"}}), 1);
  EXPECT_EQ(e.value("faultline_upstream_latency_seconds_bucket", L{{"le", "0.001"}}), 1);
  EXPECT_EQ(e.value("faultline_upstream_latency_seconds_bucket", L{{"le", "0.1"}}), 1);
  EXPECT_EQ(e.value("faultline_upstream_latency_seconds_bucket", L{{"le", "0.25"}}), 2);
  EXPECT_EQ(e.value("faultline_upstream_latency_seconds_bucket", L{{"le", "+Inf"}}), 2);
  EXPECT_DOUBLE_EQ(e.value("faultline_upstream_latency_seconds_sum"), 0.2507);
  EXPECT_EQ(e.value("faultline_open_connections"), 1);
  EXPECT_EQ(e.value("faultline_open_watches"), 1);
}

TEST(ProxyMetrics, ClientChosenResourcesCannotGrowTheSeriesWithoutBound) {
  // Any path segment is a resource to the classifier, so a client can invent new ones forever.
  ProxyMetrics m;
  const std::size_t invented = ProxyMetrics::kMaxResources + 100;
  for (std::size_t i = 0; i < invented; ++i) m.request_done("get", "r" + std::to_string(i), 404);
  m.request_done("get", "r0", 404);  // one that has a series already keeps it
  m.request_done("get", std::string(100000, 'x'), 404);
  const auto e = parse_exposition(m.render());
  std::size_t series = 0;
  for (const auto& sample : e.samples) series += sample.name == "faultline_requests_total";
  EXPECT_EQ(series, ProxyMetrics::kMaxResources + 1);
  EXPECT_EQ(e.value("faultline_requests_total", L{{"verb", "get"}, {"resource", "r0"}, {"code", "404"}}), 2);
  EXPECT_EQ(e.value("faultline_requests_total", L{{"verb", "get"}, {"resource", "_other"}, {"code", "404"}}), 101);
}

// request_done remembers the series of the thread's last request: each request still counts on
// its own series, whichever request came before it and whichever ProxyMetrics counted it.
TEST(ProxyMetrics, EachRequestCountsOnItsOwnSeriesWhateverCameBefore) {
  ProxyMetrics m;
  ProxyMetrics other;  // another proxy's metrics on the same thread (the cache is per thread)
  m.request_done("get", "pods", 200);
  m.request_done("get", "pods", 200);
  m.request_done("get", "pods", 404);
  m.request_done("list", "pods", 200);
  m.request_done("get", "nodes", 200);
  other.request_done("get", "nodes", 200);
  m.request_done("get", "nodes", 200);
  m.request_done("get", "pods", 0);
  m.request_done("get", "pods", 200);
  const auto e = parse_exposition(m.render());
  auto count = [&](const char* verb, const char* resource, const char* code) {
    return e.value("faultline_requests_total", L{{"verb", verb}, {"resource", resource}, {"code", code}});
  };
  EXPECT_EQ(count("get", "pods", "200"), 3);
  EXPECT_EQ(count("get", "pods", "404"), 1);
  EXPECT_EQ(count("get", "pods", "none"), 1);
  EXPECT_EQ(count("list", "pods", "200"), 1);
  EXPECT_EQ(count("get", "nodes", "200"), 2);
  const auto o = parse_exposition(other.render());
  EXPECT_EQ(o.value("faultline_requests_total", L{{"verb", "get"}, {"resource", "nodes"}, {"code", "200"}}), 1);
}

TEST(Metrics, LabelValuesAreValidUtf8) {
  Registry r;
  r.counter("c_total", "h", {"resource"}).with({"caf\xe9\xff"}).inc();
  const std::string text = r.render();
  EXPECT_NE(text.find("resource=\"caf\xEF\xBF\xBD\xEF\xBF\xBD\""), std::string::npos) << text;
}

}  // namespace
}  // namespace faultline::admin::metrics
