#pragma once
// Typed, path-aware reading of scenario YAML. Every problem is collected (not thrown) as
// "file:line:column: key.path: what is wrong", so one load reports all errors at once.

#include <yaml-cpp/yaml.h>

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "faultline/faults/duration.hpp"
#include "faultline/faults/scenario.hpp"

namespace faultline::faults::detail {

// Keeps the first max_reported_errors errors and counts the rest: a file of a million unknown keys
// costs a bounded report, not a million lines.
class Errors {
 public:
  explicit Errors(std::string source) : source_(std::move(source)) {}
  void add(const YAML::Mark& mark, std::string_view path, std::string_view what);
  bool empty() const { return list_.empty(); }
  bool full() const { return list_.size() >= max_reported_errors; }  // further errors are only counted
  // The kept errors, then "<source>: ... and N more errors" when some were only counted.
  std::vector<std::string> report() const;
  const std::string& source() const { return source_; }

 private:
  std::string source_;
  std::vector<std::string> list_;
  std::size_t more_ = 0;
};

// "a mapping", "a list", "\"text\"", "nothing": how a node is named in errors.
std::string describe(const YAML::Node& node);

std::string join(const std::vector<std::string_view>& words);

// Reads one YAML mapping. Each getter marks its key as known; finish() reports the keys nobody
// asked for (unknown keys) and duplicates. Getters return nullopt on absence or error.
class MapReader {
 public:
  MapReader(YAML::Node node, std::string path, Errors& errors);
  MapReader(const MapReader&) = delete;
  MapReader& operator=(const MapReader&) = delete;

  bool valid() const { return valid_; }  // false when the node is not a mapping (already reported)
  const std::string& path() const { return path_; }
  std::string path_of(std::string_view key) const;
  const YAML::Node& node() const { return node_; }
  Errors& errors() { return errors_; }

  YAML::Node take(std::string_view key);  // marks `key` known; an undefined node when absent
  bool has(std::string_view key) const;
  void missing(std::string_view key);  // reports "required key is missing"
  // An error about `key`'s value, at the value's position.
  void error_at(std::string_view key, std::string_view what);

  std::optional<std::string> string(std::string_view key, bool required = false);
  std::optional<std::uint64_t> count(std::string_view key, std::uint64_t min, bool required = false);
  // Also at most `max` ("must be at most <max> <unit>, got <value>").
  std::optional<std::uint64_t> bounded_count(std::string_view key, std::uint64_t min, std::uint64_t max,
                                             std::string_view unit, bool required = false);
  // A duration greater than 0 and at most `max`.
  std::optional<Duration> bounded_duration(std::string_view key, Duration max, bool required = false);
  std::optional<double> number(std::string_view key, bool required = false);
  std::optional<Duration> duration(std::string_view key, bool required = false);
  std::optional<std::vector<std::string>> string_list(std::string_view key);
  std::optional<std::map<std::string, std::string>> string_map(std::string_view key);
  // `key` must be one of `allowed`.
  std::optional<std::string> choice(std::string_view key, const std::vector<std::string_view>& allowed,
                                    bool required = false);

  void finish();

 private:
  YAML::Node node_;
  std::string path_;
  Errors& errors_;
  bool valid_ = false;
  std::vector<std::string> taken_;
};

// Scalar helpers shared by readers of list items.
std::optional<std::string> scalar_string(const YAML::Node& node, std::string_view path, Errors& errors);

// Reads a list of named items (faults, componentFaults): absent or null is an empty list, anything
// but a list is an error; each item goes through parse_item(item_node, "path[i]", errors), which
// returns nullopt when the item is unusable (its errors already reported). A name used twice is
// reported at the second item with the line of the first ("duplicate <name_kind> ..."). When
// item_index is given it receives the list index of each item kept, for later errors about an item.
template <typename T, typename ParseItem>
std::vector<T> parse_named_list(const YAML::Node& node, const std::string& path, Errors& errors,
                                std::string_view name_kind, ParseItem parse_item,
                                std::vector<std::size_t>* item_index = nullptr) {
  if (!node.IsDefined() || node.IsNull()) return {};
  if (!node.IsSequence()) {
    errors.add(node.Mark(), path, "expected a list, got " + describe(node));
    return {};
  }
  std::vector<T> items;
  std::map<std::string, int, std::less<>> first_line;
  for (std::size_t i = 0; i < node.size(); ++i) {
    std::string item_path = path + "[" + std::to_string(i) + "]";
    std::optional<T> item = parse_item(node[i], item_path, errors);
    if (!item) continue;
    const std::string& name = item->name;
    if (!name.empty()) {
      auto [first, inserted] = first_line.emplace(name, node[i].Mark().line + 1);
      if (!inserted)
        errors.add(node[i]["name"].Mark(), item_path + ".name",
                   "duplicate " + std::string(name_kind) + " \"" + name + "\" (first used on line " +
                       std::to_string(first->second) + ")");
    }
    items.push_back(std::move(*item));
    if (item_index) item_index->push_back(i);
  }
  return items;
}

// The header every faultline file starts with: `apiVersion: faultline/v1` and `kind: <kind>`,
// both required; a wrong value is an error naming what was found.
void check_header(MapReader& root, const std::string& kind);

}  // namespace faultline::faults::detail
