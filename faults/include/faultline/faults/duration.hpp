#pragma once
// Durations as written in scenario files: one or more <integer><unit> groups, unit ms|s|m|h
// ("250ms", "10s", "2m", "1h", "1m30s").

#include <chrono>
#include <optional>
#include <string>
#include <string_view>

namespace faultline::faults {

using Duration = std::chrono::milliseconds;

// The longest duration anything accepts: a year (8760h). Deadlines are computed on a nanosecond
// steady clock, whose range is about 292 years from boot; keeping every duration (and so `at` plus
// `for`, now plus an outage, a delay plus its jitter) this far inside it means a deadline never
// wraps into the past, and a Retry-After in whole seconds always fits an int.
inline constexpr Duration max_duration = std::chrono::hours(24 * 365);

// nullopt when `text` is not a valid duration or is longer than max_duration.
std::optional<Duration> parse_duration(std::string_view text);

// Why `text` is not a duration parse_duration accepts, as error message text (`invalid duration
// "10" (write ...)`, `duration "9000h" is longer than the maximum of 8760h (365 days)`); "" when it is one.
std::string duration_problem(std::string_view text);

// Shortest exact spelling that parse_duration reads back ("1m30s", "250ms", "0s").
std::string format_duration(Duration d);

}  // namespace faultline::faults
