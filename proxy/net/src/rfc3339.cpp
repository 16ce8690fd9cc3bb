#include "faultline/net/rfc3339.hpp"
#include <cstdint>

#include <algorithm>
#include <charconv>

namespace faultline::net {

using namespace std::chrono;

std::string format_rfc3339(system_clock::time_point t, unsigned fraction_digits) {
  fraction_digits = std::min(fraction_digits, 9u);
  // Split into whole seconds and nanoseconds in integers first: near the clock's minimum, a day
  // (or second) boundary below t cannot be expressed in nanoseconds, and chrono's subtraction
  // would overflow.
  const std::int64_t ns = t.time_since_epoch().count();
  std::int64_t secs = ns / 1'000'000'000;
  std::int64_t sub = ns % 1'000'000'000;
  if (sub < 0) {
    sub += 1'000'000'000;
    --secs;
  }
  const sys_seconds whole{seconds{secs}};
  const auto day = floor<days>(whole);
  const year_month_day date{day};
  const hh_mm_ss time{duration_cast<nanoseconds>(whole - day) + nanoseconds{sub}};
  // Digits written in place (fmt::format here was a third of the audit record's encoding). A
  // nanosecond system_clock spans the years 1677 to 2262: the year has four digits.
  char text[40];
  char* p = text;
  auto put = [&p](unsigned long long v, unsigned width) {
    for (unsigned i = width; i-- > 0; v /= 10) p[i] = static_cast<char>('0' + v % 10);
    p += width;
  };
  put(static_cast<unsigned>(static_cast<int>(date.year())), 4);
  *p++ = '-';
  put(static_cast<unsigned>(date.month()), 2);
  *p++ = '-';
  put(static_cast<unsigned>(date.day()), 2);
  *p++ = 'T';
  put(static_cast<unsigned long long>(time.hours().count()), 2);
  *p++ = ':';
  put(static_cast<unsigned long long>(time.minutes().count()), 2);
  *p++ = ':';
  put(static_cast<unsigned long long>(time.seconds().count()), 2);
  if (fraction_digits > 0) {
    auto fraction = static_cast<unsigned long long>(time.subseconds().count());
    for (unsigned i = fraction_digits; i < 9; ++i) fraction /= 10;
    *p++ = '.';
    put(fraction, fraction_digits);
  }
  *p++ = 'Z';
  return std::string(text, p);
}

std::optional<system_clock::time_point> parse_rfc3339(std::string_view s) {
  // YYYY-MM-DDTHH:MM:SS is 19 characters; then [.f{1,9}] and Z.
  if (s.size() < 20 || s[4] != '-' || s[7] != '-' || s[10] != 'T' || s[13] != ':' || s[16] != ':' || s.back() != 'Z') {
    return std::nullopt;
  }
  auto number = [&](std::size_t pos, std::size_t len, int& out) {
    const char* first = s.data() + pos;
    if (!std::all_of(first, first + len, [](char c) { return c >= '0' && c <= '9'; })) return false;
    std::from_chars(first, first + len, out);
    return true;
  };
  int y, mo, d, h, mi, sec;
  if (!number(0, 4, y) || !number(5, 2, mo) || !number(8, 2, d) || !number(11, 2, h) || !number(14, 2, mi) ||
      !number(17, 2, sec)) {
    return std::nullopt;
  }
  long long nanos = 0;
  const std::string_view fraction = s.substr(19, s.size() - 20);
  if (!fraction.empty()) {
    if (fraction[0] != '.' || fraction.size() < 2 || fraction.size() > 10) return std::nullopt;
    for (std::size_t i = 1; i < 10; ++i) {
      if (i < fraction.size() && (fraction[i] < '0' || fraction[i] > '9')) return std::nullopt;
      nanos = nanos * 10 + (i < fraction.size() ? fraction[i] - '0' : 0);
    }
  }
  const year_month_day date{year{y}, month{static_cast<unsigned>(mo)}, day{static_cast<unsigned>(d)}};
  if (!date.ok() || h > 23 || mi > 59 || sec > 59) return std::nullopt;
  // Computed in seconds (no overflow for any four-digit year), then checked against what the
  // clock's nanosecond count holds.
  const sys_seconds whole = sys_days{date} + hours{h} + minutes{mi} + seconds{sec};
  constexpr auto lo = floor<seconds>(system_clock::time_point::min()) + seconds{1};
  constexpr auto hi = floor<seconds>(system_clock::time_point::max()) - seconds{1};
  if (whole < lo || whole > hi) return std::nullopt;
  return system_clock::time_point{duration_cast<system_clock::duration>(whole.time_since_epoch())} +
         duration_cast<system_clock::duration>(nanoseconds{nanos});
}

}  // namespace faultline::net
