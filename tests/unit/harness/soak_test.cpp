// Long-run checks: the proxy's RSS/fd slope check, quiet-point summaries and what a quiet point
// checks. Samples and pods are built by hand: no clock, no /proc of a stack.
#include "faultline/harness/soak.hpp"

#include <gtest/gtest.h>
#include <unistd.h>

#include <boost/json.hpp>

#include "fixtures.hpp"

namespace faultline::harness {
namespace {

using namespace std::chrono_literals;
namespace json = boost::json;
using testing::make_pod;
using testing::put;

// One proxy sample a minute for `minutes` minutes; rss(i) and fds(i) give the values.
template <class Rss, class Fds>
std::vector<ResourceSample> proxy_samples(int minutes, Rss rss, Fds fds) {
  std::vector<ResourceSample> out;
  for (int i = 0; i <= minutes; ++i) {
    out.push_back({WallTime{} + std::chrono::minutes(i), "etcd", 40000 + 1000 * i, 20 + i});  // grows, not checked
    out.push_back({WallTime{} + std::chrono::minutes(i), kProxyComponent, rss(i), fds(i)});
  }
  return out;
}

const schema::ResourceChecks bounds{10s, 100, 0.5};

TEST(LeastSquares, SlopeOfALineAndOfNoise) {
  EXPECT_DOUBLE_EQ(*least_squares_slope({0, 1, 2, 3}, {5, 7, 9, 11}), 2.0);
  EXPECT_DOUBLE_EQ(*least_squares_slope({0, 1, 2, 3}, {1, 3, 1, 3}), 0.4);
  EXPECT_FALSE(least_squares_slope({1}, {1}).has_value());
  EXPECT_FALSE(least_squares_slope({2, 2}, {1, 5}).has_value());
}

TEST(ProxyResources, FlatProxyPassesWhileOtherComponentsGrow) {
  auto samples = proxy_samples(
      20, [](int i) { return 22000 + (i % 2) * 64; }, [](int) { return 31; });
  CheckResult c = check_proxy_resources(samples, bounds, "");
  EXPECT_EQ(c.status, CheckStatus::passed) << c.summary;
  EXPECT_NE(c.summary.find("proxy RSS 22000 -> 22000 KiB, fds 31 -> 31 over 20.0 min"), std::string::npos) << c.summary;
}

TEST(ProxyResources, GrowthInTheLastHalfIsAViolation) {
  // Flat for 10 minutes, then +500 KiB and +1 fd a minute.
  auto samples = proxy_samples(
      20, [](int i) { return 22000 + 500 * std::max(0, i - 10); }, [](int i) { return 31 + std::max(0, i - 10); });
  CheckResult c = check_proxy_resources(samples, bounds, "");
  EXPECT_EQ(c.status, CheckStatus::violated) << c.summary;
  EXPECT_EQ(c.count, 2);
  ASSERT_EQ(c.evidence.size(), 2u);
  EXPECT_EQ(c.evidence[0], "RSS slope over the last half: 500.0 KiB/min (bound 100.0)");
  EXPECT_EQ(c.evidence[1], "fd slope over the last half: 1.000 /min (bound 0.500)");
}

TEST(ProxyResources, WarmUpInTheFirstHalfIsNotCounted) {
  auto samples = proxy_samples(
      20, [](int i) { return 22000 + 2000 * std::min(i, 8); }, [](int i) { return 10 + 3 * std::min(i, 8); });
  EXPECT_EQ(check_proxy_resources(samples, bounds, "").status, CheckStatus::passed);
}

TEST(ProxyResources, MissingDataIsNotAPass) {
  auto samples = proxy_samples(
      20, [](int) { return 22000; }, [](int) { return 31; });
  CheckResult failed = check_proxy_resources(samples, bounds, "faultline-proxy (pid 4242): no VmRSS");
  EXPECT_EQ(failed.status, CheckStatus::no_data);
  EXPECT_NE(failed.summary.find("no VmRSS"), std::string::npos);
  EXPECT_EQ(check_proxy_resources({}, bounds, "").status, CheckStatus::no_data);
  EXPECT_EQ(check_proxy_resources(proxy_samples(
                                      3, [](int) { return 1; }, [](int) { return 1; }),
                                  bounds, "")
                .status,
            CheckStatus::no_data);  // 2 samples in the last half: no slope
}

TEST(ProxyResources, ReadsThisProcess) {
  ResourceSample s = read_process_resources(static_cast<int>(::getpid()), "self");
  EXPECT_GT(s.rss_kib, 0);
  EXPECT_GE(s.fds, 3);  // stdin, stdout, stderr
  EXPECT_THROW(read_process_resources(0, "nobody"), std::runtime_error);
}

TEST(QuietPoints, OnlyPodsCreatedBeforeTheCutoffAreChecked) {
  Observations obs;
  obs.pods.watched = true;
  put(obs, make_pod(1, "kwok-node-0", "Running"));
  put(obs, make_pod(2, "", "Pending"));  // created at 2 s, unbound
  put(obs, make_pod(9, "", "Pending"));  // created at 9 s, unbound: still scheduling at a cutoff of 5 s
  Observations settled = settled_before(obs, WallTime{} + 5s);
  EXPECT_EQ(settled.pods.pods.size(), 2u);
  CheckResult bound = check_pods_bound(settled);
  EXPECT_EQ(bound.status, CheckStatus::violated);
  EXPECT_EQ(bound.count, 1);
}

TEST(QuietPoints, AViolationIsReportedWithItsTime) {
  QuietPoint ok{WallTime{} + 100s, "the window of rule outage (last faulted request x)", {}};
  ok.checks.push_back({"pods-bound", CheckStatus::passed, 0, "all bound", {}, false});
  QuietPoint bad{WallTime{} + 400s, "the window of rule outage (last faulted request y)", {}};
  bad.checks.push_back({"pods-bound", CheckStatus::violated, 3, "3 live pods unbound", {"churn-00012"}, false});
  CheckResult c = summarize_quiet_points({ok, bad}, 0, 0, true, WallTime{});
  EXPECT_EQ(c.status, CheckStatus::violated);
  EXPECT_EQ(c.count, 1);
  ASSERT_EQ(c.evidence.size(), 1u);
  EXPECT_EQ(c.evidence[0],
            "400.0s (1970-01-01T00:06:40.000Z), after the window of rule outage (last faulted request y): "
            "pods-bound violated (3): 3 live pods unbound");
  EXPECT_EQ(summarize_quiet_points({ok}, 0, 0, true, WallTime{}).status, CheckStatus::passed);
  EXPECT_EQ(summarize_quiet_points({ok}, 7, 1, true, WallTime{}).status, CheckStatus::violated);  // beyond the cap
}

TEST(QuietPoints, NoQuietPointUnderFaultsIsNoData) {
  EXPECT_EQ(summarize_quiet_points({}, 0, 0, true, WallTime{}).status, CheckStatus::no_data);
  EXPECT_EQ(summarize_quiet_points({}, 0, 0, false, WallTime{}).status, CheckStatus::passed);
}

TEST(QuietPoints, ReportJsonCarriesQuietPointsAndSamples) {
  Report r;
  r.started = WallTime{};
  r.finished = WallTime{} + 600s;
  QuietPoint q{WallTime{} + 90s, "the window of rule outage (last faulted request z)", {}};
  q.checks.push_back({"pods-bound", CheckStatus::passed, 0, "all bound", {}, false});
  r.quiet_points.push_back(q);
  r.resources.push_back({WallTime{} + 10s, kProxyComponent, 22000, 31});
  r.timeline = {{0, 0, 0, 0}, {600, 10, 10, 10}};
  json::value doc = json::parse(render_json(r));
  const auto& quiet = doc.at("quietPoints").as_array();
  ASSERT_EQ(quiet.size(), 1u);
  EXPECT_EQ(quiet[0].at("seconds").as_double(), 90.0);
  EXPECT_EQ(quiet[0].at("checks").as_array()[0].at("name").as_string(), "pods-bound");
  const auto& sample = doc.at("resources").at("samples").as_array()[0].as_array();
  EXPECT_EQ(sample[1].as_string(), kProxyComponent);
  EXPECT_EQ(sample[2].as_int64(), 22000);
  EXPECT_EQ(sample[3].as_int64(), 31);
  const std::string html = render_html(r);
  EXPECT_NE(html.find("<h2>Quiet points</h2>"), std::string::npos);
  EXPECT_NE(html.find("class=\"quiet\""), std::string::npos);
}

}  // namespace
}  // namespace faultline::harness
