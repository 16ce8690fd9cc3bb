#pragma once
// Wall-clock times in reports and Kubernetes timestamps (RFC 3339, UTC).
#include <optional>
#include <string>
#include <string_view>

#include "faultline/harness/observations.hpp"

namespace faultline::harness {

// 2026-11-30T14:48:30.123Z
std::string format_time(WallTime t);
// Parses "2026-11-30T14:48:30Z" and "2026-11-30T14:48:30.123456Z"; nullopt when malformed.
std::optional<WallTime> parse_time(std::string_view rfc3339);

}  // namespace faultline::harness
