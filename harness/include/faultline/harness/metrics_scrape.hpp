#pragma once
// Reads the system's Prometheus metrics endpoint (metrics.url of its system file) for the series it
// lists (metrics.series). docs/systems.md.
#include <boost/asio/awaitable.hpp>
#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include "faultline/harness/report.hpp"

namespace faultline::harness {

// The largest metrics body read: kube-controller-manager's /metrics is under 1 MiB.
inline constexpr std::uint64_t kMaxMetricsBodyBytes = std::uint64_t{16} * 1024 * 1024;

// GET `url` (http://, or https:// without verifying the certificate) and keep the samples of
// `series`. Never throws: an endpoint that cannot be read, answers other than 200 or sends more
// than kMaxMetricsBodyBytes gives a scrape with `error` set.
boost::asio::awaitable<MetricsScrape> scrape_metrics(std::string url, std::vector<std::string> series,
                                                     std::chrono::seconds timeout = std::chrono::seconds(10));

// The scrape of a body already read (the part of scrape_metrics after the GET).
MetricsScrape metrics_from_text(std::string_view body, const std::vector<std::string>& series);

}  // namespace faultline::harness
