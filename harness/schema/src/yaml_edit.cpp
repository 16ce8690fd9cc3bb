#include "faultline/harness/schema/yaml_edit.hpp"

#include <charconv>
#include <optional>
#include <vector>

#include "faultline/faults/yaml_load.hpp"

namespace faultline::harness::schema {
namespace {

namespace detail = faults::detail;

struct Segment {
  std::string key;                   // a mapping key, or
  std::optional<std::size_t> index;  // a list index
};

bool key_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '-';
}

std::vector<Segment> parse_path(std::string_view path) {
  std::vector<Segment> out;
  std::size_t i = 0;
  auto malformed = [&](std::string_view why) {
    return YamlEditError("invalid path \"" + std::string(path) + "\": " + std::string(why) +
                         " (write keys and list indexes: faults[0].when.afterMatches)");
  };
  while (i < path.size()) {
    std::size_t start = i;
    while (i < path.size() && key_char(path[i])) ++i;
    if (i == start) throw malformed("a key is missing at character " + std::to_string(start + 1));
    out.push_back({std::string(path.substr(start, i - start)), std::nullopt});
    while (i < path.size() && path[i] == '[') {
      std::size_t close = path.find(']', i);
      if (close == std::string_view::npos) throw malformed("'[' without ']'");
      std::size_t index = 0;
      auto digits = path.substr(i + 1, close - i - 1);
      auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), index);
      if (digits.empty() || ec != std::errc() || end != digits.data() + digits.size())
        throw malformed("\"[" + std::string(digits) + "]\" is not a list index");
      out.push_back({"", index});
      i = close + 1;
    }
    if (i < path.size()) {
      if (path[i] != '.' || i + 1 == path.size()) throw malformed("unexpected '" + std::string(1, path[i]) + "'");
      ++i;
    }
  }
  if (out.empty()) throw malformed("it is empty");
  return out;
}

std::string shown(const std::vector<Segment>& segments, std::size_t upto) {
  std::string out;
  for (std::size_t i = 0; i < upto; ++i) {
    if (segments[i].index) out += "[" + std::to_string(*segments[i].index) + "]";
    else out += (out.empty() ? "" : ".") + segments[i].key;
  }
  return out.empty() ? "the document" : out;
}

std::optional<YAML::Node> child(const YAML::Node& node, const std::string& key) {
  for (auto entry : node)
    if (entry.first.IsScalar() && entry.first.Scalar() == key) return entry.second;
  return std::nullopt;
}

}  // namespace

std::string_view scalar_source(std::string_view text, std::size_t at, std::string_view scalar) {
  if (at >= text.size()) return {};
  const char first = text[at];
  if (first == '"' || first == '\'') {
    for (std::size_t i = at + 1; i < text.size(); ++i) {
      char c = text[i];
      if (c == '\n' || c == '\r') return {};
      if (first == '"' && c == '\\') {
        ++i;
      } else if (c == first) {
        if (first == '\'' && i + 1 < text.size() && text[i + 1] == '\'') {
          ++i;  // '' inside single quotes
        } else {
          return text.substr(at, i + 1 - at);
        }
      }
    }
    return {};
  }
  if (first == '|' || first == '>' || scalar.empty()) return {};
  if (text.compare(at, scalar.size(), scalar) != 0) return {};
  return text.substr(at, scalar.size());
}

std::string with_value_at(std::string_view yaml, std::string_view path, std::string_view value_text) {
  const std::vector<Segment> segments = parse_path(path);
  const std::string text(yaml);
  detail::Errors errors{"yaml"};
  YAML::Node node = detail::load_yaml(text, errors);
  if (!errors.empty()) throw YamlEditError("the text is not valid YAML: " + errors.report().front());
  for (std::size_t i = 0; i < segments.size(); ++i) {
    const Segment& s = segments[i];
    const bool last = i + 1 == segments.size();
    if (s.index) {
      if (!node.IsSequence())
        throw YamlEditError(shown(segments, i) + " is " + detail::describe(node) + ", not a list");
      if (*s.index >= node.size())
        throw YamlEditError(shown(segments, i + 1) + " does not exist: " + shown(segments, i) + " has " +
                            std::to_string(node.size()) + " item" + (node.size() == 1 ? "" : "s"));
      node = node[*s.index];
      continue;
    }
    if (!node.IsMap()) throw YamlEditError(shown(segments, i) + " is " + detail::describe(node) + ", not a mapping");
    auto next = child(node, s.key);
    if (next) {
      node = *next;
      continue;
    }
    if (!last) throw YamlEditError(shown(segments, i + 1) + " does not exist in the scenario");
    // A new key: the first of this mapping, in its style.
    const std::string entry = s.key + ": " + std::string(value_text);
    if (node.size() == 0) {  // only a flow mapping can be empty: `{}`
      const auto at = static_cast<std::size_t>(node.Mark().pos) + 1;
      return text.substr(0, at) + entry + text.substr(at);
    }
    const YAML::Mark first = node.begin()->first.Mark();
    const auto at = static_cast<std::size_t>(first.pos);
    const std::string inserted = node.Style() == YAML::EmitterStyle::Flow
                                     ? entry + ", "
                                     : entry + "\n" + std::string(static_cast<std::size_t>(first.column), ' ');
    return text.substr(0, at) + inserted + text.substr(at);
  }
  if (!node.IsScalar())
    throw YamlEditError(std::string(path) + " is " + detail::describe(node) + " in the scenario, not a single value");
  const auto at = static_cast<std::size_t>(node.Mark().pos);
  const std::string_view old = scalar_source(text, at, node.Scalar());
  if (old.empty())
    throw YamlEditError(std::string(path) + " is written across lines in the scenario; write it on one line");
  return text.substr(0, at) + std::string(value_text) + text.substr(at + old.size());
}

}  // namespace faultline::harness::schema
