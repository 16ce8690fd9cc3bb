#include "faultline/harness/time_format.hpp"

#include <cstdio>
#include <ctime>

namespace faultline::harness {

std::string format_time(WallTime t) {
    auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(t.time_since_epoch()).count();
    std::time_t secs = static_cast<std::time_t>(ms / 1000);
    std::tm tm{};
    gmtime_r(&secs, &tm);
    char buf[96];
    std::snprintf(buf, sizeof buf, "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday,
                  tm.tm_hour, tm.tm_min, tm.tm_sec, static_cast<int>(ms % 1000));
    return buf;
}

std::optional<WallTime> parse_time(std::string_view s) {
    std::tm tm{};
    int consumed = 0;
    std::string text(s);
    if (std::sscanf(text.c_str(), "%4d-%2d-%2dT%2d:%2d:%2d%n", &tm.tm_year, &tm.tm_mon, &tm.tm_mday, &tm.tm_hour,
                    &tm.tm_min, &tm.tm_sec, &consumed) != 6) {
        return std::nullopt;
    }
    tm.tm_year -= 1900;
    tm.tm_mon -= 1;
    std::chrono::microseconds fraction{0};
    std::size_t pos = static_cast<std::size_t>(consumed);
    if (pos < text.size() && text[pos] == '.') {
        long long scale = 100000;
        for (++pos; pos < text.size() && text[pos] >= '0' && text[pos] <= '9'; ++pos) {
            fraction += std::chrono::microseconds((text[pos] - '0') * scale);
            scale /= 10;
        }
    }
    if (pos >= text.size() || text[pos] != 'Z') return std::nullopt;  // Kubernetes always writes UTC
    std::time_t secs = timegm(&tm);
    return WallClock::from_time_t(secs) + std::chrono::duration_cast<WallClock::duration>(fraction);
}

}  // namespace faultline::harness
