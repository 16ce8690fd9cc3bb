#pragma once
// A strict reader of the Prometheus text exposition format (0.0.4), for tests: it parses what the
// registry renders back into samples, failing on anything a Prometheus server would reject.

#include <charconv>
#include <cmath>
#include <map>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

namespace faultline::admin::test {

struct Sample {
  std::string name;
  std::map<std::string, std::string> labels;
  double value = 0;
};

struct Exposition {
  std::map<std::string, std::string> help;  // metric family -> unescaped help
  std::map<std::string, std::string> type;  // metric family -> counter|gauge|histogram
  std::vector<Sample> samples;

  // The value of the one sample with this name and these labels; throws when absent.
  double value(const std::string& name, const std::map<std::string, std::string>& labels = {}) const {
    for (const auto& s : samples) {
      if (s.name == name && s.labels == labels) return s.value;
    }
    throw std::runtime_error("no sample " + name);
  }
  bool has(const std::string& name, const std::map<std::string, std::string>& labels = {}) const {
    for (const auto& s : samples) {
      if (s.name == name && s.labels == labels) return true;
    }
    return false;
  }
};

inline bool metric_char(char c, bool first) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || c == ':' || (!first && c >= '0' && c <= '9');
}

inline double parse_number(const std::string& text) {
  if (text == "+Inf") return INFINITY;
  if (text == "-Inf") return -INFINITY;
  if (text == "NaN") return NAN;
  double v = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc() || end != text.data() + text.size()) throw std::runtime_error("bad number: " + text);
  return v;
}

// The family a sample belongs to: histogram samples carry _bucket/_sum/_count suffixes.
inline std::string family_of(const std::string& name, const std::map<std::string, std::string>& types) {
  for (const char* suffix : {"_bucket", "_sum", "_count"}) {
    const std::string s = suffix;
    if (name.size() > s.size() && name.compare(name.size() - s.size(), s.size(), s) == 0) {
      const std::string base = name.substr(0, name.size() - s.size());
      auto it = types.find(base);
      if (it != types.end() && it->second == "histogram") return base;
    }
  }
  return name;
}

inline Exposition parse_exposition(const std::string& text) {
  if (!text.empty() && text.back() != '\n') throw std::runtime_error("exposition must end with a newline");
  Exposition out;
  std::istringstream in(text);
  std::string line;
  int lineno = 0;
  auto fail = [&](const std::string& why) {
    throw std::runtime_error("line " + std::to_string(lineno) + ": " + why + ": " + line);
  };
  while (std::getline(in, line)) {
    ++lineno;
    if (line.empty()) fail("empty line");
    if (line.rfind("# HELP ", 0) == 0 || line.rfind("# TYPE ", 0) == 0) {
      const bool is_help = line[2] == 'H';
      const std::string rest = line.substr(7);
      const auto space = rest.find(' ');
      if (space == std::string::npos) fail("no text after the metric name");
      const std::string name = rest.substr(0, space);
      std::string body = rest.substr(space + 1);
      if (is_help) {
        std::string unescaped;
        for (std::size_t i = 0; i < body.size(); ++i) {
          if (body[i] == '\\') {
            if (++i >= body.size()) fail("dangling backslash in HELP");
            if (body[i] == 'n') unescaped += '\n';
            else if (body[i] == '\\') unescaped += '\\';
            else fail("bad escape in HELP");
          } else {
            unescaped += body[i];
          }
        }
        if (out.help.count(name)) fail("second HELP for " + name);
        out.help[name] = unescaped;
      } else {
        if (body != "counter" && body != "gauge" && body != "histogram") fail("unknown TYPE");
        if (out.type.count(name)) fail("second TYPE for " + name);
        out.type[name] = body;
      }
      continue;
    }
    if (line[0] == '#') fail("unexpected comment");
    Sample s;
    std::size_t i = 0;
    while (i < line.size() && metric_char(line[i], i == 0)) ++i;
    if (i == 0) fail("no metric name");
    s.name = line.substr(0, i);
    if (i < line.size() && line[i] == '{') {
      ++i;
      while (true) {
        if (i < line.size() && line[i] == '}') {
          ++i;
          break;
        }
        std::size_t start = i;
        while (i < line.size() && metric_char(line[i], i == start) && line[i] != ':') ++i;
        const std::string label = line.substr(start, i - start);
        if (label.empty() || i + 1 >= line.size() || line[i] != '=' || line[i + 1] != '"') fail("bad label");
        i += 2;
        std::string value;
        while (true) {
          if (i >= line.size()) fail("unterminated label value");
          char c = line[i++];
          if (c == '"') break;
          if (c == '\\') {
            if (i >= line.size()) fail("dangling backslash");
            char e = line[i++];
            if (e == 'n') value += '\n';
            else if (e == '\\') value += '\\';
            else if (e == '"') value += '"';
            else fail("bad escape in label value");
          } else {
            value += c;
          }
        }
        if (!s.labels.emplace(label, value).second) fail("duplicate label " + label);
        if (i < line.size() && line[i] == ',') ++i;
        else if (i < line.size() && line[i] == '}') {
          ++i;
          break;
        } else fail("expected , or } after a label");
      }
    }
    if (i >= line.size() || line[i] != ' ') fail("expected a space before the value");
    s.value = parse_number(line.substr(i + 1));
    const std::string family = family_of(s.name, out.type);
    if (!out.type.count(family) || !out.help.count(family)) fail("sample before its HELP and TYPE");
    out.samples.push_back(std::move(s));
  }
  return out;
}

}  // namespace faultline::admin::test
