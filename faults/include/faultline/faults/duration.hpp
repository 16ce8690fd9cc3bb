#pragma once
// Durations as written in scenario files: one or more <integer><unit> groups, unit ms|s|m|h
// ("250ms", "10s", "2m", "1h", "1m30s").

#include <chrono>
#include <optional>
#include <string>
#include <string_view>

namespace faultline::faults {

using Duration = std::chrono::milliseconds;

// nullopt when `text` is not a valid duration.
std::optional<Duration> parse_duration(std::string_view text);

// Shortest exact spelling that parse_duration reads back ("1m30s", "250ms", "0s").
std::string format_duration(Duration d);

}  // namespace faultline::faults
