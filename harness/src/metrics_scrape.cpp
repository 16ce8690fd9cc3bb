#include "faultline/harness/metrics_scrape.hpp"

#include <set>
#include <stdexcept>

#include "faultline/harness/http_plain.hpp"

namespace faultline::harness {

MetricsScrape metrics_from_text(std::string_view body, const std::vector<std::string>& series) {
  const std::set<std::string, std::less<>> wanted(series.begin(), series.end());
  PromText parsed = parse_prom_text(body, wanted);
  MetricsScrape out;
  out.at = WallClock::now();
  out.samples = std::move(parsed.samples);
  out.seen = parsed.seen;
  out.dropped = parsed.dropped;
  out.malformed = parsed.malformed;
  out.first_malformed = std::move(parsed.first_malformed);
  return out;
}

boost::asio::awaitable<MetricsScrape> scrape_metrics(std::string url, std::vector<std::string> series,
                                                     std::chrono::seconds timeout) {
  ReadLimits limits;
  limits.max_body_bytes = kMaxMetricsBodyBytes;
  std::string error;
  try {
    PlainResponse res = co_await http_call("GET", url, {}, {}, {}, timeout, limits);
    if (res.status == 200) co_return metrics_from_text(res.body, series);
    error = "HTTP " + std::to_string(res.status) + ": " + res.body.substr(0, 200);
  } catch (const LimitError&) {
    error = "GET " + url + ": the answer is over the limit of a metrics read (body " +
            byte_limit_text(kMaxMetricsBodyBytes) + ", header " + byte_limit_text(limits.max_header_bytes) +
            "; fixed limits)";
  } catch (const std::exception& e) {
    error = e.what();
  }
  MetricsScrape out;
  out.at = WallClock::now();
  out.error = std::move(error);
  co_return out;
}

std::vector<std::string> missing_series(const SystemRecord& s) {
  std::set<std::string, std::less<>> served;
  bool read = false;
  for (const auto* scrape : {&s.metrics_before, &s.metrics_after}) {
    if (!*scrape || !(*scrape)->error.empty()) continue;
    read = true;
    for (const auto& sample : (*scrape)->samples) served.insert(sample.name);
  }
  std::vector<std::string> out;
  if (!read) return out;
  for (const auto& name : s.metrics_series)
    if (!served.contains(name)) out.push_back(name);
  return out;
}

}  // namespace faultline::harness
