// The Prometheus text format parser (faultline::prom_text) and the metrics scrape of the report:
// golden input as kube-scheduler serves it, malformed lines, bounds, an endpoint that cannot be read.
#include "faultline/harness/prom_text.hpp"

#include <gtest/gtest.h>

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <cmath>
#include <limits>
#include <thread>

#include <boost/asio/write.hpp>

#include "faultline/harness/async.hpp"
#include "faultline/harness/metrics_scrape.hpp"

namespace faultline::harness {
namespace {

using Labels = std::vector<std::pair<std::string, std::string>>;
using Names = std::set<std::string, std::less<>>;

// Lines of kube-scheduler's /metrics (v1.36), with the format's corner cases added.
constexpr std::string_view kGolden =
    R"(# HELP scheduler_schedule_attempts_total [STABLE] Number of attempts to schedule pods.
# TYPE scheduler_schedule_attempts_total counter
scheduler_schedule_attempts_total{profile="default-scheduler",result="scheduled"} 42
scheduler_schedule_attempts_total{profile="default-scheduler",result="unschedulable"} 3
# HELP scheduler_pending_pods [STABLE] Number of pending pods.
# TYPE scheduler_pending_pods gauge
scheduler_pending_pods{queue="active"} 0
scheduler_pending_pods{queue="backoff"} 1.5e+01
workqueue_adds_total{name="DynamicServingCertificateController"} 7
apiserver_storage_objects 12 1700000000000
odd_values{kind="nan"} NaN
odd_values{kind="inf"} +Inf
odd_values{kind="minus inf"} -Inf
odd_values { kind = "escapes" , text="a\\b\"c\nd" , } -0.25
odd_values{} 1e-3
)";

TEST(PromText, GoldenKeepsEveryLabelledSampleOfTheListedNames) {
  const PromText got = parse_prom_text(kGolden, Names{"scheduler_schedule_attempts_total", "scheduler_pending_pods"});
  EXPECT_EQ(got.malformed, 0u) << got.first_malformed;
  EXPECT_EQ(got.seen, 11u);
  EXPECT_EQ(got.dropped, 0u);
  ASSERT_EQ(got.samples.size(), 4u);
  EXPECT_EQ(got.samples[0].name, "scheduler_schedule_attempts_total");
  EXPECT_EQ(got.samples[0].labels, (Labels{{"profile", "default-scheduler"}, {"result", "scheduled"}}));
  EXPECT_EQ(got.samples[0].value, 42);
  EXPECT_EQ(got.samples[1].labels.at(1).second, "unschedulable");
  EXPECT_EQ(got.samples[1].value, 3);
  EXPECT_EQ(got.samples[2].name, "scheduler_pending_pods");
  EXPECT_EQ(got.samples[2].labels, (Labels{{"queue", "active"}}));
  EXPECT_EQ(got.samples[3].value, 15);
}

TEST(PromText, ValuesEscapesTimestampsAndEmptyLabelSets) {
  const PromText got = parse_prom_text(kGolden, Names{"odd_values", "apiserver_storage_objects"});
  EXPECT_EQ(got.malformed, 0u) << got.first_malformed;
  ASSERT_EQ(got.samples.size(), 6u);
  EXPECT_EQ(got.samples[0].name, "apiserver_storage_objects");
  EXPECT_TRUE(got.samples[0].labels.empty());
  EXPECT_EQ(got.samples[0].value, 12);  // the timestamp is not the value
  EXPECT_TRUE(std::isnan(got.samples[1].value));
  EXPECT_EQ(got.samples[2].value, std::numeric_limits<double>::infinity());
  EXPECT_EQ(got.samples[3].value, -std::numeric_limits<double>::infinity());
  EXPECT_EQ(got.samples[3].labels, (Labels{{"kind", "minus inf"}}));
  EXPECT_EQ(got.samples[4].labels, (Labels{{"kind", "escapes"}, {"text", "a\\b\"c\nd"}}));
  EXPECT_EQ(got.samples[4].value, -0.25);
  EXPECT_TRUE(got.samples[5].labels.empty());
  EXPECT_EQ(got.samples[5].value, 0.001);
  EXPECT_EQ(sample_key(got.samples[4]), R"(odd_values{kind="escapes",text="a\\b\"c\nd"})");
  EXPECT_EQ(format_sample_value(got.samples[1].value), "NaN");
  EXPECT_EQ(format_sample_value(got.samples[2].value), "+Inf");
  EXPECT_EQ(format_sample_value(got.samples[3].value), "-Inf");
  EXPECT_EQ(format_sample_value(0.1), "0.1");
}

