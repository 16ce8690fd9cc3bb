#pragma once
// RFC 3339 timestamps in UTC, the one codec of the project: the proxy's audit records, the
// harness's reports and the Kubernetes timestamps the harness reads.

#include <chrono>
#include <optional>
#include <string>
#include <string_view>

namespace faultline::net {

// "2026-11-30T14:48:19.123456Z": UTC, `fraction_digits` (0..9) digits of the second, truncated.
std::string format_rfc3339(std::chrono::system_clock::time_point t, unsigned fraction_digits);

// "YYYY-MM-DDTHH:MM:SS" with an optional fraction of 1..9 digits, then 'Z' (UTC only, as
// Kubernetes and the proxy write it). nullopt when malformed, when the date does not exist, or
// when it lies outside what a system_clock time point holds (about 1678..2261).
std::optional<std::chrono::system_clock::time_point> parse_rfc3339(std::string_view text);

}  // namespace faultline::net
