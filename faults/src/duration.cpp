#include "faultline/faults/duration.hpp"

#include <cctype>
#include <limits>

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

std::optional<Duration> parse_duration(std::string_view text) {
  if (text.empty()) return std::nullopt;
  constexpr std::int64_t max_millis = std::numeric_limits<std::int64_t>::max() / 1000;
  std::int64_t total = 0;
  std::size_t i = 0;
  while (i < text.size()) {
    std::size_t digits_begin = i;
    std::int64_t number = 0;
    while (i < text.size() && is_digit(text[i])) {
      number = number * 10 + (text[i] - '0');
      if (number > max_millis) return std::nullopt;
      ++i;
    }
    if (i == digits_begin) return std::nullopt;
    std::size_t unit_begin = i;
    while (i < text.size() && !is_digit(text[i])) ++i;
    std::int64_t millis = unit_millis(text.substr(unit_begin, i - unit_begin));
    if (millis == 0 || number > (max_millis - total) / millis) return std::nullopt;
    total += number * millis;
  }
  return Duration{total};
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
