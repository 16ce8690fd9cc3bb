#include "faultline/faults/yaml_reader.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <set>

#include "faultline/faults/printable.hpp"

namespace faultline::faults::detail {

void Errors::add(const YAML::Mark& mark, std::string_view path, std::string_view what) {
  if (full()) {
    ++more_;
    return;
  }
  std::string where = source_;
  if (!mark.is_null()) where += ":" + std::to_string(mark.line + 1) + ":" + std::to_string(mark.column + 1);
  std::string entry = where + ": ";
  if (!path.empty()) entry += std::string(path) + ": ";
  // Keys and values are quoted as the file spells them, and a quoted YAML string can hold any
  // character (\n, \e): each error stays one inert line.
  list_.push_back(printable(entry + std::string(what)));
}

std::vector<std::string> Errors::report() const {
  std::vector<std::string> out = list_;
  if (more_ > 0)
    out.push_back(source_ + ": ... and " + std::to_string(more_) + " more error" + (more_ == 1 ? "" : "s") +
                  " (only the first " + std::to_string(max_reported_errors) + " are listed)");
  return out;
}

std::string describe(const YAML::Node& node) {
  switch (node.Type()) {
    case YAML::NodeType::Map:
      return "a mapping";
    case YAML::NodeType::Sequence:
      return "a list";
    case YAML::NodeType::Scalar:
      return "\"" + node.Scalar() + "\"";
    default:
      return "nothing";
  }
}

std::string join(const std::vector<std::string_view>& words) {
  std::string out;
  for (auto word : words) out += (out.empty() ? "" : ", ") + std::string(word);
  return out;
}

std::optional<std::string> scalar_string(const YAML::Node& node, std::string_view path, Errors& errors) {
  if (node.IsScalar()) return node.Scalar();
  errors.add(node.Mark(), path, "expected a string, got " + describe(node));
  return std::nullopt;
}

MapReader::MapReader(YAML::Node node, std::string path, Errors& errors)
    : node_(std::move(node)), path_(std::move(path)), errors_(errors) {
  valid_ = node_.IsMap();
  if (!valid_) errors_.add(node_.Mark(), path_, "expected a mapping, got " + describe(node_));
}

std::string MapReader::path_of(std::string_view key) const {
  return path_.empty() ? std::string(key) : path_ + "." + std::string(key);
}

YAML::Node MapReader::take(std::string_view key) {
  taken_.emplace_back(key);
  if (!valid_) return YAML::Node(YAML::NodeType::Undefined);
  for (auto entry : node_)
    if (entry.first.IsScalar() && entry.first.Scalar() == key) return entry.second;
  return YAML::Node(YAML::NodeType::Undefined);
}

bool MapReader::has(std::string_view key) const {
  if (!valid_) return false;
  for (auto entry : node_)
    if (entry.first.IsScalar() && entry.first.Scalar() == key) return true;
  return false;
}

void MapReader::missing(std::string_view key) { errors_.add(node_.Mark(), path_of(key), "required key is missing"); }

void MapReader::error_at(std::string_view key, std::string_view what) {
  YAML::Node value = take(key);
  errors_.add(value.IsDefined() ? value.Mark() : node_.Mark(), path_of(key), what);
}

std::optional<std::string> MapReader::string(std::string_view key, bool required) {
  YAML::Node value = take(key);
  if (!value.IsDefined()) {
    if (required && valid_) missing(key);
    return std::nullopt;
  }
  return scalar_string(value, path_of(key), errors_);
}

std::optional<std::uint64_t> MapReader::count(std::string_view key, std::uint64_t min, bool required) {
  auto text = string(key, required);
  if (!text) return std::nullopt;
  std::uint64_t value = 0;
  auto [end, ec] = std::from_chars(text->data(), text->data() + text->size(), value);
  if (ec != std::errc() || end != text->data() + text->size()) {
    error_at(key, "expected a whole number, got \"" + *text + "\"");
    return std::nullopt;
  }
  if (value < min) {
    error_at(key, (min == 1 ? std::string("must be greater than 0") : "must be at least " + std::to_string(min)) +
                      ", got " + *text);
    return std::nullopt;
  }
  return value;
}

std::optional<std::uint64_t> MapReader::bounded_count(std::string_view key, std::uint64_t min, std::uint64_t max,
                                                      std::string_view unit, bool required) {
  auto value = count(key, min, required);
  if (value && *value > max) {
    error_at(key, "must be at most " + std::to_string(max) + (unit.empty() ? "" : " ") + std::string(unit) + ", got " +
                      std::to_string(*value));
    return std::nullopt;
  }
  return value;
}

std::optional<Duration> MapReader::bounded_duration(std::string_view key, Duration max, bool required) {
  auto value = duration(key, required);
  if (!value) return std::nullopt;
  if (value->count() <= 0) {
    error_at(key, "must be greater than 0");
    return std::nullopt;
  }
  if (*value > max) {
    error_at(key, "must be at most " + format_duration(max) + ", got " + format_duration(*value));
    return std::nullopt;
  }
  return value;
}

std::optional<double> MapReader::number(std::string_view key, bool required) {
  auto text = string(key, required);
  if (!text) return std::nullopt;
  double value = 0;
  auto [end, ec] = std::from_chars(text->data(), text->data() + text->size(), value);
  if (ec != std::errc() || end != text->data() + text->size() || !std::isfinite(value)) {
    error_at(key, "expected a number, got \"" + *text + "\"");
    return std::nullopt;
  }
  return value;
}

std::optional<Duration> MapReader::duration(std::string_view key, bool required) {
  auto text = string(key, required);
  if (!text) return std::nullopt;
  auto value = parse_duration(*text);
  if (!value) error_at(key, duration_problem(*text));
  return value;
}

std::optional<std::vector<std::string>> MapReader::string_list(std::string_view key) {
  YAML::Node value = take(key);
  if (!value.IsDefined()) return std::nullopt;
  if (!value.IsSequence()) {
    error_at(key, "expected a list, got " + describe(value));
    return std::nullopt;
  }
  std::vector<std::string> out;
  bool ok = true;
  for (std::size_t i = 0; i < value.size(); ++i) {
    auto item = scalar_string(value[i], path_of(key) + "[" + std::to_string(i) + "]", errors_);
    if (item) out.push_back(*item);
    else ok = false;
  }
  if (!ok) return std::nullopt;
  return out;
}

std::optional<std::map<std::string, std::string>> MapReader::string_map(std::string_view key) {
  YAML::Node value = take(key);
  if (!value.IsDefined()) return std::nullopt;
  if (!value.IsMap()) {
    error_at(key, "expected a mapping, got " + describe(value));
    return std::nullopt;
  }
  std::map<std::string, std::string> out;
  bool ok = true;
  for (auto entry : value) {
    std::string name = entry.first.IsScalar() ? entry.first.Scalar() : "?";
    auto item = scalar_string(entry.second, path_of(key) + "." + name, errors_);
    if (item) out[name] = *item;
    else ok = false;
  }
  if (!ok) return std::nullopt;
  return out;
}

std::optional<std::string> MapReader::choice(std::string_view key, const std::vector<std::string_view>& allowed,
                                             bool required) {
  auto text = string(key, required);
  if (!text) return std::nullopt;
  if (std::find(allowed.begin(), allowed.end(), *text) != allowed.end()) return text;
  error_at(key, "must be one of " + join(allowed) + ", got \"" + *text + "\"");
  return std::nullopt;
}

namespace {

std::size_t edit_distance(std::string_view a, std::string_view b) {
  std::vector<std::size_t> row(b.size() + 1);
  for (std::size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    std::size_t diagonal = row[0];
    row[0] = i;
    for (std::size_t j = 1; j <= b.size(); ++j) {
      std::size_t above = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diagonal = above;
    }
  }
  return row[b.size()];
}

// "unknown key, did you mean "faults"? (allowed: ...)" when a known key is a likely typo.
std::string unknown_key_message(std::string_view key, const std::vector<std::string_view>& known) {
  std::string message = "unknown key";
  std::size_t tolerance = key.size() >= 6 ? 2 : 1;  // short keys: only one slip, or "at" suggests "of"
  for (auto candidate : known)
    if (edit_distance(key, candidate) <= tolerance) {
      message += ", did you mean \"" + std::string(candidate) + "\"?";
      break;
    }
  return message + " (allowed: " + join(known) + ")";
}

}  // namespace

void MapReader::finish() {
  if (!valid_) return;
  std::vector<std::string_view> known(taken_.begin(), taken_.end());
  std::sort(known.begin(), known.end());
  known.erase(std::unique(known.begin(), known.end()), known.end());
  std::set<std::string> seen;
  for (auto entry : node_) {
    std::string key = entry.first.IsScalar() ? entry.first.Scalar() : describe(entry.first);
    if (!seen.insert(key).second) {
      errors_.add(entry.first.Mark(), path_of(key), "duplicate key");
    } else if (!std::binary_search(known.begin(), known.end(), key)) {
      // Once the report is full the message is not kept: skip the typo search.
      errors_.add(entry.first.Mark(), path_of(key), errors_.full() ? "" : unknown_key_message(key, known));
    }
  }
}

void check_header(MapReader& root, const std::string& kind) {
  auto api_version = root.string("apiVersion", true);
  if (api_version && *api_version != "faultline/v1")
    root.error_at("apiVersion", "must be \"faultline/v1\", got \"" + *api_version + "\"");
  auto found = root.string("kind", true);
  if (found && *found != kind) root.error_at("kind", "must be \"" + kind + "\", got \"" + *found + "\"");
}

}  // namespace faultline::faults::detail
