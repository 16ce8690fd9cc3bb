#include "faultline/faults/duration.hpp"

#include <cctype>
#include <cstdint>

namespace faultline::faults {
namespace {

// Milliseconds per unit; 0 when `unit` is not one we accept.
std::int64_t unit_millis(std::string_view unit) {
  if (unit == "ms") return 1;
  if (unit == "s") return 1000;
  if (unit == "m") return 60 * 1000;
  if (unit == "h") return 60 * 60 * 1000;
  return 0;
}

bool is_digit(char c) { return std::isdigit(static_cast<unsigned char>(c)) != 0; }

}  // namespace

namespace {

struct Scan {
  bool valid = false;     // the text has the duration syntax
  bool too_long = false;  // ... and spells more than max_duration
  Duration value{0};
};

// Saturates at max_duration instead of overflowing, so any number of digits costs one pass.
Scan scan(std::string_view text) {
  if (text.empty()) return {};
  const std::int64_t limit = max_duration.count();
  std::int64_t total = 0;
  bool over = false;
  std::size_t i = 0;
  while (i < text.size()) {
    std::size_t digits_begin = i;
    std::int64_t number = 0;
    while (i < text.size() && is_digit(text[i])) {
      if (number <= limit) number = number * 10 + (text[i] - '0');
      ++i;
    }
    if (i == digits_begin) return {};
    std::size_t unit_begin = i;
    while (i < text.size() && !is_digit(text[i])) ++i;
    std::int64_t millis = unit_millis(text.substr(unit_begin, i - unit_begin));
    if (millis == 0) return {};
    if (over || number > (limit - total) / millis) over = true;
    else total += number * millis;
  }
  return {true, over, Duration{over ? 0 : total}};
}

}  // namespace

std::optional<Duration> parse_duration(std::string_view text) {
  Scan result = scan(text);
  if (!result.valid || result.too_long) return std::nullopt;
  return result.value;
}

std::string duration_problem(std::string_view text) {
  Scan result = scan(text);
  if (!result.valid)
    return "invalid duration \"" + std::string(text) + "\" (write a number and a unit: 250ms, 10s, 2m, 1h)";
  if (result.too_long)
    return "duration \"" + std::string(text) + "\" is longer than the maximum of " + format_duration(max_duration) +
           " (365 days)";
  return "";
}

std::string format_duration(Duration d) {
  std::int64_t ms = d.count();
  if (ms == 0) return "0s";
  std::string out;
  if (ms < 0) {
    out = "-";
    ms = -ms;
  }
  struct Unit {
    std::int64_t millis;
    const char* name;
  };
  for (Unit unit : {Unit{3600000, "h"}, Unit{60000, "m"}, Unit{1000, "s"}, Unit{1, "ms"}}) {
    if (ms >= unit.millis) {
      out += std::to_string(ms / unit.millis) + unit.name;
      ms %= unit.millis;
    }
  }
  return out;
}

}  // namespace faultline::faults