TEST(PromText, MalformedLinesAreSkippedAndCounted) {
  const std::string body =
      "good 1\n"
      "no_value\n"                // line 2
      "bad{a=\"x\" 1\n"           // unterminated label set
      "bad{a=x} 1\n"              // unquoted value
      "bad{a=\"x\\q\"} 1\n"       // unknown escape
      "bad{a=\"1\",a=\"2\"} 1\n"  // repeated label
      "bad{1a=\"x\"} 1\n"         // label name
      "bad 1 2 3\n"               // text after the timestamp
      "bad ++1\n"
      "bad one\n"
      "bad 1 1.5\n"  // a timestamp is an integer
      "9bad 1\n"
      "bad{a=\"unterminated\n"
      "  # indented comment\n"
      "\n"
      "good{x=\"y\"} 2\r\n";
  const PromText got = parse_prom_text(body, Names{"good", "bad", "no_value"});
  EXPECT_EQ(got.malformed, 12u);
  EXPECT_EQ(got.first_malformed, "line 2: expected a value at column 9");
  EXPECT_EQ(got.seen, 2u);
  ASSERT_EQ(got.samples.size(), 2u);
  EXPECT_EQ(got.samples[1].labels, (Labels{{"x", "y"}}));
  EXPECT_EQ(got.samples[1].value, 2);
}

TEST(PromText, KeepsAtMostTheLimitAndCountsTheRest) {
  std::string body;
  for (int i = 0; i < 50; ++i) body += "m{i=\"" + std::to_string(i) + "\"} " + std::to_string(i) + "\n";
  const PromText got = parse_prom_text(body, Names{"m"}, 10);
  EXPECT_EQ(got.samples.size(), 10u);
  EXPECT_EQ(got.dropped, 40u);
  EXPECT_EQ(got.seen, 50u);
  EXPECT_EQ(got.samples.back().value, 9);
}

TEST(PromText, NoListedNamesKeepsNothingButCountsWhatWasServed) {
  const PromText got = parse_prom_text(kGolden, Names{});
  EXPECT_TRUE(got.samples.empty());
  EXPECT_EQ(got.seen, 11u);
}

// Nothing listens on the port: the scrape says why, it does not throw.
TEST(MetricsScrape, AnEndpointThatCannotBeReadIsAnErrorNotAThrow) {
  boost::asio::io_context ioc;
  boost::asio::ip::tcp::acceptor probe(ioc, {boost::asio::ip::make_address("127.0.0.1"), 0});
  const auto port = probe.local_endpoint().port();
  probe.close();
  for (const std::string scheme : {"http", "https"}) {
    const std::string url = scheme + "://127.0.0.1:" + std::to_string(port) + "/metrics";
    MetricsScrape got = run_blocking(ioc, scrape_metrics(url, {"up"}, std::chrono::seconds(5)));
    EXPECT_NE(got.error.find("connect"), std::string::npos) << got.error;
    EXPECT_TRUE(got.samples.empty());
  }
  MetricsScrape bad = run_blocking(ioc, scrape_metrics("ftp://127.0.0.1/metrics", {"up"}));
  EXPECT_NE(bad.error.find("expected an http:// or https:// URL"), std::string::npos) << bad.error;
}

