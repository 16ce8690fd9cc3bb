#include "faultline/harness/prom_text.hpp"

#include <charconv>
#include <cmath>
#include <optional>
#include <system_error>

namespace faultline::harness {
namespace {

bool name_start(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || c == ':'; }
bool name_char(char c) { return name_start(c) || (c >= '0' && c <= '9'); }
bool label_start(char c) { return name_start(c) && c != ':'; }
bool label_char(char c) { return name_char(c) && c != ':'; }
bool blank(char c) { return c == ' ' || c == '\t'; }

// A reading position in one line; each step returns false (and sets `why`) when the line is bad.
struct Cursor {
  std::string_view s;
  std::size_t i = 0;
  std::string why;

  bool at_end() const { return i >= s.size(); }
  char peek() const { return at_end() ? '\0' : s[i]; }
  void skip_blanks() {
    while (!at_end() && blank(s[i])) ++i;
  }
  bool fail(std::string what) {
    why = std::move(what) + " at column " + std::to_string(i + 1);
    return false;
  }
  bool name(std::string& out, bool label) {
    const std::size_t start = i;
    if (at_end() || !(label ? label_start(s[i]) : name_start(s[i])))
      return fail(label ? "expected a label name" : "expected a metric name");
    while (!at_end() && (label ? label_char(s[i]) : name_char(s[i]))) ++i;
    out.assign(s.substr(start, i - start));
    return true;
  }
  // A quoted label value with the escapes \\, \" and \n.
  bool quoted(std::string& out) {
    if (peek() != '"') return fail("expected '\"'");
    ++i;
    while (!at_end()) {
      const char c = s[i++];
      if (c == '"') return true;
      if (c != '\\') {
        out.push_back(c);
        continue;
      }
      if (at_end()) break;
      const char e = s[i++];
      if (e == '\\' || e == '"') out.push_back(e);
      else if (e == 'n') out.push_back('\n');
      else return fail(std::string("unknown escape \\") + e);
    }
    return fail("unterminated label value");
  }
  bool labels(std::vector<std::pair<std::string, std::string>>& out) {
    ++i;  // '{'
    for (;;) {
      skip_blanks();
      if (peek() == '}') {
        ++i;
        return true;
      }
      std::string label;
      std::string value;
      if (!name(label, true)) return false;
      skip_blanks();
      if (peek() != '=') return fail("expected '='");
      ++i;
      skip_blanks();
      if (!quoted(value)) return false;
      for (const auto& [k, v] : out)
        if (k == label) return fail("label " + label + " repeated");
      out.emplace_back(std::move(label), std::move(value));
      skip_blanks();
      if (peek() == ',') {
        ++i;
      } else if (peek() != '}') {
        return fail("expected ',' or '}'");
      }
    }
  }
  std::string_view token() {
    const std::size_t start = i;
    while (!at_end() && !blank(s[i])) ++i;
    return s.substr(start, i - start);
  }
};

// A float as Go's strconv.ParseFloat reads the format's values: decimal or exponent notation, with
// an optional sign, and Inf/NaN in any case.
std::optional<double> parse_value(std::string_view t) {
  bool negative = false;
  if (!t.empty() && (t[0] == '+' || t[0] == '-')) {
    negative = t[0] == '-';
    t.remove_prefix(1);
  }
  if (t.empty() || t[0] == '+' || t[0] == '-') return std::nullopt;
  double v = 0;
  auto [end, ec] = std::from_chars(t.data(), t.data() + t.size(), v, std::chars_format::general);
  if (ec != std::errc() || end != t.data() + t.size()) return std::nullopt;
  return negative ? -v : v;
}

bool parse_timestamp(std::string_view t) {
  long long ms = 0;
  auto [end, ec] = std::from_chars(t.data(), t.data() + t.size(), ms);
  return ec == std::errc() && end == t.data() + t.size();
}

// One sample line into `out`; false with `why` for a malformed one.
bool parse_line(std::string_view line, MetricSample& out, std::string& why) {
  Cursor c{line, 0, {}};
  c.skip_blanks();
  bool ok = c.name(out.name, false);
  c.skip_blanks();
  if (ok && c.peek() == '{') ok = c.labels(out.labels);
  if (ok) {
    c.skip_blanks();
    const std::string_view value = c.token();
    auto v = parse_value(value);
    if (value.empty()) ok = c.fail("expected a value");
    else if (!v) ok = c.fail("bad value '" + std::string(value.substr(0, 40)) + "'");
    else out.value = *v;
  }
  if (ok) {
    c.skip_blanks();
    const std::string_view timestamp = c.token();
    if (!timestamp.empty() && !parse_timestamp(timestamp)) ok = c.fail("bad timestamp");
    c.skip_blanks();
    if (ok && !c.at_end()) ok = c.fail("unexpected text after the value");
  }
  if (!ok) why = c.why;
  return ok;
}

void escape_into(std::string& out, std::string_view v) {
  for (char ch : v) {
    if (ch == '\\' || ch == '"') {
      out.push_back('\\');
      out.push_back(ch);
    } else if (ch == '\n') {
      out += "\\n";
    } else {
      out.push_back(ch);
    }
  }
}

}  // namespace

PromText parse_prom_text(std::string_view body, const std::set<std::string, std::less<>>& wanted,
                         std::size_t max_samples) {
  PromText out;
  std::size_t line_no = 0;
  while (!body.empty()) {
    const std::size_t nl = body.find('\n');
    std::string_view line = body.substr(0, nl);
    body.remove_prefix(nl == std::string_view::npos ? body.size() : nl + 1);
    ++line_no;
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    std::size_t first = 0;
    while (first < line.size() && blank(line[first])) ++first;
    if (first == line.size() || line[first] == '#') continue;  // empty, HELP, TYPE, other comments
    MetricSample sample;
    std::string why;
    if (!parse_line(line, sample, why)) {
      if (out.malformed++ == 0) out.first_malformed = "line " + std::to_string(line_no) + ": " + why;
      continue;
    }
    ++out.seen;
    if (!wanted.contains(sample.name)) continue;
    if (out.samples.size() >= max_samples) {
      ++out.dropped;
      continue;
    }
    out.samples.push_back(std::move(sample));
  }
  return out;
}

std::string format_sample_value(double v) {
  if (std::isnan(v)) return "NaN";
  if (std::isinf(v)) return v > 0 ? "+Inf" : "-Inf";
  char buf[64];
  auto [end, ec] = std::to_chars(buf, buf + sizeof buf, v);
  return std::string(buf, end);
}

std::string sample_key(const MetricSample& s) {
  std::string out = s.name;
  if (s.labels.empty()) return out;
  out.push_back('{');
  for (std::size_t k = 0; k < s.labels.size(); ++k) {
    if (k > 0) out.push_back(',');
    out += s.labels[k].first;
    out += "=\"";
    escape_into(out, s.labels[k].second);
    out.push_back('"');
  }
  out.push_back('}');
  return out;
}

}  // namespace faultline::harness
