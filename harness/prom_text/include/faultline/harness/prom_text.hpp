#pragma once
// The Prometheus text exposition format (version 0.0.4, what /metrics of the Kubernetes components
// and YuniKorn's /ws/v1/metrics serve), read for the samples of a few metric names. No I/O: the
// caller fetches the body. Bounded: the caller caps the body, the parser caps the samples it keeps.
// A line that is not a comment, not empty and not a well-formed sample is skipped and counted.
#include <cstddef>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace faultline::harness {

// One sample: metric name, labels in the order the line had them, value (NaN and +-Inf included).
struct MetricSample {
  std::string name;
  std::vector<std::pair<std::string, std::string>> labels;
  double value = 0;
};

struct PromText {
  std::vector<MetricSample> samples;  // the kept ones, in the order of the body
  std::size_t seen = 0;               // well-formed samples in the body, of any name
  std::size_t dropped = 0;            // samples of a wanted name past max_samples
  std::size_t malformed = 0;          // lines skipped
  std::string first_malformed;        // "line N: <why>" of the first of them
};

// Default cap on the samples kept from one scrape (all wanted names together).
inline constexpr std::size_t kMaxMetricSamples = 10'000;

// Keeps the samples whose name is in `wanted` (exact names; a histogram's are NAME_bucket,
// NAME_sum and NAME_count), at most `max_samples` of them.
PromText parse_prom_text(std::string_view body, const std::set<std::string, std::less<>>& wanted,
                         std::size_t max_samples = kMaxMetricSamples);

// The value as the format writes it: "NaN", "+Inf", "-Inf", or the shortest round-trip decimal.
std::string format_sample_value(double v);

// "name{a=\"x\",b=\"y\"}" (values escaped as the format escapes them), for messages and tables.
std::string sample_key(const MetricSample& s);

}  // namespace faultline::harness