// A one-shot HTTP server on 127.0.0.1: reads one request, writes `answer`, closes.
class OneAnswer {
 public:
  explicit OneAnswer(std::string answer)
      : acceptor_(ioc_, {boost::asio::ip::make_address("127.0.0.1"), 0}), answer_(std::move(answer)) {
    thread_ = std::thread([this] {
      boost::system::error_code ec;
      boost::asio::ip::tcp::socket socket(ioc_);
      acceptor_.accept(socket, ec);
      if (ec) return;
      std::string request;
      char buf[4096];
      while (request.find("\r\n\r\n") == std::string::npos) {
        const std::size_t n = socket.read_some(boost::asio::buffer(buf), ec);
        if (ec) return;
        request.append(buf, n);
      }
      boost::asio::write(socket, boost::asio::buffer(answer_), ec);
      socket.shutdown(boost::asio::ip::tcp::socket::shutdown_both, ec);
    });
  }
  ~OneAnswer() { thread_.join(); }
  std::string url() const {
    return "http://127.0.0.1:" + std::to_string(acceptor_.local_endpoint().port()) + "/metrics";
  }

 private:
  boost::asio::io_context ioc_;
  boost::asio::ip::tcp::acceptor acceptor_;
  std::string answer_;
  std::thread thread_;
};

TEST(MetricsScrape, ReadsTheListedSeriesOverHttp) {
  OneAnswer server("HTTP/1.1 200 OK\r\nContent-Type: text/plain; version=0.0.4\r\nContent-Length: " +
                   std::to_string(kGolden.size()) + "\r\nConnection: close\r\n\r\n" + std::string(kGolden));
  boost::asio::io_context ioc;
  MetricsScrape got = run_blocking(ioc, scrape_metrics(server.url(), {"scheduler_pending_pods"}));
  EXPECT_EQ(got.error, "");
  EXPECT_EQ(got.seen, 11u);
  ASSERT_EQ(got.samples.size(), 2u);
  EXPECT_EQ(got.samples[1].value, 15);
}

TEST(MetricsScrape, ANonOkAnswerOrABodyOverTheLimitIsAnError) {
  boost::asio::io_context ioc;
  {
    OneAnswer server("HTTP/1.1 403 Forbidden\r\nContent-Length: 9\r\nConnection: close\r\n\r\nforbidden");
    MetricsScrape got = run_blocking(ioc, scrape_metrics(server.url(), {"up"}));
    EXPECT_EQ(got.error, "HTTP 403: forbidden");
  }
  {
    // The declared length is over the limit: the body is never read.
    OneAnswer server("HTTP/1.1 200 OK\r\nContent-Length: " + std::to_string(kMaxMetricsBodyBytes + 1) + "\r\n\r\n");
    MetricsScrape got = run_blocking(ioc, scrape_metrics(server.url(), {"up"}));
    EXPECT_EQ(got.error, "GET " + server.url() +
                             ": the answer is over the limit of a metrics read (body 16777216 bytes (16 MiB), header "
                             "65536 bytes (64 KiB); fixed limits)");
  }
}

TEST(MetricsScrape, MissingSeriesAreTheListedOnesNoReadScrapeServed) {
  SystemRecord sys;
  sys.metrics_url = "https://127.0.0.1:1/metrics";
  sys.metrics_series = {"scheduler_pending_pods", "not_a_metric"};
  EXPECT_TRUE(missing_series(sys).empty());  // never read: nothing can be said
  sys.metrics_before = MetricsScrape{};
  sys.metrics_before->error = "connect: refused";
  EXPECT_TRUE(missing_series(sys).empty());
  sys.metrics_after = metrics_from_text(kGolden, sys.metrics_series);
  EXPECT_EQ(missing_series(sys), std::vector<std::string>{"not_a_metric"});
}

}  // namespace
}  // namespace faultline::harness
